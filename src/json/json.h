/*
 * json.h - canonical JSON (`jcs-int53/1`, kernel.md §7.2) over jansson values.
 *
 * What it is for: the one place where bytes become JSON values and values
 * become canonical bytes. Parsing is strict (jansson with
 * JSON_REJECT_DUPLICATES, plus spore's own checks for raw NUL bytes, depth,
 * the int53 range, zero-valued float tokens and every other non-integer, and
 * support for object keys containing U+0000, which jansson alone refuses);
 * encoding is spore's own (UTF-16 key order, minimal escapes).
 *
 * What it must never do: accept a value outside the canonical domain, emit
 * anything but canonical bytes, or depend on hash or insertion order.
 *
 * Errors carry the `canonical.*` codes of kernel.md §7.2.
 */
#ifndef SPORE_JSON_JSON_H
#define SPORE_JSON_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"

#define SP_JSON_MAX_DEPTH 32                   /* containers at depth >= 32 rejected */
#define SP_JSON_MAX_SAFE INT64_C(9007199254740991) /* 2^53 - 1 */

/* Parse any whitespace / key order into a value of the canonical domain.
 * Returns a new reference, or NULL with `err` set to a canonical.* code. */
json_t *sp_json_parse(const char *bytes, size_t len, sp_error *err);

/* Parse and additionally require that `bytes` are exactly the canonical
 * encoding of the value (else canonical.not-canonical). */
json_t *sp_json_parse_canonical(const char *bytes, size_t len, sp_error *err);

/* Append the canonical encoding of `v` to `out`. Fails with canonical.too-deep
 * (nesting over 32), canonical.integer-out-of-range or canonical.non-integer.
 * On failure `out` may hold a partial encoding. An out-of-memory or a limit
 * reached on `out` is reported as well (runtime.out-of-memory / canonical.too-large). */
int sp_json_encode(const json_t *v, sp_buf *out, sp_error *err);

/* Canonical bytes as a new NUL-terminated string (caller frees). */
char *sp_json_encode_alloc(const json_t *v, size_t *len, sp_error *err);

/* Append `"key":value` exactly as sp_json_encode writes that member inside an
 * object nested at `depth` (0 = the document itself): the value's nesting
 * counts from the document, so the same canonical.too-deep applies. For
 * callers that assemble an object's encoding from remembered members. */
int sp_json_encode_member(const char *key, size_t klen, const json_t *value, int depth,
                          sp_buf *out, sp_error *err);

/* Compare two UTF-8 keys in UTF-16 code unit order (<0, 0, >0). */
int sp_json_key_cmp(const char *a, size_t alen, const char *b, size_t blen);

typedef struct sp_json_member {
    const char *key;
    size_t len;
    json_t *value;
} sp_json_member;

/* The members of an object in canonical (UTF-16) key order. Returns a new
 * array of json_object_size() entries (caller frees; NULL for an empty object
 * or on out-of-memory, told apart by `*oom`). */
sp_json_member *sp_json_sorted_members(const json_t *obj, bool *oom);

/* Nesting depth of a value: scalars 0, `[]` 1, `[[]]` 2 ... */
int sp_json_depth(const json_t *v);

/* True when both values have the same canonical encoding. */
bool sp_json_same(const json_t *a, const json_t *b);

#endif
