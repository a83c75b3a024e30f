/*
 * jsontape.h - the step protocol's own strict JSON parser (agent-step.md §3).
 *
 * What it is for: every protocol line and result.json are parsed here, with
 * the protocol's strictness, which differs from spore's canonical JSON
 * (src/json/): RFC 8259 values of any number type (floats are fine), depth at
 * most 64 containers (a record object is depth 1), no duplicate member names
 * at any depth (compared after unescaping), valid UTF-8 with no unpaired
 * surrogate escapes, no byte order mark, no CR outside strings, and no number
 * whose magnitude overflows a double (1e400 is "Infinity" in disguise).
 *
 * How: one pass builds a flat "tape" of nodes (type, offset and length into
 * the input, index of the node after the subtree), without copying strings.
 * Schema checks then walk the tape; only values that leave the reader (a
 * result's structured output, a kept event) are decoded or converted to
 * jansson. Memory is bounded by the input: at most one 16-byte node per two
 * input bytes, plus a scratch area no larger than the input for duplicate-key
 * checks.
 *
 * What it must never do: accept anything RFC 8259 rejects, recurse deeper
 * than 64 containers, read outside [text, text + len), or allocate more than
 * a constant times the input length.
 */
#ifndef SPORE_AGENT_JSONTAPE_H
#define SPORE_AGENT_JSONTAPE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define SP_JT_MAX_DEPTH 64                  /* containers; the record itself is 1 */
#define SP_JT_MAX_INPUT (64u * 1024 * 1024) /* longest input the tape can index */
#define SP_JT_SAFE_MAX UINT64_C(9007199254740991) /* 2^53 - 1 */

typedef enum sp_jt_type {
    SP_JT_NULL,
    SP_JT_FALSE,
    SP_JT_TRUE,
    SP_JT_NUMBER,
    SP_JT_STRING,
    SP_JT_ARRAY,
    SP_JT_OBJECT,
} sp_jt_type;

enum {
    SP_JT_ESCAPED = 1, /* string: contains backslash escapes */
    SP_JT_INT = 2,     /* number: no fraction, no exponent */
    SP_JT_NEG = 4,     /* number: has a minus sign */
};

typedef struct sp_jt_node {
    uint8_t type;
    uint8_t flags;
    uint32_t start; /* string: first byte after '"'; number: first char; container: its bracket */
    uint32_t len;   /* string: raw bytes between the quotes; number: token bytes;
                       array: elements; object: members */
    uint32_t end;   /* index of the first node after this subtree */
} sp_jt_node;

/* The rule a failed parse broke (stable names, used in violation details). */
#define SP_JT_RULE_SYNTAX "json.syntax"
#define SP_JT_RULE_UTF8 "json.utf8"
#define SP_JT_RULE_BOM "json.bom"
#define SP_JT_RULE_CR "json.cr"
#define SP_JT_RULE_DEPTH "json.depth"
#define SP_JT_RULE_DUPLICATE "json.duplicate-key"
#define SP_JT_RULE_SURROGATE "json.surrogate"
#define SP_JT_RULE_NUMBER "json.number-range"
#define SP_JT_RULE_TOO_LARGE "json.too-large"
#define SP_JT_RULE_MEMORY "json.out-of-memory"

typedef struct sp_jt {
    const char *text;
    size_t len;
    sp_jt_node *nodes;
    size_t n, cap;
    const char *rule; /* NULL after a successful parse */
    size_t err_offset;
    /* duplicate-key scratch, reused across objects and parses */
    void *keys;       /* key references, keys_cap bytes */
    size_t keys_cap;
    char *decoded;
    size_t decoded_cap;
    bool allow_lf; /* LF as whitespace (value-parser mode); never in a protocol line */
    bool allow_cr; /* CR as whitespace too (HTTP bodies: all of RFC 8259's whitespace) */
} sp_jt;

/* A zeroed sp_jt is ready; release with sp_jt_free. */
void sp_jt_free(sp_jt *t);

/* Parse one JSON value that must span all of text[0..len) (leading and
 * trailing space/tab allowed). Returns true, or false with t->rule set.
 * The tape borrows `text`: it must outlive every use of the nodes. */
bool sp_jt_parse(sp_jt *t, const char *text, size_t len);

/* ---- reading the tape ---- */

static inline const sp_jt_node *sp_jt_at(const sp_jt *t, size_t i) { return &t->nodes[i]; }

/* The member value of object node `obj` whose (unescaped) name is `name`;
 * returns its node index or 0 when absent (index 0 is never a member). */
size_t sp_jt_get(const sp_jt *t, size_t obj, const char *name);

/* True when string node `i` unescapes to exactly `s`. */
bool sp_jt_str_eq(const sp_jt *t, size_t i, const char *s);

/* Unescaped bytes of string node `i` appended to `out`. */
void sp_jt_str_decode(const sp_jt *t, size_t i, sp_buf *out);

/* Number of Unicode code points of string node `i`. */
size_t sp_jt_str_chars(const sp_jt *t, size_t i);

/* An integer in 0..2^53-1 written without fraction, exponent or sign. */
bool sp_jt_uint53(const sp_jt *t, size_t i, uint64_t *out);

/* True for a number node with a finite, non-negative value. */
bool sp_jt_nonneg_number(const sp_jt *t, size_t i);

/* Iterate an object's members: first member key index (0 if none), then
 * the next one after the member whose key is at `key`. */
static inline size_t sp_jt_first(const sp_jt *t, size_t obj)
{
    return t->nodes[obj].len ? obj + 1 : 0;
}
static inline size_t sp_jt_next(const sp_jt *t, size_t obj, size_t key)
{
    size_t after = t->nodes[key + 1].end;
    return after < t->nodes[obj].end ? after : 0;
}

/* Convert the subtree at `i` to a jansson value (strings unescaped, keys
 * with their exact bytes, U+0000 included; integers that fit int64 as
 * integers, every other number as a real). NULL when out of memory. */
json_t *sp_jt_to_json(const sp_jt *t, size_t i);

/* Compact JSON text of the subtree at `i` (strings unescaped and re-escaped
 * minimally, number tokens as written) appended to `out`, stopping once
 * `out` holds `max` bytes or more. */
void sp_jt_dump(const sp_jt *t, size_t i, sp_buf *out, size_t max);

#endif
