/*
 * manifest.c - making and checking an artifact's manifest (see
 * manifest.h). Never accepts a member it does not know.
 */
#include "authoring/manifest.h"

#include <stdlib.h>
#include <string.h>

#include "authoring/paths.h"
#include "authoring/sealed.h"
#include "json/decimal.h"

static json_t *file_list(const sp_manifest_file *files, size_t n)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++)
        if (json_array_append_new(list, json_pack("{s:s,s:s,s:o}", "digest", files[i].digest,
                                                  "path", files[i].path, "size",
                                                  sp_decimal_json(files[i].size)))) {
            json_decref(list);
            return NULL;
        }
    return list;
}

json_t *sp_manifest_make(const sp_manifest_spec *spec, sp_error *err)
{
    json_t *m = json_pack("{s:o,s:O,s:O,s:o,s:s,s:o,s:s}", "assets",
                          file_list(spec->assets, spec->nassets), "format",
                          json_object_get(spec->package, "format"), "name",
                          json_object_get(spec->package, "name"), "packageBytes",
                          sp_decimal_json(spec->package_len), "packageDigest", spec->package_digest,
                          "sealed", file_list(spec->sealed, spec->nsealed), "sporeVersion",
                          spec->spore_version);
    if (!m)
        sp_oom(err);
    return m;
}

static int bad(sp_error *err, const char *what)
{
    return sp_fail(err, "artifact.manifest", "the manifest %s", what);
}

/* A list of {digest, path, size}, paths normal and strictly ascending. */
static int read_files(const json_t *list, const char *name, sp_manifest_file **out, size_t *n,
                      sp_error *err)
{
    *out = NULL;
    *n = 0;
    if (!json_is_array(list))
        return sp_fail(err, "artifact.manifest", "the manifest's %s is not a list", name);
    size_t count = json_array_size(list);
    sp_manifest_file *files = calloc(count ? count : 1, sizeof *files);
    if (!files)
        return sp_oom(err);
    for (size_t i = 0; i < count; i++) {
        const json_t *f = json_array_get(list, i);
        const char *path = json_string_value(json_object_get(f, "path"));
        const char *digest = json_string_value(json_object_get(f, "digest"));
        if (!json_is_object(f) || json_object_size(f) != 3 || !path ||
            !sp_relpath_is_normal(path, strlen(path)) || !sp_is_sha256_text(digest) ||
            !sp_decimal_from_json(json_object_get(f, "size"), &files[i].size) ||
            (i && strcmp(files[i - 1].path, path) >= 0)) {
            free(files);
            return sp_fail(err, "artifact.manifest",
                           "the manifest's %s entry %zu is not {digest, path, size} in path order",
                           name, i);
        }
        files[i].path = path;
        memcpy(files[i].digest, digest, sizeof files[i].digest);
    }
    *out = files;
    *n = count;
    return 0;
}

static int same_string(const json_t *a, const json_t *b)
{
    return json_is_string(a) && json_is_string(b) && json_equal(a, b);
}

/* The manifest's sealed list is exactly the package's sealed files. */
static int sealed_agree(const sp_manifest_spec *s, const json_t *package, sp_error *err)
{
    sp_sealed_list l;
    if (sp_package_sealed(package, &l, err))
        return -1;
    bool same = l.n == s->nsealed;
    for (size_t i = 0; same && i < l.n; i++)
        same = strcmp(l.files[i].path, s->sealed[i].path) == 0 &&
               strcmp(l.files[i].digest, s->sealed[i].digest) == 0;
    sp_sealed_list_free(&l);
    return same ? 0 : bad(err, "lists other sealed files than the package seals");
}

int sp_manifest_check(const json_t *manifest, const json_t *package, const char *package_bytes,
                      size_t package_len, sp_manifest_spec *out, sp_error *err)
{
    static const char *const members[] = {"assets",        "format", "name",         "packageBytes",
                                          "packageDigest", "sealed", "sporeVersion", NULL};
    memset(out, 0, sizeof *out);
    if (!json_is_object(manifest) || json_object_size(manifest) != 7)
        return bad(err, "is not an object of the 7 manifest members");
    for (const char *const *m = members; *m; m++)
        if (!json_object_get(manifest, *m))
            return sp_fail(err, "artifact.manifest", "the manifest has no %s", *m);
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("package", package_bytes, package_len, digest);
    uint64_t bytes;
    const char *version = json_string_value(json_object_get(manifest, "sporeVersion"));
    if (!same_string(json_object_get(manifest, "name"), json_object_get(package, "name")) ||
        !same_string(json_object_get(manifest, "format"), json_object_get(package, "format")))
        return bad(err, "names another workflow (name or format) than its package");
    if (!json_is_string(json_object_get(manifest, "packageDigest")) ||
        strcmp(json_string_value(json_object_get(manifest, "packageDigest")), digest) != 0 ||
        !sp_decimal_from_json(json_object_get(manifest, "packageBytes"), &bytes) ||
        bytes != package_len)
        return bad(err, "names another package digest or size than the package member has");
    if (!version || strlen(version) > SP_MANIFEST_VERSION_MAX)
        return bad(err, "has no sporeVersion string (at most 64 bytes)");
    out->package = package;
    out->package_len = package_len;
    out->spore_version = version;
    out->package_digest = json_string_value(json_object_get(manifest, "packageDigest"));
    sp_manifest_file *assets, *sealed;
    if (read_files(json_object_get(manifest, "assets"), "assets", &assets, &out->nassets, err))
        return -1;
    out->assets = assets;
    if (read_files(json_object_get(manifest, "sealed"), "sealed", &sealed, &out->nsealed, err)) {
        sp_manifest_spec_free(out);
        return -1;
    }
    out->sealed = sealed;
    if (sealed_agree(out, package, err)) {
        sp_manifest_spec_free(out);
        return -1;
    }
    return 0;
}

void sp_manifest_spec_free(sp_manifest_spec *s)
{
    free((void *)s->assets);
    free((void *)s->sealed);
    memset(s, 0, sizeof *s);
}
