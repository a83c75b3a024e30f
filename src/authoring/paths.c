/*
 * paths.c - relative paths of folders and artifacts (see paths.h). Never
 * accepts "..", an absolute path or a path that resolves outside its folder.
 */
#define _GNU_SOURCE
#include "authoring/paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

static bool bad_byte(unsigned char c) { return c < 0x20 || c == 0x7f || c == '\\'; }

sp_relpath_verdict sp_relpath_normalize(const char *in, size_t len, char *out)
{
    if (len == 0)
        return SP_RELPATH_EMPTY;
    if (len > SP_RELPATH_MAX)
        return SP_RELPATH_TOO_LONG;
    if (in[0] == '/')
        return SP_RELPATH_ABSOLUTE;
    if (!sp_utf8_valid(in, len))
        return SP_RELPATH_BAD_BYTE;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && in[end] != '/')
            end++;
        size_t n = end - i;
        for (size_t k = i; k < end; k++)
            if (bad_byte((unsigned char)in[k]))
                return SP_RELPATH_BAD_BYTE;
        if (n == 2 && in[i] == '.' && in[i + 1] == '.')
            return SP_RELPATH_PARENT;
        if (n > 0 && !(n == 1 && in[i] == '.')) {
            if (o)
                out[o++] = '/';
            memcpy(out + o, in + i, n);
            o += n;
        }
        i = end + 1;
    }
    out[o] = '\0';
    return o ? SP_RELPATH_OK : SP_RELPATH_EMPTY;
}

const char *sp_relpath_problem(sp_relpath_verdict v)
{
    switch (v) {
    case SP_RELPATH_OK:
        return "is fine";
    case SP_RELPATH_EMPTY:
        return "is empty";
    case SP_RELPATH_ABSOLUTE:
        return "is absolute (references are relative to the folder)";
    case SP_RELPATH_PARENT:
        return "contains \"..\" (references stay inside the folder)";
    case SP_RELPATH_BAD_BYTE:
        return "holds a control byte, a backslash or bytes that are not UTF-8";
    case SP_RELPATH_TOO_LONG:
        return "is too long";
    }
    return "is not a path";
}

bool sp_relpath_is_normal(const char *name, size_t len)
{
    char normal[SP_RELPATH_MAX + 1];
    return sp_relpath_normalize(name, len, normal) == SP_RELPATH_OK && strlen(normal) == len &&
           memcmp(normal, name, len) == 0;
}

bool sp_path_below(const char *root, const char *path)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return true;
    return strncmp(root, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

sp_inside sp_folder_resolve(const char *root, const char *rel, char real[PATH_MAX])
{
    char joined[PATH_MAX * 2];
    snprintf(joined, sizeof joined, "%s/%s", root, rel);
    if (!realpath(joined, real))
        return SP_INSIDE_MISSING;
    return sp_path_below(root, real) ? SP_INSIDE_OK : SP_INSIDE_ESCAPES;
}
