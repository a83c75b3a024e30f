/*
 * container.c - the artifact's byte layout (see container.h). Never uses
 * a size or an offset before its bound is checked.
 */
#include "authoring/container.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "authoring/paths.h"
#include "digest/digest.h"

#define SHA256_BYTES 32

static void put_be(sp_buf *b, uint64_t v, int bytes)
{
    unsigned char out[8];
    for (int i = 0; i < bytes; i++)
        out[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
    sp_buf_append(b, out, (size_t)bytes);
}

static uint64_t get_be(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = (v << 8) | p[i];
    return v;
}

/* The raw SHA-256 of `len` bytes (through the digest component, the one
 * place spore hashes). */
static void sha256(const char *bytes, size_t len, unsigned char out[SHA256_BYTES])
{
    char text[SP_DIGEST_TEXT_LEN + 1];
    sp_sha256_text(bytes, len, text);
    for (int i = 0; i < SHA256_BYTES; i++) {
        const char *h = text + 7 + 2 * i;
        int hi = h[0] <= '9' ? h[0] - '0' : h[0] - 'a' + 10;
        int lo = h[1] <= '9' ? h[1] - '0' : h[1] - 'a' + 10;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
}

static int name_cmp(const sp_artifact_member *a, const sp_artifact_member *b)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);
    return c ? c : (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

int sp_container_write(const sp_artifact_member *members, size_t n, sp_buf *out, sp_error *err)
{
    if (n == 0 || n > SP_ARTIFACT_MEMBERS_MAX)
        return sp_fail(err, "build.too-large", "an artifact holds 1 to %d members, not %zu",
                       SP_ARTIFACT_MEMBERS_MAX, n);
    sp_buf_append(out, SP_ARTIFACT_MAGIC, SP_ARTIFACT_MAGIC_LEN);
    put_be(out, SP_ARTIFACT_VERSION, 4);
    put_be(out, n, 4);
    for (size_t i = 0; i < n; i++) {
        const sp_artifact_member *m = &members[i];
        if ((i && name_cmp(&members[i - 1], m) >= 0) || m->name_len > SP_ARTIFACT_NAME_MAX ||
            !sp_relpath_is_normal(m->name, m->name_len))
            return sp_fail(err, "internal.artifact", "member %.*s is misnamed or out of order",
                           (int)m->name_len, m->name);
        if (m->len > SP_ARTIFACT_MEMBER_MAX)
            return sp_fail(err, "build.too-large", "member %.*s is larger than %u bytes",
                           (int)m->name_len, m->name, SP_ARTIFACT_MEMBER_MAX);
        unsigned char sha[SHA256_BYTES];
        sha256(m->bytes, m->len, sha);
        put_be(out, SP_ARTIFACT_MEMBER_FILE, 1);
        put_be(out, 0, 1);
        put_be(out, m->name_len, 2);
        put_be(out, 0, 4);
        put_be(out, m->len, 8);
        sp_buf_append(out, sha, sizeof sha);
        sp_buf_append(out, m->name, m->name_len);
    }
    for (size_t i = 0; i < n; i++)
        sp_buf_append(out, members[i].bytes, members[i].len);
    if (out->over_limit || out->len > SP_ARTIFACT_BYTES_MAX)
        return sp_fail(err, "build.too-large", "the artifact would be larger than %u bytes",
                       SP_ARTIFACT_BYTES_MAX);
    return out->oom ? sp_oom(err) : 0;
}

/* ---- reading ---- */

typedef struct reader {
    const unsigned char *s;
    size_t len, at;
    sp_error *err;
} reader;

static int header(reader *r, size_t *count)
{
    if (r->len < SP_ARTIFACT_MAGIC_LEN || memcmp(r->s, SP_ARTIFACT_MAGIC, SP_ARTIFACT_MAGIC_LEN))
        return sp_fail(r->err, "artifact.magic",
                       "not a spore artifact (it does not start with the artifact magic)");
    if (r->len < SP_ARTIFACT_HEADER_BYTES)
        return sp_fail(r->err, "artifact.truncated", "the artifact ends inside its header");
    uint64_t version = get_be(r->s + 8, 4);
    if (version != SP_ARTIFACT_VERSION)
        return sp_fail(r->err, "artifact.version",
                       "artifact format version %llu; this spore reads version %d",
                       (unsigned long long)version, SP_ARTIFACT_VERSION);
    if (r->len > SP_ARTIFACT_BYTES_MAX)
        return sp_fail(r->err, "artifact.too-large", "the artifact is larger than %u bytes",
                       SP_ARTIFACT_BYTES_MAX);
    *count = (size_t)get_be(r->s + 12, 4);
    if (*count == 0 || *count > SP_ARTIFACT_MEMBERS_MAX)
        return sp_fail(r->err, "artifact.too-large", "the artifact declares %zu members (1 to %d)",
                       *count, SP_ARTIFACT_MEMBERS_MAX);
    r->at = SP_ARTIFACT_HEADER_BYTES;
    return 0;
}

/* One entry: its checks in the order of the format's description. */
static int entry(reader *r, size_t index, sp_artifact_member *m, unsigned char sha[32])
{
    if (r->len - r->at < SP_ARTIFACT_ENTRY_BYTES)
        return sp_fail(r->err, "artifact.truncated", "the artifact ends inside entry %zu", index);
    const unsigned char *e = r->s + r->at;
    size_t name_len = (size_t)get_be(e + 2, 2);
    uint64_t size = get_be(e + 8, 8);
    if (e[1] != 0 || get_be(e + 4, 4) != 0)
        return sp_fail(r->err, "artifact.invalid", "entry %zu has reserved bytes that are not 0",
                       index);
    r->at += SP_ARTIFACT_ENTRY_BYTES;
    if (r->len - r->at < name_len)
        return sp_fail(r->err, "artifact.truncated", "the artifact ends inside entry %zu", index);
    *m = (sp_artifact_member){(const char *)r->s + r->at, name_len, NULL, (size_t)size};
    memcpy(sha, e + 16, 32);
    r->at += name_len;
    if (e[0] != SP_ARTIFACT_MEMBER_FILE)
        return sp_fail_details(r->err, "artifact.member-type",
                               json_pack("{s:s%,s:i}", "member", m->name, name_len, "type", e[0]),
                               "member \"%.*s\" is of type %u (%s); an artifact holds regular "
                               "files only",
                               (int)(name_len > 100 ? 100 : name_len), m->name, e[0],
                               e[0] == 2 ? "a symlink" : e[0] == 5 ? "a folder" : "not a file");
    if (name_len == 0 || name_len > SP_ARTIFACT_NAME_MAX ||
        !sp_relpath_is_normal(m->name, name_len))
        return sp_fail_details(r->err, "artifact.member-path",
                               json_pack("{s:s%}", "member", m->name, name_len),
                               "member name \"%.*s\" is not a normal relative path (no leading "
                               "/, no . or .. component, at most %d bytes)",
                               (int)(name_len > 100 ? 100 : name_len), m->name,
                               SP_ARTIFACT_NAME_MAX);
    if (size > SP_ARTIFACT_MEMBER_MAX)
        return sp_fail_details(r->err, "artifact.member-size",
                               json_pack("{s:s%}", "member", m->name, name_len),
                               "member \"%.*s\" declares %llu bytes; a member holds at most %u",
                               (int)name_len, m->name, (unsigned long long)size,
                               SP_ARTIFACT_MEMBER_MAX);
    return 0;
}

static int cmp_members(const void *x, const void *y) { return name_cmp(x, y); }

/* No name twice (reported before order, which a duplicate also breaks),
 * then strictly ascending order. */
static int names(reader *r, const sp_artifact_member *m, size_t n)
{
    sp_artifact_member *sorted = malloc(n * sizeof *sorted);
    if (!sorted)
        return sp_oom(r->err);
    memcpy(sorted, m, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_members);
    for (size_t i = 1; i < n; i++)
        if (name_cmp(&sorted[i - 1], &sorted[i]) == 0) {
            json_t *details = json_pack("{s:s%}", "member", sorted[i].name, sorted[i].name_len);
            int rc = sp_fail_details(r->err, "artifact.member-duplicate", details,
                                     "member \"%.*s\" appears twice", (int)sorted[i].name_len,
                                     sorted[i].name);
            free(sorted);
            return rc;
        }
    free(sorted);
    for (size_t i = 1; i < n; i++)
        if (name_cmp(&m[i - 1], &m[i]) > 0)
            return sp_fail(r->err, "artifact.member-order",
                           "member \"%.*s\" stands after \"%.*s\": members are in ascending "
                           "byte order of names",
                           (int)m[i].name_len, m[i].name, (int)m[i - 1].name_len, m[i - 1].name);
    return 0;
}

/* The data area: each member's bytes, checked against its digest. */
static int data(reader *r, sp_artifact_member *m, size_t n, const unsigned char (*sha)[32])
{
    for (size_t i = 0; i < n; i++) {
        if (r->len - r->at < m[i].len)
            return sp_fail(r->err, "artifact.truncated", "the artifact ends inside member \"%.*s\"",
                           (int)m[i].name_len, m[i].name);
        m[i].bytes = (const char *)r->s + r->at;
        r->at += m[i].len;
        unsigned char got[SHA256_BYTES];
        sha256(m[i].bytes, m[i].len, got);
        if (memcmp(got, sha[i], sizeof got) != 0)
            return sp_fail_details(r->err, "artifact.member-digest",
                                   json_pack("{s:s%}", "member", m[i].name, m[i].name_len),
                                   "member \"%.*s\" does not match its digest (the file is damaged "
                                   "or was changed)",
                                   (int)m[i].name_len, m[i].name);
    }
    if (r->at != r->len)
        return sp_fail(r->err, "artifact.trailing-bytes",
                       "%zu bytes follow the last member", r->len - r->at);
    return 0;
}

int sp_container_read(const char *bytes, size_t len, sp_artifact_member **members, size_t *n,
                      sp_error *err)
{
    reader r = {(const unsigned char *)bytes, len, 0, err};
    *members = NULL;
    *n = 0;
    size_t count = 0;
    if (header(&r, &count))
        return -1;
    sp_artifact_member *m = calloc(count, sizeof *m);
    unsigned char (*sha)[32] = calloc(count, sizeof *sha);
    int rc = m && sha ? 0 : sp_oom(err);
    for (size_t i = 0; i < count && rc == 0; i++)
        rc = entry(&r, i, &m[i], sha[i]);
    if (rc == 0)
        rc = names(&r, m, count);
    if (rc == 0)
        rc = data(&r, m, count, (const unsigned char(*)[32])sha);
    free(sha);
    if (rc) {
        free(m);
        return -1;
    }
    *members = m;
    *n = count;
    return 0;
}
