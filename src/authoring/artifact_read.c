/*
 * artifact_read.c - an artifact read back and checked (see authoring.h):
 * the container first (container.c), then what its members mean: a
 * manifest, a package, and blobs named by their digest, each blob listed
 * by the manifest and each listed file present with its size.
 *
 * Must never accept a member it cannot account for, nor trust a manifest
 * that the package contradicts.
 */
#include <stdlib.h>
#include <string.h>

#include "authoring/authoring.h"
#include "authoring/container.h"
#include "authoring/manifest.h"
#include "json/json.h"

#define PACKAGE_MAX (8u << 20) /* as a workflow file (SP_WORKFLOW_FILE_MAX) */

bool sp_artifact_magic(const char *bytes, size_t len)
{
    return len >= SP_ARTIFACT_MAGIC_LEN &&
           memcmp(bytes, SP_ARTIFACT_MAGIC, SP_ARTIFACT_MAGIC_LEN) == 0;
}

static bool named(const sp_artifact_member *m, const char *name)
{
    return m->name_len == strlen(name) && memcmp(m->name, name, m->name_len) == 0;
}

static size_t prefix_len(void) { return strlen(SP_ARTIFACT_BLOB_PREFIX); }

static bool is_blob(const sp_artifact_member *m)
{
    size_t p = prefix_len();
    return m->name_len == p + SP_DIGEST_HEX_LEN && memcmp(m->name, SP_ARTIFACT_BLOB_PREFIX, p) == 0;
}

const sp_artifact_member *sp_artifact_blob_of(const sp_artifact *a, const char *digest)
{
    if (!digest || strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 7 + SP_DIGEST_HEX_LEN)
        return NULL;
    for (size_t i = 0; i < a->nmembers; i++)
        if (is_blob(&a->members[i]) &&
            memcmp(a->members[i].name + prefix_len(), digest + 7, SP_DIGEST_HEX_LEN) == 0)
            return &a->members[i];
    return NULL;
}

/* Every member is the manifest, the package, or a blob whose name is the
 * digest of its bytes. */
static int classify(const sp_artifact *a, const sp_artifact_member **manifest,
                    const sp_artifact_member **package, sp_error *err)
{
    *manifest = *package = NULL;
    for (size_t i = 0; i < a->nmembers; i++) {
        const sp_artifact_member *m = &a->members[i];
        char digest[SP_DIGEST_TEXT_LEN + 1];
        if (named(m, SP_ARTIFACT_MANIFEST)) {
            *manifest = m;
        } else if (named(m, SP_ARTIFACT_PACKAGE)) {
            *package = m;
        } else if (!is_blob(m)) {
            return sp_fail(err, "artifact.member-unknown",
                           "member \"%.*s\" is none of manifest.json, package.json, "
                           "blobs/sha256-<hex>",
                           (int)m->name_len, m->name);
        } else {
            sp_sha256_text(m->bytes, m->len, digest);
            if (memcmp(digest + 7, m->name + prefix_len(), SP_DIGEST_HEX_LEN) != 0)
                return sp_fail(err, "artifact.member-digest",
                               "member \"%.*s\" does not hold the bytes its name says",
                               (int)m->name_len, m->name);
        }
    }
    if (!*manifest || !*package)
        return sp_fail(err, "artifact.member-missing", "the artifact has no %s",
                       !*manifest ? SP_ARTIFACT_MANIFEST : SP_ARTIFACT_PACKAGE);
    return 0;
}

static json_t *parse_member(const sp_artifact_member *m, size_t max, const char *code,
                            sp_error *err)
{
    if (m->len > max) {
        sp_fail(err, code, "%.*s is larger than %zu bytes", (int)m->name_len, m->name, max);
        return NULL;
    }
    json_t *v = sp_json_parse_canonical(m->bytes, m->len, err);
    if (!v) {
        char message[SP_MESSAGE_MAX];
        snprintf(message, sizeof message, "%s", err->message);
        sp_fail(err, code, "%.*s is not canonical JSON: %s", (int)m->name_len, m->name, message);
    }
    return v;
}

/* Each file the manifest lists is a blob of its size. */
static int listed_present(const sp_artifact *a, const sp_manifest_file *files, size_t n,
                          sp_error *err)
{
    for (size_t i = 0; i < n; i++) {
        const sp_artifact_member *m = sp_artifact_blob_of(a, files[i].digest);
        if (!m || m->len != files[i].size)
            return sp_fail(err, "artifact.member-missing",
                           "the manifest lists %s (%s), which the artifact does not hold%s",
                           files[i].path, files[i].digest, m ? " with that size" : "");
    }
    return 0;
}

static bool listed(const sp_manifest_spec *s, const char *hex)
{
    for (size_t i = 0; i < s->nassets; i++)
        if (strcmp(s->assets[i].digest + 7, hex) == 0)
            return true;
    for (size_t i = 0; i < s->nsealed; i++)
        if (strcmp(s->sealed[i].digest + 7, hex) == 0)
            return true;
    return false;
}

/* Each blob is listed by the manifest. */
static int blobs_listed(const sp_artifact *a, const sp_manifest_spec *s, sp_error *err)
{
    for (size_t i = 0; i < a->nmembers; i++) {
        const sp_artifact_member *m = &a->members[i];
        char hex[SP_DIGEST_HEX_LEN + 1];
        if (!is_blob(m))
            continue;
        memcpy(hex, m->name + prefix_len(), SP_DIGEST_HEX_LEN);
        hex[SP_DIGEST_HEX_LEN] = '\0';
        if (!listed(s, hex))
            return sp_fail(err, "artifact.member-unreferenced",
                           "member \"%.*s\" is listed by no asset and no sealed file",
                           (int)m->name_len, m->name);
    }
    return 0;
}

static int contents(sp_artifact *a, sp_error *err)
{
    const sp_artifact_member *manifest, *package;
    if (classify(a, &manifest, &package, err))
        return -1;
    a->manifest = parse_member(manifest, SP_ARTIFACT_MANIFEST_MAX, "artifact.manifest", err);
    a->package = a->manifest ? parse_member(package, PACKAGE_MAX, "artifact.package", err) : NULL;
    if (!a->package)
        return -1;
    a->package_bytes = package->bytes;
    a->package_len = package->len;
    sp_manifest_spec s;
    if (sp_manifest_check(a->manifest, a->package, package->bytes, package->len, &s, err))
        return -1;
    int rc = listed_present(a, s.assets, s.nassets, err);
    if (rc == 0)
        rc = listed_present(a, s.sealed, s.nsealed, err);
    if (rc == 0)
        rc = blobs_listed(a, &s, err);
    sp_manifest_spec_free(&s);
    return rc;
}

int sp_artifact_read(const char *bytes, size_t len, sp_artifact *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    if (sp_container_read(bytes, len, &out->members, &out->nmembers, err))
        return -1;
    out->len = len;
    sp_sha256_text(bytes, len, out->digest);
    if (contents(out, err)) {
        sp_artifact_free(out);
        return -1;
    }
    return 0;
}

void sp_artifact_free(sp_artifact *a)
{
    free(a->members);
    json_decref(a->manifest);
    json_decref(a->package);
    memset(a, 0, sizeof *a);
}
