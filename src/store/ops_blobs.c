/*
 * ops_blobs.c - content-addressed bytes and the per-store secret: put_blob,
 * get_blob, get_package and secret.
 *
 * Blobs (sealed runner modules and assets, runners.md §2) are addressed by
 * "sha256:" + hex SHA-256 of the raw bytes (conflict/blob.digest-mismatch,
 * quota/blob.too-large); put is idempotent. Packages are written only by
 * create_run and read here by their package digest. The secret is 32 random
 * bytes created on first use and shared by every worker of the store.
 *
 * What it must never do: store bytes under a digest they do not have, or
 * replace an existing secret.
 */
#include <openssl/rand.h>
#include <stdlib.h>

#include "store/logic.h"

#define SECRET_LEN 32

static sp_store_rc copy_out(const sp_db_rows *rows, void **bytes, size_t *len, bool *found,
                            sp_error *err)
{
    char *copy = NULL;
    if (rows->nrows == 0)
        return SP_STORE_OK;
    if (!lg_dup(&copy, len, rows, 0, 0))
        return lg_encode_fail(err, true, "bytes");
    *bytes = copy;
    *found = true;
    return SP_STORE_OK;
}

sp_store_rc sp_store_put_blob(sp_store *s, const char *digest, const void *bytes, size_t len,
                              sp_error *err)
{
    sp_store_rc rc = lg_check_digest("blob digest", digest, err);
    if (rc)
        return rc;
    if (len > SP_STORE_BLOB_MAX)
        return lg_fail(err, SP_STORE_QUOTA, "blob.too-large", "blob is larger than %u bytes",
                       SP_STORE_BLOB_MAX);
    char actual[SP_DIGEST_TEXT_LEN + 1];
    sp_sha256_text(bytes, len, actual);
    if (strcmp(actual, digest) != 0)
        return lg_fail(err, SP_STORE_CONFLICT, "blob.digest-mismatch",
                       "blob digest %s does not match its bytes (%s)", digest, actual);
    if ((rc = lg_begin(s, true, err)))
        return rc;
    rc = LG_Q(s, NULL, err, "INSERT INTO blobs (digest, body) VALUES (?, ?) ON CONFLICT DO NOTHING",
              DB_TEXT(digest), DB_BLOB(bytes, len));
    if (rc) {
        lg_rollback(s);
        return rc;
    }
    return lg_commit(s, err);
}

sp_store_rc sp_store_get_blob(sp_store *s, const char *digest, void **bytes, size_t *len,
                              bool *found, sp_error *err)
{
    *bytes = NULL;
    *len = 0;
    *found = false;
    sp_store_rc rc = lg_check_digest("blob digest", digest, err);
    sp_db_rows rows = {0};
    if (!rc)
        rc = LG_R(s, &rows, err, "SELECT body FROM blobs WHERE digest = ?", DB_TEXT(digest));
    if (!rc)
        rc = copy_out(&rows, bytes, len, found, err);
    sp_db_rows_free(&rows);
    return rc;
}

sp_store_rc sp_store_get_package(sp_store *s, const char *digest, char **bytes, size_t *len,
                                 bool *found, sp_error *err)
{
    *bytes = NULL;
    *len = 0;
    *found = false;
    sp_store_rc rc = lg_check_digest("package digest", digest, err);
    sp_db_rows rows = {0};
    if (!rc)
        rc = LG_R(s, &rows, err, "SELECT body FROM packages WHERE digest = ?", DB_TEXT(digest));
    if (!rc)
        rc = copy_out(&rows, (void **)bytes, len, found, err);
    sp_db_rows_free(&rows);
    return rc;
}

/* ---- the secret ---- */

static bool unhex(const char *hex, size_t len, unsigned char *out)
{
    if (!hex || len != 2 * SECRET_LEN)
        return false;
    for (size_t i = 0; i < SECRET_LEN; i++) {
        unsigned v = 0;
        for (size_t j = 0; j < 2; j++) {
            char c = hex[2 * i + j];
            unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                         : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                                                : 16u;
            if (d == 16u)
                return false;
            v = v * 16 + d;
        }
        out[i] = (unsigned char)v;
    }
    return true;
}

static sp_store_rc read_secret(sp_store *s, unsigned char *out, bool *found, sp_error *err)
{
    sp_db_rows rows;
    sp_store_rc rc =
        lg_query(s, "SELECT value FROM meta WHERE key = 'secret'", NULL, 0, &rows, NULL, err);
    *found = rc == SP_STORE_OK && rows.nrows == 1;
    if (*found && !unhex(lg_text(&rows, 0, 0), lg_len(&rows, 0, 0), out))
        rc = lg_fail(err, SP_STORE_CORRUPT, "store.corrupt", "the store secret is malformed");
    sp_db_rows_free(&rows);
    return rc;
}

static sp_store_rc create_secret(sp_store *s, sp_error *err)
{
    unsigned char raw[SECRET_LEN];
    char hex[2 * SECRET_LEN + 1];
    if (RAND_bytes(raw, SECRET_LEN) != 1)
        return lg_fail(err, SP_STORE_UNAVAILABLE, "store.random", "no random bytes available");
    sp_hex(raw, SECRET_LEN, hex);
    return LG_Q(s, NULL, err,
                "INSERT INTO meta (key, value) VALUES ('secret', ?) ON CONFLICT DO NOTHING",
                DB_TEXT(hex));
}

sp_store_rc sp_store_secret(sp_store *s, unsigned char out[32], sp_error *err)
{
    bool found = false;
    sp_store_rc rc = lg_begin(s, false, err);
    if (rc)
        return rc;
    rc = read_secret(s, out, &found, err);
    lg_rollback(s);
    if (rc || found)
        return rc;
    if ((rc = lg_begin(s, true, err)))
        return rc;
    rc = create_secret(s, err);
    if (rc == SP_STORE_OK)
        rc = read_secret(s, out, &found, err);
    if (rc) {
        lg_rollback(s);
        return rc;
    }
    return lg_commit(s, err);
}
