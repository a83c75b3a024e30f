/*
 * decimal.h - counters and timestamps as decimal strings (kernel.md §7.2):
 * "0" or digits without a leading zero, at most 2^63-1.
 *
 * Must never accept signs, spaces, leading zeros or values above 2^63-1.
 */
#ifndef SPORE_JSON_DECIMAL_H
#define SPORE_JSON_DECIMAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_U63_MAX UINT64_C(9223372036854775807)
#define SP_DECIMAL_MAX_LEN 20 /* 19 digits + NUL */

/* Parse a decimal counter; false when malformed or above 2^63-1. */
bool sp_decimal_parse(const char *s, size_t len, uint64_t *out);

/* Parse a JSON string value as a decimal counter. */
bool sp_decimal_from_json(const json_t *v, uint64_t *out);

/* Render into buf (SP_DECIMAL_MAX_LEN + 1 bytes); returns buf. */
char *sp_decimal_format(uint64_t v, char *buf);

/* A new JSON string holding the decimal form (NULL on out-of-memory). */
json_t *sp_decimal_json(uint64_t v);

#endif
