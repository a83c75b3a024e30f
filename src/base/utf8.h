/*
 * utf8.h - validating, cutting and lossily repairing UTF-8.
 *
 * What it is for: bytes that come from outside (a command's stdout and
 * stderr, messages from embedders) must become valid UTF-8 before they enter
 * a JSON value: jansson refuses invalid UTF-8, and an error message or detail
 * that fails to build would lose the error itself. Every ill-formed sequence
 * becomes one U+FFFD per maximal subpart (Unicode's recommended practice);
 * valid text, including U+0000, is kept byte for byte.
 *
 * What it must never do: produce invalid UTF-8 (overlongs, surrogates, code
 * points above U+10FFFF), cut a character in half, or read past `len`.
 */
#ifndef SPORE_BASE_UTF8_H
#define SPORE_BASE_UTF8_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The length of the well-formed character at s[0..len) (1..4), or 0 when
 * the bytes there are ill-formed or cut short (len >= 1). */
size_t sp_utf8_char_len(const char *s, size_t len);

/* True when s[0..len) is well-formed UTF-8. */
bool sp_utf8_valid(const char *s, size_t len);

/* The length of the longest prefix of s[0..len) that is at most `max` bytes
 * and does not end inside a well-formed character. */
size_t sp_utf8_cut(const char *s, size_t len, size_t max);

/* The number of leading continuation bytes (at most 3) of s[0..len): what to
 * skip when a buffer was cut at its start (a ring's tail). */
size_t sp_utf8_skip_partial(const char *s, size_t len);

/* Where the last at most `max` bytes of the valid UTF-8 text s[0..len)
 * begin without cutting a character: the offset of that suffix. */
size_t sp_utf8_tail_start(const char *s, size_t len, size_t max);

/* s[0..len) with every ill-formed sequence replaced by U+FFFD, as a new
 * NUL-terminated string (*out_len bytes, may be NULL). NULL when out of
 * memory. */
char *sp_utf8_lossy(const char *s, size_t len, size_t *out_len);

/* The same, as a new JSON string. NULL when out of memory. */
json_t *sp_utf8_lossy_json(const char *s, size_t len);

/* Write into dst (capacity cap >= 1, always NUL-terminated) a lossy copy of
 * the C string `src`, cut at a character boundary to fit. Returns the
 * length written. For messages that must be valid and bounded. */
size_t sp_utf8_clean(char *dst, size_t cap, const char *src);

#endif
