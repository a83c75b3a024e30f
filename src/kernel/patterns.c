/*
 * patterns.c - the ASCII identifier patterns of kernel.md §1, matched byte by
 * byte. Must never treat a non-ASCII byte as a letter.
 */
#include "kernel/workflow.h"

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

static bool all_match(const char *s, size_t len, size_t max, const char *extra, bool lower)
{
    if (len < 1 || len > max)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool ok = lower ? is_lower_alnum(c) : is_alnum(c);
        for (const char *e = extra; !ok && *e; e++)
            ok = c == *e;
        if (!ok)
            return false;
    }
    return true;
}

bool sp_is_name(const char *s, size_t len) { return all_match(s, len, 128, "_.-", false); }

bool sp_is_node_id(const char *s, size_t len) { return all_match(s, len, 64, "_-", false); }

bool sp_is_signal_name(const char *s, size_t len) { return all_match(s, len, 64, "_.-", false); }

bool sp_is_outcome(const char *s, size_t len)
{
    return len >= 1 && is_lower_alnum(s[0]) && all_match(s, len, 64, "-", true);
}

bool sp_is_error_code(const char *s, size_t len)
{
    return len >= 1 && is_lower_alnum(s[0]) && all_match(s, len, 64, ".-", true);
}
