/*
 * schema.h - output schemas (kernel.md §5, workflows-0.2.md §2): the
 * JSON-Schema subset a 0.2 node may declare per outcome, compiled once and
 * checked against a step's output before the result reaches the kernel.
 *
 * What it is for: sp_schema_compile() decides whether a schema document is
 * inside the subset (the kernel's W13 uses it: anything else is
 * workflow.invalid-schema) and builds a checker with every $ref inlined;
 * sp_schema_check() checks one value against it (the engine's output check:
 * a mismatch is output.invalid whose details name the JSON path and the
 * rule, never the value).
 *
 * What it must never do: I/O, allocation without a bound (depth <= 32,
 * sizes bounded by the document), recursion through $ref, or copying any
 * part of the checked value into an error.
 */
#ifndef SPORE_SCHEMA_SCHEMA_H
#define SPORE_SCHEMA_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum { SP_SCHEMA_DEPTH_MAX = 32, SP_SCHEMA_PATH_MAX = 256 };

/* Added by the implementation: the most subschemas a schema may hold once
 * every $ref is inlined (a definition used n times counts n times), so that
 * a check costs at most this many schema nodes per value node however the
 * definitions share each other (rule "size"). */
enum { SP_SCHEMA_NODES_MAX = 10000 };

typedef struct sp_schema sp_schema;

/* Where and why a schema or a value was refused. `path` is a JSON Pointer
 * (RFC 6901) into the schema (compile) or into the value (check), "" for
 * the root, cut with "..." past SP_SCHEMA_PATH_MAX - 1 bytes; `rule` names
 * the keyword ("type", "required", "additionalProperties", "maxLength",
 * "$ref", "depth", ...); `message` is one sentence without the value. */
typedef struct sp_schema_error {
    char path[SP_SCHEMA_PATH_MAX];
    char rule[32];
    char message[160];
} sp_schema_error;

/* Compile `doc`. Returns 0 and *out, or -1 with *err filled (the document
 * is outside the subset) or -2 when out of memory. */
int sp_schema_compile(const json_t *doc, sp_schema **out, sp_schema_error *err);

/* 0: `value` matches; 1: it does not (*err says where and which rule);
 * -2: out of memory. */
int sp_schema_check(const sp_schema *schema, const json_t *value, sp_schema_error *err);

void sp_schema_free(sp_schema *schema);

#endif
