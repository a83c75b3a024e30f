/*
 * component_seal.c - sealing runner modules and relative grants into the
 * package (see component_seal.h). Never reads a relative grant outside the
 * workflow folder, and never more than the bounds allow.
 */
#define _GNU_SOURCE
#include "runners/component_seal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runners/component.h"
#include "runners/component_spec.h"
#include "sandbox/pin.h"
#include "wasm/protocol.h"
#include "wasm/world.h"

void sp_seal_set_free(sp_seal_set *s)
{
    for (size_t i = 0; s && i < s->n; i++)
        free(s->items[i].bytes);
    if (s)
        free(s->items);
    if (s)
        memset(s, 0, sizeof *s);
}

typedef struct sealer {
    const char *where;
    sp_seal_ctx *sc; /* the package being built: root, blobs, bounds */
    json_t *sealed;
    sp_error *err;
} sealer;

static sp_seal_set *set_of(sealer *s) { return s->sc->blobs ? s->sc->blobs : &s->sc->local; }

/* Read a regular file whole, bounded. */
static char *read_file(const char *path, size_t max, size_t *len, int *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
        *e = fd < 0 ? errno : !S_ISREG(st.st_mode) ? EISDIR : EFBIG;
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size + 1);
    size_t got = 0;
    while (buf && got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            *e = n < 0 ? errno : EIO;
            free(buf);
            buf = NULL;
        } else {
            got += (size_t)n;
        }
    }
    close(fd);
    if (!buf && !*e)
        *e = ENOMEM;
    *len = got;
    return buf;
}

/* Record bytes under `name` in the sealed map and the blob set (takes bytes). */
static int keep(sealer *s, const char *name, char *bytes, size_t len)
{
    sp_seal_set *set = set_of(s);
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_sha256_text(bytes, len, digest);
    if (set->files + 1 > SP_SEAL_FILES_MAX || set->total + len > SP_SEAL_BYTES_MAX) {
        free(bytes);
        return sp_fail(s->err, "component.grant-unsupported",
                       "%s: the sealed files pass the bounds (%d files, %u bytes)", s->where,
                       SP_SEAL_FILES_MAX, SP_SEAL_BYTES_MAX);
    }
    set->files++;
    set->total += len;
    if (json_object_set_new(s->sealed, name, json_string(digest))) {
        free(bytes);
        return sp_oom(s->err);
    }
    if (!s->sc->blobs) {
        free(bytes);
        return 0;
    }
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->items[i].digest, digest) == 0) {
            free(bytes);
            return 0;
        }
    if (set->n == set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 8;
        sp_seal_blob *items = realloc(set->items, cap * sizeof *items);
        if (!items) {
            free(bytes);
            return sp_oom(s->err);
        }
        set->items = items;
        set->cap = cap;
    }
    sp_seal_blob *b = &set->items[set->n++];
    memcpy(b->digest, digest, sizeof b->digest);
    b->bytes = bytes;
    b->len = len;
    return 0;
}

static int grant_error(sealer *s, const char *code, sp_grant_kind kind, const char *value,
                       const char *why)
{
    return sp_fail_details(s->err, code,
                           json_pack("{s:s,s:s}", "grant", sp_grant_kind_name(kind), "value", value),
                           "%s: grants.%s entry \"%.200s\" %s", s->where, sp_grant_kind_name(kind),
                           value, why);
}

/* The real path of a relative entry, checked to exist inside the folder. */
static int resolve(sealer *s, sp_grant_kind kind, const char *entry, char real[PATH_MAX])
{
    char joined[PATH_MAX];
    if ((size_t)snprintf(joined, sizeof joined, "%s/%s", s->sc->root, entry) >= sizeof joined)
        return grant_error(s, "component.grant-unsupported", kind, entry, "is too long");
    if (!realpath(joined, real))
        return grant_error(s, "component.grant-missing", kind, entry,
                           errno == ENOENT || errno == ENOTDIR
                               ? "does not exist in the workflow folder"
                               : "cannot be resolved");
    if (!sp_path_covers(s->sc->root, real))
        return grant_error(s, "component.grant-escapes", kind, entry,
                           "leaves the workflow folder (through a symlink)");
    return 0;
}

static int seal_file(sealer *s, sp_grant_kind kind, const char *name, const char *real,
                     const char *value)
{
    size_t len = 0;
    int e = 0;
    char *bytes = read_file(real, SP_SEAL_BYTES_MAX, &len, &e);
    if (!bytes)
        return grant_error(s, e == EISDIR ? "component.grant-unsupported" : "component.grant-missing",
                           kind, value,
                           e == EISDIR ? "is not a regular file" : "cannot be read");
    return keep(s, name, bytes, len);
}

/* Every regular file below `real` (the folder `name`), symlinks checked
 * against the granted folder `top`. */
static int seal_tree(sealer *s, const char *top, const char *real, const char *name,
                     const char *value, int depth)
{
    if (depth > SP_SEAL_DEPTH_MAX)
        return grant_error(s, "component.grant-unsupported", SP_GRANT_FOLDERS, value,
                           "is nested too deeply");
    DIR *d = opendir(real);
    if (!d)
        return grant_error(s, "component.grant-missing", SP_GRANT_FOLDERS, value,
                           "cannot be listed");
    int rc = 0;
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d))) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        char path[PATH_MAX], sub[PATH_MAX], target[PATH_MAX];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", real, ent->d_name) >= sizeof path ||
            (size_t)snprintf(sub, sizeof sub, "%s/%s", name, ent->d_name) >= sizeof sub) {
            rc = grant_error(s, "component.grant-unsupported", SP_GRANT_FOLDERS, value,
                             "holds a path that is too long");
            break;
        }
        struct stat st;
        if (lstat(path, &st))
            continue;
        const char *use = path;
        if (S_ISLNK(st.st_mode)) {
            if (!realpath(path, target) || !sp_path_covers(top, target)) {
                rc = grant_error(s, "component.grant-escapes", SP_GRANT_FOLDERS, value,
                                 "holds a symlink that leaves the folder");
                break;
            }
            if (stat(target, &st))
                continue;
            use = target;
        }
        if (S_ISDIR(st.st_mode))
            rc = seal_tree(s, top, use, sub, value, depth + 1);
        else if (S_ISREG(st.st_mode))
            rc = seal_file(s, SP_GRANT_FOLDERS, sub, use, value);
    }
    closedir(d);
    return rc;
}

static int seal_grants(sealer *s, const sp_component_spec *spec)
{
    for (size_t i = 0; i < spec->ngrants[SP_GRANT_PROGRAMS]; i++) {
        const char *entry = spec->grants[SP_GRANT_PROGRAMS][i];
        char real[PATH_MAX];
        if (entry[0] == '/')
            continue;
        if (resolve(s, SP_GRANT_PROGRAMS, entry, real) ||
            seal_file(s, SP_GRANT_PROGRAMS, entry, real, entry))
            return -1;
    }
    for (size_t i = 0; i < spec->ngrants[SP_GRANT_FOLDERS]; i++) {
        const char *entry = spec->grants[SP_GRANT_FOLDERS][i];
        char real[PATH_MAX];
        struct stat st;
        if (entry[0] == '/')
            continue;
        if (resolve(s, SP_GRANT_FOLDERS, entry, real))
            return -1;
        if (stat(real, &st) || !S_ISDIR(st.st_mode))
            return grant_error(s, "component.grant-missing", SP_GRANT_FOLDERS, entry,
                               "is not a folder");
        if (seal_tree(s, real, real, entry, entry, 0))
            return -1;
    }
    return 0;
}

static int module_error(sealer *s, const char *module, const char *fmt, const char *detail)
{
    char why[400];
    snprintf(why, sizeof why, fmt, detail);
    return sp_fail_details(s->err, "component.invalid-module",
                           json_pack("{s:s,s:s}", "module", module, "problem", why),
                           "%s: module \"%.200s\" %s", s->where, module, why);
}

static int seal_module(sealer *s, const sp_component_spec *spec, const char *action_id,
                       bool trial)
{
    char joined[PATH_MAX], real[PATH_MAX];
    const char *module = spec->module;
    if (module[0] == '/')
        snprintf(joined, sizeof joined, "%s", module);
    else if ((size_t)snprintf(joined, sizeof joined, "%s/%s", s->sc->root, module) >= sizeof joined)
        return module_error(s, module, "%s", "has a path that is too long");
    if (!realpath(joined, real))
        return module_error(s, module, "cannot be read: %s", strerror(errno));
    if (module[0] != '/' && !sp_path_covers(s->sc->root, real))
        return module_error(s, module, "%s", "leaves the workflow folder (through a symlink)");
    size_t len = 0;
    int e = 0;
    char *bytes = read_file(real, SP_JAIL_MODULE_MAX, &len, &e);
    if (!bytes)
        return module_error(s, module, "cannot be read: %s", strerror(e));
    sp_world_module m;
    int rc = sp_component_describe(s->where, module, bytes, len, &m, s->err);
    if (rc == 0) {
        rc = sp_world_check(&m, action_id, s->err);
        sp_world_module_free(&m);
    }
    if (rc == 0 && trial)
        rc = sp_component_trial(s->where, bytes, len, spec->call_timeout_ms, s->err);
    if (rc) {
        free(bytes);
        return -1;
    }
    return keep(s, module, bytes, len);
}

int sp_component_seal(sp_seal_ctx *sc, const char *where, const char *action_id, json_t *obj,
                      bool hook, sp_error *err)
{
    sealer s = {.where = where, .sc = sc, .err = err};
    sp_component_spec spec;
    if (sp_component_spec_parse(where, obj, hook, &spec, err))
        return -1;
    s.sealed = json_object();
    int rc = s.sealed ? 0 : sp_oom(err);
    if (rc == 0)
        rc = seal_grants(&s, &spec);
    if (rc == 0)
        rc = seal_module(&s, &spec, action_id, sc->trial);
    sp_component_spec_free(&spec);
    if (rc == 0 && json_object_set_new(obj, "sealed", s.sealed))
        rc = sp_oom(err);
    else if (rc)
        json_decref(s.sealed);
    return rc;
}

int sp_seal_begin(sp_seal_ctx *sc, const char *workflow_dir, sp_seal_set *blobs, bool trial,
                  sp_error *err)
{
    memset(sc, 0, sizeof *sc);
    sc->blobs = blobs;
    sc->trial = trial;
    if (!realpath(workflow_dir && workflow_dir[0] ? workflow_dir : ".", sc->root))
        return sp_fail(err, "file.unreadable", "cannot resolve the workflow folder %s: %s",
                       workflow_dir ? workflow_dir : ".", strerror(errno));
    return 0;
}

void sp_seal_end(sp_seal_ctx *sc) { sp_seal_set_free(&sc->local); }
