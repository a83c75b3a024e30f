/*
 * hmac.c - HMAC-SHA-256 over OpenSSL (see hmac.h). Never compares MACs with
 * memcmp.
 */
#include "digest/hmac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

#include "digest/digest.h"

void sp_hmac_sha256(const unsigned char *key, size_t key_len, const void *data, size_t len,
                    unsigned char out[SP_HMAC_LEN])
{
    unsigned int n = 0;
    HMAC(EVP_sha256(), key, (int)key_len, data, len, out, &n);
}

void sp_hmac_sha256_hex(const unsigned char *key, size_t key_len, const void *data, size_t len,
                        size_t hex_len, char *out)
{
    unsigned char mac[SP_HMAC_LEN];
    sp_hmac_sha256(key, key_len, data, len, mac);
    if (hex_len > 2 * SP_HMAC_LEN)
        hex_len = 2 * SP_HMAC_LEN;
    sp_hex(mac, hex_len / 2, out);
    OPENSSL_cleanse(mac, sizeof mac);
}

bool sp_mac_equal(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}
