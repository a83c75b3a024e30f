/*
 * manifest.h - the manifest of an artifact (authoring.md §2): canonical
 * JSON naming what the artifact is and holds,
 *
 *   {"assets": [{"digest", "path", "size"}...], "format", "name",
 *    "packageBytes", "packageDigest", "sealed": [{"digest", "path",
 *    "size"}...], "sporeVersion"}
 *
 * lists in ascending byte order of paths, sizes as decimal strings.
 *
 * What it is for: one place that writes the manifest and checks one read
 * back against the package it describes.
 *
 * What it must never do: accept a manifest with a member it does not know,
 * a list out of order, or a name, format or digest the package contradicts
 * (artifact.manifest).
 */
#ifndef SPORE_AUTHORING_MANIFEST_H
#define SPORE_AUTHORING_MANIFEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "digest/digest.h"

#define SP_MANIFEST_VERSION_MAX 64 /* bytes of sporeVersion */

typedef struct sp_manifest_file {
    const char *path;
    char digest[SP_DIGEST_TEXT_LEN + 1];
    uint64_t size;
} sp_manifest_file;

typedef struct sp_manifest_spec {
    const json_t *package;
    size_t package_len;
    const char *package_digest;
    const sp_manifest_file *assets, *sealed; /* each in ascending byte order of paths */
    size_t nassets, nsealed;
    const char *spore_version;
} sp_manifest_spec;

json_t *sp_manifest_make(const sp_manifest_spec *spec, sp_error *err);

/* Check `manifest` against the package it came with; fills the lists of
 * `out` (paths and digests borrowed from the manifest, caller frees the
 * two arrays). */
int sp_manifest_check(const json_t *manifest, const json_t *package, const char *package_bytes,
                      size_t package_len, sp_manifest_spec *out, sp_error *err);

void sp_manifest_spec_free(sp_manifest_spec *s);

#endif
