/*
 * fuzz_artifact.c - libFuzzer target for the artifact reader
 * (authoring.md §2). Properties checked on every input (a violation
 * aborts): reading never crashes or leaks; a refusal carries an
 * artifact.* code; an artifact that reads has its manifest and package,
 * members in strictly ascending order, every sealed file present by
 * digest; and one without assets is exactly what the writer makes of its
 * package and sealed files (the format has one encoding).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authoring/authoring.h"

static void require(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_artifact: property violated: %s\n", what);
        abort();
    }
}

static int name_cmp(const sp_artifact_member *a, const sp_artifact_member *b)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);
    return c ? c : (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

/* Rewrite the artifact from its contents: the same bytes. */
static void check_rewrite(const sp_artifact *a, const uint8_t *data, size_t size)
{
    const json_t *sealed = json_object_get(a->manifest, "sealed");
    size_t n = json_array_size(sealed);
    sp_artifact_blob *blobs = calloc(n + 1, sizeof *blobs);
    require(blobs != NULL, "memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *file = json_array_get(sealed, i);
        const char *digest = json_string_value(json_object_get(file, "digest"));
        const sp_artifact_member *m = sp_artifact_blob_of(a, digest);
        require(m != NULL, "every sealed file is a member");
        blobs[i] = (sp_artifact_blob){digest, m->bytes, m->len};
    }
    sp_artifact_spec spec = {a->package_bytes, a->package_len,
                             json_string_value(json_object_get(a->manifest, "packageDigest")),
                             blobs, n, NULL,
                             json_string_value(json_object_get(a->manifest, "sporeVersion"))};
    sp_buf out = SP_BUF_INIT;
    sp_error err = {0};
    require(sp_artifact_write(&spec, &out, &err) == 0, "what reads can be written again");
    require(out.len == size && memcmp(out.data, data, size) == 0, "one encoding per artifact");
    sp_buf_free(&out);
    free(blobs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sp_artifact a;
    sp_error err = {0};
    if (sp_artifact_read((const char *)data, size, &a, &err) != 0) {
        require(strncmp(err.code, "artifact.", 9) == 0 ||
                    strcmp(err.code, "runtime.out-of-memory") == 0,
                "a refusal is artifact.*");
        require(a.members == NULL && a.manifest == NULL, "a refusal leaves nothing");
        sp_error_clear(&err);
        return 0;
    }
    require(a.manifest && a.package && a.nmembers >= 2, "a manifest and a package");
    for (size_t i = 1; i < a.nmembers; i++)
        require(name_cmp(&a.members[i - 1], &a.members[i]) < 0, "members in ascending order");
    if (json_array_size(json_object_get(a.manifest, "assets")) == 0)
        check_rewrite(&a, data, size);
    sp_artifact_free(&a);
    return 0;
}
