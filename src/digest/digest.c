/*
 * digest.c - runspore/v1 digest framing over OpenSSL's SHA-256 (see digest.h).
 * Must never change the framing: every byte is part of the wire format.
 * SHA-256 is fetched from libcrypto once per process (not once per digest:
 * a transition computes several).
 */
#include "digest/digest.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static const char PREFIX[] = "runspore/v1/";

void sp_hex(const unsigned char *bytes, size_t len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hex[bytes[i] >> 4];
        out[2 * i + 1] = hex[bytes[i] & 15];
    }
    out[2 * len] = '\0';
}

static EVP_MD *sha256_md; /* fetched once, kept for the life of the process */
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void fetch_sha256(void) { sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL); }

void sp_hasher_begin(sp_hasher *h, const char *tag)
{
    pthread_once(&sha256_once, fetch_sha256);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, sha256_md ? sha256_md : EVP_sha256(), NULL)) {
        /* libcrypto without SHA-256 or without memory for a context: a broken
         * process, not a case any caller can handle (an invariant) */
        fprintf(stderr, "spore: libcrypto cannot compute SHA-256\n");
        abort();
    }
    EVP_DigestUpdate(ctx, PREFIX, sizeof PREFIX - 1);
    EVP_DigestUpdate(ctx, tag, strlen(tag) + 1); /* the tag and its 0x00 */
    h->ctx = ctx;
}

void sp_hasher_part(sp_hasher *h, const void *data, size_t len)
{
    unsigned char be[8];
    uint64_t n = len;
    for (int k = 7; k >= 0; k--, n >>= 8)
        be[k] = (unsigned char)(n & 0xFF);
    EVP_DigestUpdate(h->ctx, be, 8);
    if (len)
        EVP_DigestUpdate(h->ctx, data, len);
}

static void hasher_end_raw(sp_hasher *h, unsigned char out[32])
{
    unsigned int outlen = 0;
    EVP_DigestFinal_ex(h->ctx, out, &outlen);
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
}

void sp_hasher_end_text(sp_hasher *h, char out[SP_DIGEST_TEXT_LEN + 1])
{
    unsigned char raw[32];
    hasher_end_raw(h, raw);
    memcpy(out, "sha256:", 7);
    sp_hex(raw, 32, out + 7);
}

void sp_hash_raw(const char *tag, const sp_part *parts, size_t nparts, unsigned char out[32])
{
    sp_hasher h;
    sp_hasher_begin(&h, tag);
    for (size_t i = 0; i < nparts; i++)
        sp_hasher_part(&h, parts[i].data, parts[i].len);
    hasher_end_raw(&h, out);
}

void sp_hash_text(const char *tag, const sp_part *parts, size_t nparts, char *out)
{
    unsigned char raw[32];
    sp_hash_raw(tag, parts, nparts, raw);
    memcpy(out, "sha256:", 7);
    sp_hex(raw, 32, out + 7);
}

void sp_digest_one(const char *tag, const char *bytes, size_t len, char out[SP_DIGEST_TEXT_LEN + 1])
{
    sp_part p = {bytes, len};
    sp_hash_text(tag, &p, 1, out);
}

void sp_digest_request(const char *operation, const char *body, size_t len,
                       char out[SP_DIGEST_TEXT_LEN + 1])
{
    sp_part p[2] = {{operation, strlen(operation)}, {body, len}};
    sp_hash_text("request", p, 2, out);
}

void sp_derive_id(const char *prefix, const char *tag, const sp_part *parts, size_t nparts,
                  char out[SP_ID_LEN + 1])
{
    unsigned char raw[32];
    sp_hash_raw(tag, parts, nparts, raw);
    memcpy(out, prefix, 4);
    sp_hex(raw, 16, out + 4);
}

static sp_part str_part(const char *s) { return (sp_part){s, strlen(s)}; }

void sp_invocation_id(const char *tenant, const char *run_id, const char *activation_id,
                      char out[SP_ID_LEN + 1])
{
    sp_part p[3] = {str_part(tenant), str_part(run_id), str_part(activation_id)};
    sp_derive_id("inv_", "invocation", p, 3, out);
}

void sp_command_id(const char *tenant, const char *run_id, const char *activation_id,
                   uint32_t ordinal, char out[SP_ID_LEN + 1])
{
    char ord[16];
    snprintf(ord, sizeof ord, "%u", ordinal);
    sp_part p[4] = {str_part(tenant), str_part(run_id), str_part(activation_id), str_part(ord)};
    sp_derive_id("cmd_", "command", p, 4, out);
}

void sp_run_id_from_start_key(const char *tenant, const char *start_key, char out[SP_ID_LEN + 1])
{
    sp_part p[2] = {str_part(tenant), str_part(start_key)};
    sp_derive_id("run_", "run", p, 2, out);
}

void sp_sha256_text(const void *data, size_t len, char out[SP_DIGEST_TEXT_LEN + 1])
{
    unsigned char raw[32];
    unsigned int n = 0;
    EVP_Digest(data, len, raw, &n, EVP_sha256(), NULL);
    memcpy(out, "sha256:", 7);
    sp_hex(raw, 32, out + 7);
}
