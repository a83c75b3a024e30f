/*
 * digest.h - the runspore/v1 digest framing and derived identities
 * (kernel.md §7.3, conformance/VECTORS.md §2).
 *
 * hash(tag, parts) = SHA-256("runspore/v1/" || tag || 0x00 ||
 *                            for each part: u64be(len) || part)
 * rendered "sha256:" + 64 lowercase hex.
 *
 * What it must never do: read a clock or random source, or frame parts in any
 * other way (the digests are part of the wire format).
 */
#ifndef SPORE_DIGEST_DIGEST_H
#define SPORE_DIGEST_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define SP_DIGEST_HEX_LEN 64
#define SP_DIGEST_TEXT_LEN 71 /* "sha256:" + 64 hex */
#define SP_ID_LEN 36          /* "inv_" / "cmd_" / "run_" + 32 hex */

typedef struct sp_part {
    const void *data;
    size_t len;
} sp_part;

/* Incremental framing, for callers with many parts: begin, one call per
 * part, end. Never allocates. */
typedef struct sp_hasher {
    void *ctx; /* EVP_MD_CTX */
} sp_hasher;

void sp_hasher_begin(sp_hasher *h, const char *tag);
void sp_hasher_part(sp_hasher *h, const void *data, size_t len);
void sp_hasher_end_text(sp_hasher *h, char out[SP_DIGEST_TEXT_LEN + 1]);

/* Raw 32-byte SHA-256 of the framing. */
void sp_hash_raw(const char *tag, const sp_part *parts, size_t nparts, unsigned char out[32]);

/* "sha256:<64 hex>" into out (SP_DIGEST_TEXT_LEN + 1 bytes). */
void sp_hash_text(const char *tag, const sp_part *parts, size_t nparts, char *out);

/* Digest of one body part with `tag` ("package", "state", "body"). */
void sp_digest_one(const char *tag, const char *bytes, size_t len, char out[SP_DIGEST_TEXT_LEN + 1]);

/* hash("request", [operation, canonical body]). */
void sp_digest_request(const char *operation, const char *body, size_t len,
                       char out[SP_DIGEST_TEXT_LEN + 1]);

/* prefix + first 32 hex of hash(tag, parts): "inv_…", "cmd_…", "run_…". */
void sp_derive_id(const char *prefix, const char *tag, const sp_part *parts, size_t nparts,
                  char out[SP_ID_LEN + 1]);

void sp_invocation_id(const char *tenant, const char *run_id, const char *activation_id,
                      char out[SP_ID_LEN + 1]);
void sp_command_id(const char *tenant, const char *run_id, const char *activation_id,
                   uint32_t ordinal, char out[SP_ID_LEN + 1]);
void sp_run_id_from_start_key(const char *tenant, const char *start_key, char out[SP_ID_LEN + 1]);

/* Lowercase hex of `len` bytes into out (2*len + 1). */
void sp_hex(const unsigned char *bytes, size_t len, char *out);

/* Plain SHA-256 of bytes as "sha256:<hex>" (used for sealed blobs). */
void sp_sha256_text(const void *data, size_t len, char out[SP_DIGEST_TEXT_LEN + 1]);

#endif
