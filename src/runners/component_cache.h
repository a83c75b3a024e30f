/*
 * component_cache.h - sealed bytes from the store, and the content-addressed
 * cache where workers materialize bundled programs and folders
 * (runners.md §2).
 *
 * Layout under the cache root ($XDG_CACHE_HOME/spore, else ~/.cache/spore,
 * else /tmp/spore-cache-<uid>), every directory 0700 and owned by the
 * worker's user:
 *   blobs/<hex>        a sealed file, mode 0444 (read-only)
 *   blobs/<hex>.x      the same bytes as a program, mode 0555
 *   trees/<hex>/...    a folder grant: its sealed files under their paths
 *                      below the grant, read-only; <hex> is the SHA-256 of
 *                      the folder's canonical {path: digest} manifest
 *   logs/<runId>/<invocationId>-<attempt>.log   a component attempt's log
 * Everything is written to a temporary name and renamed into place, so a
 * reader never sees half a file. A blob is hashed again before every use.
 *
 * What it must never do: hand out a file whose bytes do not match its
 * digest, or make anything in blobs/ or trees/ writable.
 */
#ifndef SPORE_RUNNERS_COMPONENT_CACHE_H
#define SPORE_RUNNERS_COMPONENT_CACHE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "runners/runner.h" /* sp_artifacts */

/* <cache root>/<sub>, created with its parents (mode 0700). */
int sp_cache_dir(const char *sub, char *out, size_t n, sp_error *err);

/* The bytes of `digest` from the store, verified (component.artifact when
 * missing, mismatched or unreachable). */
int sp_cache_fetch(const sp_artifacts *a, const char *digest, void **bytes, size_t *len,
                   sp_error *err);

/* A sealed program materialized (blobs/<hex>.x, verified). */
int sp_cache_program(const sp_artifacts *a, const char *digest, char *path, size_t n,
                     sp_error *err);

/* The folder grant `entry` (normalized, relative) materialized from the
 * sealed map: trees/<hex>, holding every sealed file below `entry`. */
int sp_cache_tree(const sp_artifacts *a, const json_t *sealed, const char *entry, char *path,
                  size_t n, sp_error *err);

#endif
