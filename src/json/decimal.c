/*
 * decimal.c - decimal-string counters (see decimal.h). Never accepts a value
 * outside 0..2^63-1 or a non-canonical spelling.
 */
#include "json/decimal.h"

#include <stdio.h>

bool sp_decimal_parse(const char *s, size_t len, uint64_t *out)
{
    if (len == 0 || len > 19)
        return false;
    if (len > 1 && s[0] == '0')
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0'); /* 19 digits cannot overflow u64 */
    }
    if (v > SP_U63_MAX)
        return false;
    *out = v;
    return true;
}

bool sp_decimal_from_json(const json_t *v, uint64_t *out)
{
    return json_is_string(v) && sp_decimal_parse(json_string_value(v), json_string_length(v), out);
}

char *sp_decimal_format(uint64_t v, char *buf)
{
    snprintf(buf, SP_DECIMAL_MAX_LEN + 1, "%llu", (unsigned long long)v);
    return buf;
}

json_t *sp_decimal_json(uint64_t v)
{
    char buf[SP_DECIMAL_MAX_LEN + 1];
    return json_string(sp_decimal_format(v, buf));
}
