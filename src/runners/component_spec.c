/*
 * component_spec.c - parsing the runner part of component actions and
 * hooks, and the path normalization of grants (see component_spec.h).
 * Never accepts an unknown member, a glob, an empty entry or a socket that
 * is not absolute.
 */
#include "runners/component_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/decimal.h"

const char *sp_grant_kind_name(sp_grant_kind k)
{
    static const char *const names[] = {"programs", "sockets", "folders"};
    return k < SP_GRANT_KINDS ? names[k] : "?";
}

sp_path_status sp_path_normalize(const char *in, size_t len, char *out, size_t n)
{
    if (len == 0)
        return SP_PATH_EMPTY;
    if (len >= SP_PATH_MAX || n < 2)
        return SP_PATH_TOO_LONG;
    if (memchr(in, '\0', len))
        return SP_PATH_NUL;
    for (size_t i = 0; i < len; i++)
        if (in[i] == '*' || in[i] == '?' || in[i] == '[')
            return SP_PATH_GLOB;
    bool absolute = in[0] == '/';
    size_t o = absolute ? 1 : 0; /* out[0..o) is the result so far */
    size_t base = o;
    if (absolute)
        out[0] = '/';
    for (size_t i = 0; i < len;) {
        while (i < len && in[i] == '/')
            i++;
        size_t start = i;
        while (i < len && in[i] != '/')
            i++;
        size_t seg = i - start;
        if (seg == 0 || (seg == 1 && in[start] == '.'))
            continue;
        if (seg == 2 && in[start] == '.' && in[start + 1] == '.') {
            if (o == base)
                return SP_PATH_ESCAPES;
            while (o > base && out[o - 1] != '/')
                o--;
            if (o > base)
                o--; /* the separator before the removed segment */
            continue;
        }
        if (o + (o > base ? 1 : 0) + seg + 1 > n)
            return SP_PATH_TOO_LONG;
        if (o > base)
            out[o++] = '/';
        memcpy(out + o, in + start, seg);
        o += seg;
    }
    if (o == 0)
        out[o++] = '.';
    out[o] = '\0';
    return SP_PATH_OK;
}

bool sp_path_within(const char *dir, const char *path, const char **rest)
{
    bool dabs = dir[0] == '/', pabs = path[0] == '/';
    if (dabs != pabs)
        return false;
    if (strcmp(dir, ".") == 0) {
        *rest = path;
        return true;
    }
    if (strcmp(dir, "/") == 0) {
        *rest = path[1] ? path + 1 : ".";
        return true;
    }
    size_t n = strlen(dir);
    if (strncmp(dir, path, n) != 0)
        return false;
    if (path[n] == '\0') {
        *rest = ".";
        return true;
    }
    if (path[n] != '/')
        return false;
    *rest = path + n + 1;
    return true;
}

static bool known(const char *key, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(*names, key) == 0)
            return true;
    return false;
}

static int unsupported(sp_error *err, const char *where, const char *grant, const char *value,
                       const char *why)
{
    return sp_fail_details(err, "component.grant-unsupported",
                           json_pack("{s:s,s:s}", "grant", grant, "value", value),
                           "%s: grants.%s entry \"%.200s\" cannot be offered: %s", where, grant,
                           value, why);
}

static int parse_grant_list(const char *where, const json_t *list, sp_grant_kind kind,
                            sp_component_spec *out, sp_error *err)
{
    const char *name = sp_grant_kind_name(kind);
    if (!json_is_array(list))
        return unsupported(err, where, name, "", "grants.<kind> is an array of strings");
    size_t n = json_array_size(list);
    if (n > SP_GRANTS_MAX)
        return unsupported(err, where, name, "", "too many entries");
    out->grants[kind] = calloc(n + 1, sizeof(char *));
    if (!out->grants[kind])
        return sp_oom(err);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(list, i);
        if (!json_is_string(v))
            return unsupported(err, where, name, "", "entries are strings");
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        char norm[SP_PATH_MAX];
        switch (sp_path_normalize(s, len, norm, sizeof norm)) {
        case SP_PATH_OK: break;
        case SP_PATH_EMPTY: return unsupported(err, where, name, s, "an empty string");
        case SP_PATH_NUL: return unsupported(err, where, name, s, "a NUL byte");
        case SP_PATH_GLOB: return unsupported(err, where, name, s, "globs are not supported");
        case SP_PATH_TOO_LONG: return unsupported(err, where, name, s, "too long");
        case SP_PATH_ESCAPES:
            if (s[0] == '/')
                return unsupported(err, where, name, s, "\"..\" climbs above /");
            return sp_fail_details(err, "component.grant-escapes",
                                   json_pack("{s:s,s:s}", "grant", name, "value", s),
                                   "%s: grants.%s entry \"%.200s\" leaves the workflow folder",
                                   where, name, s);
        }
        if (kind == SP_GRANT_SOCKETS && norm[0] != '/')
            return unsupported(err, where, name, s, "sockets are absolute paths of Unix sockets");
        if (kind == SP_GRANT_FOLDERS && strcmp(norm, "/") == 0)
            return unsupported(err, where, name, s, "the whole file system cannot be granted");
        if (kind == SP_GRANT_PROGRAMS && strcmp(norm, ".") == 0)
            return unsupported(err, where, name, s, "a program is a file, not the folder");
        for (size_t k = 0; k < out->ngrants[kind]; k++)
            if (strcmp(out->grants[kind][k], norm) == 0)
                return unsupported(err, where, name, s, "entries must be unique");
        if (!(out->grants[kind][out->ngrants[kind]] = strdup(norm)))
            return sp_oom(err);
        out->ngrants[kind]++;
    }
    return 0;
}

static int parse_grants(const char *where, const json_t *grants, sp_component_spec *out,
                        sp_error *err)
{
    if (!grants)
        return 0;
    if (!json_is_object(grants))
        return unsupported(err, where, "grants", "", "grants is an object");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)grants, key, v)
    {
        sp_grant_kind kind = SP_GRANT_KINDS;
        for (int k = 0; k < SP_GRANT_KINDS; k++)
            if (strcmp(key, sp_grant_kind_name((sp_grant_kind)k)) == 0)
                kind = (sp_grant_kind)k;
        if (kind == SP_GRANT_KINDS)
            return unsupported(err, where, key, "",
                               "grants has only the members programs, sockets and folders");
        if (parse_grant_list(where, v, kind, out, err))
            return -1;
    }
    return 0;
}

static int parse_sealed(const char *where, const json_t *sealed, sp_error *err)
{
    if (!sealed)
        return 0;
    if (!json_is_object(sealed))
        return sp_fail(err, "action.invalid", "%s: sealed is an object", where);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)sealed, key, v)
    {
        const char *d = json_string_value(v);
        if (!d || strlen(d) != 71 || strncmp(d, "sha256:", 7) != 0)
            return sp_fail(err, "action.invalid", "%s: sealed values are sha256:<hex> digests",
                           where);
    }
    return 0;
}

int sp_component_spec_parse(const char *where, const json_t *obj, bool hook,
                            sp_component_spec *out, sp_error *err)
{
    static const char *const action_members[] = {"kind",    "module",   "grants", "config",
                                                 "callTimeoutMs", "async", "effect",
                                                 "outcomes", "retry",  "description",
                                                 "sealed",  NULL};
    static const char *const hook_members[] = {"module", "grants", "config", "callTimeoutMs",
                                               "sealed", NULL};
    memset(out, 0, sizeof *out);
    out->call_timeout_ms = SP_COMPONENT_CALL_TIMEOUT_DEFAULT_MS;
    if (!json_is_object(obj))
        return sp_fail(err, "action.invalid", "%s: a component is an object", where);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (!known(key, hook ? hook_members : action_members))
            return sp_fail(err, "action.invalid", "%s: unknown member \"%s\" for a component",
                           where, key);
    }
    const json_t *module = json_object_get(obj, "module");
    char norm[SP_PATH_MAX];
    if (!json_is_string(module) ||
        sp_path_normalize(json_string_value(module), json_string_length(module), norm,
                          sizeof norm) != SP_PATH_OK ||
        strcmp(norm, ".") == 0)
        return sp_fail(err, "action.invalid",
                       "%s: \"module\" is the path of the runner's .wasm file, inside the "
                       "workflow folder or absolute", where);
    if (!(out->module = strdup(norm)))
        return sp_oom(err);
    const json_t *timeout = json_object_get(obj, "callTimeoutMs");
    if (timeout && (!sp_decimal_from_json(timeout, &out->call_timeout_ms) ||
                    out->call_timeout_ms == 0 || out->call_timeout_ms > UINT32_MAX)) {
        sp_component_spec_free(out);
        return sp_fail(err, "action.invalid",
                       "%s: callTimeoutMs must be a positive decimal string of milliseconds",
                       where);
    }
    out->config = json_object_get(obj, "config");
    out->sealed = json_object_get(obj, "sealed");
    if (parse_grants(where, json_object_get(obj, "grants"), out, err) ||
        parse_sealed(where, out->sealed, err)) {
        sp_component_spec_free(out);
        return -1;
    }
    return 0;
}

void sp_component_spec_free(sp_component_spec *spec)
{
    free(spec->module);
    for (int k = 0; k < SP_GRANT_KINDS; k++) {
        for (size_t i = 0; i < spec->ngrants[k]; i++)
            free(spec->grants[k][i]);
        free(spec->grants[k]);
    }
    memset(spec, 0, sizeof *spec);
}

const char *sp_component_granted(const sp_component_spec *spec, sp_grant_kind kind,
                                 const char *name, size_t len)
{
    char norm[SP_PATH_MAX];
    if (sp_path_normalize(name, len, norm, sizeof norm) != SP_PATH_OK)
        return NULL;
    for (size_t i = 0; i < spec->ngrants[kind]; i++)
        if (strcmp(spec->grants[kind][i], norm) == 0)
            return spec->grants[kind][i];
    return NULL;
}

const char *sp_component_folder_of(const sp_component_spec *spec, const char *name, size_t len,
                                   char *norm, size_t n, const char **rest)
{
    if (sp_path_normalize(name, len, norm, n) != SP_PATH_OK)
        return NULL;
    const char *best = NULL;
    for (size_t i = 0; i < spec->ngrants[SP_GRANT_FOLDERS]; i++) {
        const char *dir = spec->grants[SP_GRANT_FOLDERS][i];
        const char *r;
        if (sp_path_within(dir, norm, &r) && (!best || strlen(dir) > strlen(best))) {
            best = dir;
            *rest = r;
        }
    }
    return best;
}
