/*
 * sealed.c - the runner objects and sealed files of a package (see
 * sealed.h). Never accepts a sealed path that is not normal and relative.
 */
#include "authoring/sealed.h"

#include <stdlib.h>
#include <string.h>

#include "authoring/grow.h"
#include "authoring/paths.h"
#include "json/json.h"

bool sp_is_sha256_text(const char *digest)
{
    if (!digest || strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 7 + 64)
        return false;
    for (const char *c = digest + 7; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

int sp_package_runners(const json_t *package, int (*fn)(const json_t *runner, void *ctx), void *ctx)
{
    static const char *const hooks[] = {"probe", "watch", "stop"};
    const json_t *actions = json_object_get(package, "actions");
    bool oom = false;
    size_t n = json_is_object(actions) ? json_object_size(actions) : 0;
    sp_json_member *m = n ? sp_json_sorted_members(actions, &oom) : NULL;
    int rc = oom ? -1 : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!json_is_object(m[i].value))
            continue;
        rc = fn(m[i].value, ctx);
        const json_t *async = json_object_get(m[i].value, "async");
        for (size_t h = 0; h < sizeof hooks / sizeof hooks[0] && rc == 0; h++) {
            const json_t *runner = json_object_get(json_object_get(async, hooks[h]), "component");
            if (json_is_object(runner))
                rc = fn(runner, ctx);
        }
    }
    free(m);
    return rc;
}

typedef struct collect {
    sp_sealed_file *files;
    size_t n, cap;
    sp_error *err;
} collect;

static int add(collect *c, const char *path, const char *digest)
{
    sp_sealed_file *grown = sp_grow(c->files, &c->cap, c->n, sizeof *grown);
    if (!grown)
        return sp_oom(c->err);
    c->files = grown;
    c->files[c->n++] = (sp_sealed_file){path, digest};
    return 0;
}

static int collect_runner(const json_t *runner, void *ctx)
{
    collect *c = ctx;
    const json_t *sealed = json_object_get(runner, "sealed");
    if (!sealed)
        return 0;
    if (!json_is_object(sealed))
        return sp_fail(c->err, "artifact.package", "a runner's sealed member is not an object");
    const char *path;
    json_t *digest;
    json_object_foreach((json_t *)sealed, path, digest)
    {
        if (!sp_relpath_is_normal(path, strlen(path)))
            return sp_fail(c->err, "artifact.package",
                           "the sealed path \"%.100s\" is not a normal path inside the folder",
                           path);
        if (!sp_is_sha256_text(json_string_value(digest)))
            return sp_fail(c->err, "artifact.package",
                           "the sealed path \"%.100s\" has no sha256 digest", path);
        if (add(c, path, json_string_value(digest)))
            return -1;
    }
    return 0;
}

static int by_path(const void *x, const void *y)
{
    const sp_sealed_file *a = x, *b = y;
    int c = strcmp(a->path, b->path);
    return c ? c : strcmp(a->digest, b->digest);
}

int sp_package_sealed(const json_t *package, sp_sealed_list *out, sp_error *err)
{
    collect c = {.err = err};
    memset(out, 0, sizeof *out);
    if (sp_package_runners(package, collect_runner, &c)) {
        free(c.files);
        return err->code[0] ? -1 : sp_oom(err);
    }
    if (c.n)
        qsort(c.files, c.n, sizeof *c.files, by_path);
    size_t kept = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (kept && strcmp(c.files[kept - 1].path, c.files[i].path) == 0) {
            if (strcmp(c.files[kept - 1].digest, c.files[i].digest) != 0) {
                free(c.files);
                return sp_fail(err, "artifact.package",
                               "the path \"%.100s\" is sealed with two different digests",
                               c.files[i].path);
            }
            continue;
        }
        c.files[kept++] = c.files[i];
    }
    out->files = c.files;
    out->n = kept;
    return 0;
}

void sp_sealed_list_free(sp_sealed_list *l)
{
    free(l->files);
    memset(l, 0, sizeof *l);
}
