/*
 * folder.c - a workflow folder built into a package document (see
 * authoring.h, authoring.md §1): read workflow.dot and settings.json, then
 * in this order, the first problem winning: the topology (topology.c), the
 * settings merge (settings.c), the build-only references (refs.c), every
 * declared outcome routed; then the package is assembled.
 *
 * Must never produce a package that depends on anything but the folder's
 * bytes (the same folder always gives the same document), and never read
 * a file but through the bounded readers of files.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "authoring/files.h"
#include "authoring/folder_build.h"
#include "authoring/json_locate.h"
#include "json/json.h"

int fb_dot_error(folder_build *b, const char *code, sp_text_pos pos, const char *fmt, ...)
{
    char what[SP_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sp_fail_at(b->err, code, b->dot_file, pos, "%s", what);
}

int fb_settings_error(folder_build *b, const char *code, const char *const *path, size_t npath,
                      bool at_key, const char *fmt, ...)
{
    char what[SP_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    sp_json_place place = {{0, 0}, {0, 0}};
    if (b->settings_text)
        sp_json_locate(b->settings_text, b->settings_len, path, npath, &place);
    return sp_fail_at(b->err, code, b->settings_file, at_key ? place.key : place.value, "%s", what);
}

bool sp_folder_named(const char *path)
{
    struct stat st;
    if (stat(path, &st))
        return false;
    if (S_ISDIR(st.st_mode))
        return true;
    const char *slash = strrchr(path, '/');
    return S_ISREG(st.st_mode) && strcmp(slash ? slash + 1 : path, SP_FOLDER_DOT) == 0;
}

/* The folder `path` names: itself (trailing slashes dropped), or the
 * directory of its workflow.dot. */
static char *folder_of(const char *path)
{
    struct stat st;
    size_t n = strlen(path);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        while (n > 1 && path[n - 1] == '/')
            n--;
        return strndup(path, n);
    }
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    return slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
}

static int read_graph(folder_build *b)
{
    size_t len;
    char *bytes = sp_file_read_or_fail(b->dot_file, SP_DOT_BYTES_MAX, &len, b->err);
    if (!bytes)
        return -1;
    int rc = sp_dot_read(bytes, len, b->dot_file, &b->graph, b->err);
    free(bytes);
    return rc;
}

/* settings.json, or {} when the folder has none. */
static int read_settings(folder_build *b)
{
    struct stat st;
    if (stat(b->settings_file, &st) && errno == ENOENT)
        return (b->settings = json_object()) ? 0 : sp_oom(b->err);
    b->settings_text = sp_file_read_or_fail(b->settings_file, SP_SETTINGS_BYTES_MAX,
                                            &b->settings_len, b->err);
    if (!b->settings_text)
        return -1;
    if ((b->settings = sp_json_parse(b->settings_text, b->settings_len, b->err)))
        return 0;
    char code[SP_CODE_MAX], message[SP_MESSAGE_MAX];
    snprintf(code, sizeof code, "%s",
             strcmp(b->err->code, "canonical.syntax") == 0 ? "json.invalid" : b->err->code);
    snprintf(message, sizeof message, "%s", b->err->message);
    return sp_fail_at(b->err, code, b->settings_file,
                      sp_json_error_pos(b->settings_text, b->settings_len, message), "%s", message);
}

/* Every outcome an activity's action declares (default ["ok"]) has an
 * edge. An action the kernel would refuse anyway is left to it. */
static int outcomes_routed(folder_build *b)
{
    static const char *const default_outcomes[] = {"ok"};
    for (size_t i = 0; i < b->graph.nnodes; i++) {
        const sp_dot_node *n = &b->graph.nodes[i];
        const json_t *node = json_object_get(b->nodes, n->id);
        const char *action_id = json_string_value(json_object_get(node, "action"));
        const json_t *action = action_id ? json_object_get(b->actions, action_id) : NULL;
        const json_t *declared = json_object_get(action, "outcomes");
        if (strcmp(json_string_value(json_object_get(node, "kind")), "activity") != 0 ||
            !json_is_object(action) || (declared && !json_is_array(declared)))
            continue;
        size_t count = declared ? json_array_size(declared) : 1;
        for (size_t k = 0; k < count; k++) {
            const char *outcome = declared ? json_string_value(json_array_get(declared, k))
                                           : default_outcomes[0];
            if (outcome && !json_object_get(json_object_get(node, "outcomes"), outcome))
                return fb_dot_error(b, "build.outcome-unrouted", n->pos,
                                    "node %.80s runs action %.80s, which declares the outcome "
                                    "%.80s, but no edge from %.80s has on=%.80s",
                                    n->id, action_id, outcome, n->id, outcome);
        }
    }
    return 0;
}

static json_t *assemble(folder_build *b)
{
    json_t *package = json_pack("{s:s,s:s,s:s,s:O}", "format", b->graph.format.text, "name",
                                b->graph.name, "start", b->graph.start.text, "nodes", b->nodes);
    json_t *limits = json_object_get(b->settings, "limits");
    bool ok = package && !(limits && json_object_set(package, "limits", limits)) &&
              !(b->actions && json_object_set(package, "actions", b->actions));
    if (ok)
        return package;
    json_decref(package);
    sp_oom(b->err);
    return NULL;
}

static int asset_cmp(const void *x, const void *y)
{
    return strcmp(((const sp_folder_asset *)x)->path, ((const sp_folder_asset *)y)->path);
}

/* The assets in byte order of paths, each path once. */
static void hand_over_assets(folder_build *b, sp_folder *out)
{
    if (b->nassets)
        qsort(b->assets, b->nassets, sizeof *b->assets, asset_cmp);
    size_t kept = 0;
    for (size_t i = 0; i < b->nassets; i++) {
        if (kept && strcmp(b->assets[kept - 1].path, b->assets[i].path) == 0) {
            free(b->assets[i].path);
            free(b->assets[i].real);
            continue;
        }
        b->assets[kept++] = b->assets[i];
    }
    out->assets = b->assets;
    out->nassets = kept;
    b->assets = NULL;
    b->nassets = 0;
}

static void build_free(folder_build *b)
{
    sp_dot_graph_free(&b->graph);
    free(b->settings_text);
    json_decref(b->settings);
    json_decref(b->nodes);
    json_decref(b->actions);
    sp_folder_free(&(sp_folder){.assets = b->assets, .nassets = b->nassets});
}

static int build(folder_build *b)
{
    if (!realpath(b->dir, b->root))
        return sp_fail(b->err, "file.unreadable", "cannot open the workflow folder %s: %s", b->dir,
                       strerror(errno));
    snprintf(b->dot_file, sizeof b->dot_file, "%s/%s", b->dir, SP_FOLDER_DOT);
    snprintf(b->settings_file, sizeof b->settings_file, "%s/%s", b->dir, SP_FOLDER_SETTINGS);
    if (read_graph(b) || read_settings(b) || fb_topology(b) || fb_settings(b) ||
        fb_references(b))
        return -1;
    return outcomes_routed(b);
}

int sp_folder_read(const char *path, sp_folder *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    folder_build b = {.err = err};
    char *dir = folder_of(path);
    if (!dir)
        return sp_oom(err);
    b.dir = dir;
    int rc = build(&b);
    json_t *package = rc ? NULL : assemble(&b);
    if (package) {
        out->dir = dir;
        out->package = package;
        hand_over_assets(&b, out);
    } else {
        free(dir);
        rc = -1;
    }
    build_free(&b);
    return rc;
}

void sp_folder_free(sp_folder *f)
{
    free(f->dir);
    json_decref(f->package);
    for (size_t i = 0; i < f->nassets; i++) {
        free(f->assets[i].path);
        free(f->assets[i].real);
    }
    free(f->assets);
    memset(f, 0, sizeof *f);
}
