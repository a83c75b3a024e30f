/*
 * refs.c - the build-only references of settings.json (authoring.md §1),
 * resolved against the folder and stripped before the package is made:
 *
 *   nodes.<id>.instructions        a text file (an agent's prompt) that
 *                                  becomes the activity's input.query
 *   nodes.<id>.outputSchemas.<o>   a JSON file, inlined
 *   actions.<id>.outputSchema      a JSON file, inlined
 *   actions.<id>.assets            files and folders the artifact carries
 *
 * and the one runner path rule of folders: a component module is relative
 * to the folder (sealed from it; an absolute module could not travel in an
 * artifact).
 *
 * Must never read a path that is absolute, holds "..", or resolves through
 * a symlink outside the folder, nor more than the bounds of authoring.h.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "authoring/files.h"
#include "authoring/folder_build.h"
#include "authoring/grow.h"
#include "authoring/json_locate.h"
#include "authoring/paths.h"
#include "base/utf8.h"
#include "json/json.h"

/* Where a reference stands in settings.json, for its errors. */
typedef struct ref_place {
    const char *path[5];
    size_t npath;
} ref_place;

static int ref_error(folder_build *b, const ref_place *at, const char *code, const char *what,
                     const char *problem)
{
    return fb_settings_error(b, code, at->path, at->npath, false, "%s %s", what, problem);
}

/* A reference's normal path and real path, checked (build.path-*,
 * build.reference-invalid). `what` names it in messages. */
static int resolve(folder_build *b, const ref_place *at, const json_t *value, const char *what,
                   char normal[SP_RELPATH_MAX + 1], char real[PATH_MAX])
{
    if (!json_is_string(value))
        return ref_error(b, at, "build.reference-invalid", what,
                         "must be a path relative to the folder (a string)");
    sp_relpath_verdict v =
        sp_relpath_normalize(json_string_value(value), json_string_length(value), normal);
    const char *code = v == SP_RELPATH_ABSOLUTE ? "build.path-absolute"
                       : v == SP_RELPATH_PARENT ? "build.path-parent"
                                                : "build.reference-invalid";
    char shown[160];
    snprintf(shown, sizeof shown, "%s \"%.100s\"", what, json_string_value(value));
    if (v != SP_RELPATH_OK)
        return ref_error(b, at, code, shown, sp_relpath_problem(v));
    sp_inside inside = sp_folder_resolve(b->root, normal, real);
    if (inside == SP_INSIDE_MISSING)
        return ref_error(b, at, "build.path-missing", shown, "does not exist in the folder");
    if (inside == SP_INSIDE_ESCAPES)
        return ref_error(b, at, "build.path-escapes", shown,
                         "resolves outside the folder (through a symlink)");
    return 0;
}

/* The bytes of a referenced file, at most SP_REFERENCE_BYTES_MAX. */
static char *read_reference(folder_build *b, const ref_place *at, const char *shown,
                            const char *real, size_t *len)
{
    sp_file_status status;
    char *bytes = sp_file_read(real, SP_REFERENCE_BYTES_MAX, len, &status);
    if (!bytes)
        ref_error(b, at, status == SP_FILE_TOO_LARGE ? "build.too-large" : "build.path-missing",
                  shown,
                  status == SP_FILE_TOO_LARGE ? "is larger than 1 MiB"
                  : status == SP_FILE_NOT_REGULAR ? "is not a regular file"
                                                  : "cannot be read");
    return bytes;
}

/* ---- instructions ---- */

/* nodes.<id>.instructions -> input.query (one trailing newline dropped). */
static int instructions(folder_build *b, const char *id, json_t *node)
{
    json_t *value = json_object_get(node, "instructions");
    ref_place at = {{"nodes", id, "instructions"}, 3};
    char normal[SP_RELPATH_MAX + 1], real[PATH_MAX];
    if (!value)
        return 0;
    if (strcmp(json_string_value(json_object_get(node, "kind")), "activity") != 0)
        return ref_error(b, &at, "build.reference-invalid", "instructions",
                         "stand only on activity nodes (they become the step's input.query)");
    if (resolve(b, &at, value, "instructions", normal, real))
        return -1;
    json_t *input = json_object_get(node, "input");
    if (input && (!json_is_object(input) || json_object_get(input, "query")))
        return ref_error(b, &at, "build.instructions-conflict", "instructions",
                         "become input.query, but the node's input is not an object without "
                         "query");
    size_t len;
    char *text = read_reference(b, &at, "instructions", real, &len);
    if (!text)
        return -1;
    if (!sp_utf8_valid(text, len) || memchr(text, '\0', len)) {
        free(text);
        return ref_error(b, &at, "build.reference-invalid", "instructions", "are not UTF-8 text");
    }
    if (len && text[len - 1] == '\n')
        len -= len > 1 && text[len - 2] == '\r' ? 2 : 1;
    json_t *query = json_stringn(text, len);
    free(text);
    if (!input && json_object_set_new(node, "input", json_object())) {
        json_decref(query);
        return sp_oom(b->err);
    }
    input = json_object_get(node, "input");
    /* set_new takes the query, also when it fails */
    if (!query || json_object_set_new(input, "query", query) ||
        json_object_del(node, "instructions"))
        return sp_oom(b->err);
    return 0;
}

/* ---- schema files ---- */

/* A JSON file's value, its syntax errors placed in that file. */
static json_t *schema_file(folder_build *b, const ref_place *at, const json_t *value)
{
    char normal[SP_RELPATH_MAX + 1], real[PATH_MAX], shown[PATH_MAX + 40];
    if (resolve(b, at, value, "the schema file", normal, real))
        return NULL;
    size_t len;
    char *text = read_reference(b, at, "the schema file", real, &len);
    if (!text)
        return NULL;
    json_t *schema = sp_json_parse(text, len, b->err);
    if (!schema) {
        snprintf(shown, sizeof shown, "%s/%s", b->dir, normal);
        char code[SP_CODE_MAX], message[SP_MESSAGE_MAX];
        snprintf(code, sizeof code, "%s",
                 strcmp(b->err->code, "canonical.syntax") == 0 ? "json.invalid" : b->err->code);
        snprintf(message, sizeof message, "%s", b->err->message);
        sp_fail_at(b->err, code, shown, sp_json_error_pos(text, len, message), "%s", message);
    }
    free(text);
    return schema;
}

/* parent[key], when a string, replaced by the JSON file it names (`at`:
 * the place of `parent`). */
static int inline_member(folder_build *b, ref_place *at, json_t *parent, const char *key)
{
    json_t *value = json_object_get(parent, key);
    if (!json_is_string(value))
        return 0;
    at->path[at->npath++] = key;
    json_t *schema = schema_file(b, at, value);
    at->npath--;
    if (!schema)
        return -1;
    return json_object_set_new(parent, key, schema) ? sp_oom(b->err) : 0;
}

/* Every string member of outputSchemas replaced by its file. */
static int inline_schemas(folder_build *b, ref_place *at, json_t *holder)
{
    bool oom = false;
    size_t n = json_is_object(holder) ? json_object_size(holder) : 0;
    sp_json_member *m = n ? sp_json_sorted_members(holder, &oom) : NULL;
    int rc = oom ? sp_oom(b->err) : 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = inline_member(b, at, holder, m[i].key);
    free(m);
    return rc;
}

/* ---- assets ---- */

static int add_asset(folder_build *b, const ref_place *at, const char *path, const char *real,
                     uint64_t size)
{
    if (b->nassets == SP_ASSETS_MAX || size > SP_ASSET_BYTES_MAX ||
        b->asset_bytes + size > SP_ASSETS_TOTAL_MAX)
        return ref_error(b, at, "build.too-large", "the assets",
                         "pass the bounds (4000 files, 64 MiB a file, 128 MiB in all)");
    sp_folder_asset *grown = sp_grow(b->assets, &b->asset_cap, b->nassets, sizeof *grown);
    if (!grown)
        return sp_oom(b->err);
    b->assets = grown;
    sp_folder_asset *a = &b->assets[b->nassets];
    *a = (sp_folder_asset){strdup(path), strdup(real), size};
    if (!a->path || !a->real) {
        free(a->path);
        free(a->real);
        return sp_oom(b->err);
    }
    b->nassets++;
    b->asset_bytes += size;
    return 0;
}

static int by_name(const struct dirent **x, const struct dirent **y)
{
    return strcmp((*x)->d_name, (*y)->d_name);
}

static int asset_tree(folder_build *b, const ref_place *at, const char *path, const char *real,
                      int depth);

/* One entry of an asset folder: `path` (folder-relative) is at `real`. */
static int asset_entry(folder_build *b, const ref_place *at, const char *path, const char *joined,
                       int depth)
{
    char real[PATH_MAX];
    struct stat st;
    if (!realpath(joined, real) || stat(real, &st))
        return ref_error(b, at, "build.path-missing", path, "cannot be resolved");
    if (!sp_path_below(b->root, real))
        return ref_error(b, at, "build.path-escapes", path,
                         "resolves outside the folder (through a symlink)");
    if (S_ISDIR(st.st_mode))
        return asset_tree(b, at, path, real, depth + 1);
    if (!S_ISREG(st.st_mode))
        return ref_error(b, at, "build.reference-invalid", path,
                         "is neither a regular file nor a folder");
    return add_asset(b, at, path, real, (uint64_t)st.st_size);
}

/* Every regular file below the asset folder `path`, in byte order of names. */
static int asset_tree(folder_build *b, const ref_place *at, const char *path, const char *real,
                      int depth)
{
    if (depth > SP_ASSET_DEPTH_MAX)
        return ref_error(b, at, "build.too-large", path, "is nested too deeply");
    struct dirent **list = NULL;
    int n = scandir(real, &list, NULL, by_name);
    if (n < 0)
        return ref_error(b, at, "build.path-missing", path, "cannot be listed");
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        char sub[SP_RELPATH_MAX * 2], joined[PATH_MAX * 2];
        bool skip = strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
        if (rc == 0 && !skip) {
            snprintf(sub, sizeof sub, "%s/%s", path, name);
            snprintf(joined, sizeof joined, "%s/%s", real, name);
            rc = strlen(sub) > SP_RELPATH_MAX
                     ? ref_error(b, at, "build.too-large", path, "holds a path that is too long")
                     : asset_entry(b, at, sub, joined, depth);
        }
        free(list[i]);
    }
    free(list);
    return rc;
}

/* actions.<id>.assets: an array of relative paths, stripped. */
static int assets(folder_build *b, const char *id, json_t *action)
{
    json_t *list = json_object_get(action, "assets");
    ref_place at = {{"actions", id, "assets"}, 3};
    if (!list)
        return 0;
    if (!json_is_array(list))
        return ref_error(b, &at, "build.reference-invalid", "assets",
                         "must be an array of paths relative to the folder");
    for (size_t i = 0; i < json_array_size(list); i++) {
        char index[24], normal[SP_RELPATH_MAX + 1], real[PATH_MAX];
        snprintf(index, sizeof index, "%zu", i);
        ref_place item = {{"actions", id, "assets", index}, 4};
        if (resolve(b, &item, json_array_get(list, i), "the asset", normal, real) ||
            asset_entry(b, &item, normal, real, 0))
            return -1;
    }
    return json_object_del(action, "assets") ? sp_oom(b->err) : 0;
}

/* ---- component modules ---- */

/* A module path of a component runner (the action, or a command action's
 * component-form hook) must be relative: it is sealed from the folder. */
static int module_relative(folder_build *b, const ref_place *at, const json_t *runner)
{
    const char *module = json_string_value(json_object_get(runner, "module"));
    if (!module || module[0] != '/')
        return 0;
    return ref_error(b, at, "build.path-absolute", "the runner module",
                     "is absolute: a workflow folder seals its runners from inside itself");
}

static int modules(folder_build *b, const char *id, const json_t *action)
{
    static const char *const hooks[] = {"probe", "watch", "stop"};
    ref_place at = {{"actions", id, "module"}, 3};
    const char *kind = json_string_value(json_object_get(action, "kind"));
    if (kind && strcmp(kind, "component") == 0 && module_relative(b, &at, action))
        return -1;
    const json_t *async = json_object_get(action, "async");
    for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
        ref_place hook = {{"actions", id, "async", hooks[i], "component"}, 5};
        const json_t *runner = json_object_get(json_object_get(async, hooks[i]), "component");
        if (json_is_object(runner) && module_relative(b, &hook, runner))
            return -1;
    }
    return 0;
}

/* ---- the whole settings ---- */

static int node_references(folder_build *b)
{
    bool oom = false;
    size_t n = json_object_size(b->nodes);
    sp_json_member *m = sp_json_sorted_members(b->nodes, &oom);
    int rc = oom ? sp_oom(b->err) : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        ref_place at = {{"nodes", m[i].key, "outputSchemas"}, 3};
        rc = instructions(b, m[i].key, m[i].value);
        if (rc == 0)
            rc = inline_schemas(b, &at, json_object_get(m[i].value, "outputSchemas"));
    }
    free(m);
    return rc;
}

static int action_references(folder_build *b)
{
    bool oom = false;
    size_t n = json_is_object(b->actions) ? json_object_size(b->actions) : 0;
    sp_json_member *m = n ? sp_json_sorted_members(b->actions, &oom) : NULL;
    int rc = oom ? sp_oom(b->err) : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        json_t *action = m[i].value;
        if (!json_is_object(action))
            continue; /* the kernel says what an action must be */
        ref_place at = {{"actions", m[i].key}, 2};
        rc = inline_member(b, &at, action, "outputSchema");
        if (rc == 0)
            rc = assets(b, m[i].key, action);
        if (rc == 0)
            rc = modules(b, m[i].key, action);
    }
    free(m);
    return rc;
}

int fb_references(folder_build *b)
{
    if (node_references(b))
        return -1;
    return action_references(b);
}
