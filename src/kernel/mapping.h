/*
 * mapping.h - input/output mappings (kernel.md §3): `$get` paths,
 * `$literal` values, and the expression-operations cost of evaluating them.
 *
 * What it must never do: evaluate object members in any order but the
 * canonical key order (it fixes which missing path is reported first), or
 * charge a `$get` less than 1 + its path length.
 */
#ifndef SPORE_KERNEL_MAPPING_H
#define SPORE_KERNEL_MAPPING_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* W10: is `m` a well-formed mapping? */
bool sp_mapping_valid(const json_t *m);

/* The same for a 0.2 map node's `input`, where two more roots are valid:
 * `["item", ...]` (the element, any path below it) and `["index"]` (its
 * position, nothing after it). */
bool sp_mapping_valid_map_input(const json_t *m);

typedef struct sp_mapping_ctx {
    const json_t *input; /* the run input */
    const json_t *nodes; /* node ID -> {visit, outcome, output} */
    const char *run_id;
    const char *tenant;
    uint64_t ops; /* expression operations charged so far */
    const json_t *item; /* the map roots (a map item's input), or NULL */
    int64_t index;      /* ... and its index, -1 = none */
} sp_mapping_ctx;

typedef enum sp_mapping_status {
    SP_MAPPING_OK,
    SP_MAPPING_MISSING, /* *missing is the path as written (borrowed) */
    SP_MAPPING_OOM,
} sp_mapping_status;

/* Evaluate a valid mapping. On SP_MAPPING_OK, *out is a new reference. */
sp_mapping_status sp_mapping_eval(const json_t *m, sp_mapping_ctx *ctx, json_t **out,
                                  const json_t **missing);

#endif
