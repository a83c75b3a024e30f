/*
 * base64.h - base64 (RFC 4648 §4) and base64url without padding (§5).
 * Must never read or write outside the given lengths.
 */
#ifndef SPORE_BASE_BASE64_H
#define SPORE_BASE_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes needed to encode n bytes (without the NUL). */
size_t sp_base64_len(size_t n, bool url);

/* Encode into out (sp_base64_len + 1 bytes); NUL-terminated. Standard
 * alphabet with '=' padding, or the URL alphabet without padding. */
void sp_base64_encode(const void *data, size_t n, bool url, char *out);

/* Decode; out must hold at least 3 * (len / 4) + 3 bytes. False on any
 * character outside the alphabet or a malformed length. */
bool sp_base64_decode(const char *text, size_t len, bool url, unsigned char *out, size_t *out_len);

#endif
