/*
 * artifact_write.c - a sealed package, its sealed runner files and its
 * assets written as one artifact (see authoring.h, container.h,
 * manifest.h). The same inputs always give the same bytes: members in
 * byte order of names, blobs named by their digest, no time, no owner, no
 * mode.
 *
 * Must never write a member the manifest does not account for, or an
 * asset whose bytes are not the ones it read and hashed.
 */
#include <stdlib.h>
#include <string.h>

#include "authoring/authoring.h"
#include "authoring/container.h"
#include "authoring/files.h"
#include "authoring/manifest.h"
#include "authoring/sealed.h"
#include "json/json.h"

/* What the artifact is made of, built up before it is written. */
typedef struct pieces {
    sp_manifest_file *assets, *sealed;
    size_t nassets, nsealed;
    char **asset_bytes; /* owned, one per asset */
    sp_artifact_blob *blobs; /* unique digests: sealed files and assets */
    size_t nblobs;
    char (*blob_names)[sizeof SP_ARTIFACT_BLOB_PREFIX + SP_DIGEST_HEX_LEN];
} pieces;

static void pieces_free(pieces *p)
{
    for (size_t i = 0; p->asset_bytes && i < p->nassets; i++)
        free(p->asset_bytes[i]);
    free(p->asset_bytes);
    free(p->assets);
    free(p->sealed);
    free(p->blobs);
    free(p->blob_names);
}

static const sp_artifact_blob *find_blob(const sp_artifact_blob *blobs, size_t n,
                                         const char *digest)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(blobs[i].digest, digest) == 0)
            return &blobs[i];
    return NULL;
}

/* Each asset read once, its size as the folder found it. */
static int read_assets(const sp_folder *f, pieces *p, sp_error *err)
{
    size_t n = f ? f->nassets : 0;
    p->assets = calloc(n ? n : 1, sizeof *p->assets);
    p->asset_bytes = calloc(n ? n : 1, sizeof *p->asset_bytes);
    if (!p->assets || !p->asset_bytes)
        return sp_oom(err);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        char *bytes = sp_file_read_or_fail(f->assets[i].real, SP_ASSET_BYTES_MAX, &len, err);
        if (!bytes)
            return -1;
        p->asset_bytes[p->nassets] = bytes;
        p->assets[p->nassets] = (sp_manifest_file){.path = f->assets[i].path, .size = len};
        sp_sha256_text(bytes, len, p->assets[p->nassets].digest);
        p->nassets++;
        if (len != f->assets[i].size)
            return sp_fail(err, "build.asset-changed",
                           "the asset %s changed while the artifact was written; build again",
                           f->assets[i].path);
    }
    return 0;
}

/* The package's sealed files, each with the bytes the seal read. */
static int sealed_files(const sp_artifact_spec *spec, const json_t *package, pieces *p,
                        sp_error *err)
{
    sp_sealed_list l;
    if (sp_package_sealed(package, &l, err))
        return -1;
    p->sealed = calloc(l.n ? l.n : 1, sizeof *p->sealed);
    int rc = p->sealed ? 0 : sp_oom(err);
    for (size_t i = 0; i < l.n && rc == 0; i++) {
        const sp_artifact_blob *b = find_blob(spec->sealed, spec->nsealed, l.files[i].digest);
        if (!b) {
            rc = sp_fail(err, "internal.artifact", "the sealed file %s has no bytes",
                         l.files[i].path);
            break;
        }
        p->sealed[i] = (sp_manifest_file){.path = l.files[i].path, .size = b->len};
        memcpy(p->sealed[i].digest, b->digest, sizeof p->sealed[i].digest);
        p->nsealed++;
    }
    sp_sealed_list_free(&l); /* paths stay: they are the package's strings */
    return rc;
}

/* Bytes by digest, each digest once. */
static void add_blob(pieces *p, const char *digest, const char *bytes, size_t len)
{
    if (!find_blob(p->blobs, p->nblobs, digest))
        p->blobs[p->nblobs++] = (sp_artifact_blob){digest, bytes, len};
}

static int blob_cmp(const void *x, const void *y)
{
    return strcmp(((const sp_artifact_blob *)x)->digest, ((const sp_artifact_blob *)y)->digest);
}

/* Sealed files and assets by digest, each digest once, in digest order
 * (= member name order). */
static int collect_blobs(const sp_artifact_spec *spec, pieces *p, sp_error *err)
{
    p->blobs = calloc(p->nsealed + p->nassets + 1, sizeof *p->blobs);
    p->blob_names = calloc(p->nsealed + p->nassets + 1, sizeof *p->blob_names);
    if (!p->blobs || !p->blob_names)
        return sp_oom(err);
    for (size_t i = 0; i < p->nsealed; i++) {
        const sp_artifact_blob *b = find_blob(spec->sealed, spec->nsealed, p->sealed[i].digest);
        add_blob(p, b->digest, b->bytes, b->len);
    }
    for (size_t i = 0; i < p->nassets; i++)
        add_blob(p, p->assets[i].digest, p->asset_bytes[i], p->assets[i].size);
    qsort(p->blobs, p->nblobs, sizeof *p->blobs, blob_cmp);
    return 0;
}

/* blobs/..., manifest.json, package.json: ascending byte order. */
static int write_members(const sp_artifact_spec *spec, pieces *p, const char *manifest,
                         size_t manifest_len, sp_buf *out, sp_error *err)
{
    size_t n = p->nblobs + 2;
    sp_artifact_member *m = calloc(n, sizeof *m);
    if (!m)
        return sp_oom(err);
    for (size_t i = 0; i < p->nblobs; i++) {
        snprintf(p->blob_names[i], sizeof p->blob_names[i], "%s%s", SP_ARTIFACT_BLOB_PREFIX,
                 p->blobs[i].digest + 7);
        m[i] = (sp_artifact_member){p->blob_names[i], strlen(p->blob_names[i]), p->blobs[i].bytes,
                                    p->blobs[i].len};
    }
    m[p->nblobs] = (sp_artifact_member){SP_ARTIFACT_MANIFEST, strlen(SP_ARTIFACT_MANIFEST),
                                        manifest, manifest_len};
    m[p->nblobs + 1] = (sp_artifact_member){SP_ARTIFACT_PACKAGE, strlen(SP_ARTIFACT_PACKAGE),
                                            spec->package, spec->package_len};
    int rc = sp_container_write(m, n, out, err);
    free(m);
    return rc;
}

int sp_artifact_write(const sp_artifact_spec *spec, sp_buf *out, sp_error *err)
{
    pieces p = {0};
    json_t *package = sp_json_parse_canonical(spec->package, spec->package_len, err);
    json_t *manifest = NULL;
    char *manifest_bytes = NULL;
    size_t manifest_len = 0;
    int rc = package ? 0 : -1;
    if (rc == 0)
        rc = read_assets(spec->folder, &p, err);
    if (rc == 0)
        rc = sealed_files(spec, package, &p, err);
    if (rc == 0)
        rc = collect_blobs(spec, &p, err);
    if (rc == 0) {
        sp_manifest_spec ms = {package,    spec->package_len, spec->package_digest,
                               p.assets,   p.sealed,          p.nassets,
                               p.nsealed,  spec->spore_version};
        manifest = sp_manifest_make(&ms, err);
        manifest_bytes = manifest ? sp_json_encode_alloc(manifest, &manifest_len, err) : NULL;
        rc = manifest_bytes ? 0 : -1;
    }
    if (rc == 0 && manifest_len > SP_ARTIFACT_MANIFEST_MAX)
        rc = sp_fail(err, "build.too-large", "the manifest would be larger than %u bytes",
                     SP_ARTIFACT_MANIFEST_MAX);
    if (rc == 0)
        rc = write_members(spec, &p, manifest_bytes, manifest_len, out, err);
    free(manifest_bytes);
    json_decref(manifest);
    json_decref(package);
    pieces_free(&p);
    return rc;
}
