/*
 * hmac.h - HMAC-SHA-256 (OpenSSL libcrypto, D5) and a constant-time
 * comparison: the one MAC helper behind step tokens (engine/token.c) and
 * sealed process handles (runners/component_handle.c), both keyed with the
 * store's secret.
 *
 * Must never keep the key anywhere but the caller's buffer.
 */
#ifndef SPORE_DIGEST_HMAC_H
#define SPORE_DIGEST_HMAC_H

#include <stdbool.h>
#include <stddef.h>

#define SP_HMAC_LEN 32

void sp_hmac_sha256(const unsigned char *key, size_t key_len, const void *data, size_t len,
                    unsigned char out[SP_HMAC_LEN]);

/* The first hex_len hex digits (even, <= 64) of the MAC, NUL-terminated. */
void sp_hmac_sha256_hex(const unsigned char *key, size_t key_len, const void *data, size_t len,
                        size_t hex_len, char *out);

/* Constant-time equality of two byte strings of length n. */
bool sp_mac_equal(const void *a, const void *b, size_t n);

#endif
