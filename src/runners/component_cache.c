/*
 * component_cache.c - fetching sealed bytes and materializing programs and
 * folders in the content-addressed cache (see component_cache.h). Never
 * hands out a file without checking its digest.
 */
#define _GNU_SOURCE
#include "runners/component_cache.h"

#include <dirent.h>
#include <errno.h>
#include <openssl/evp.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/random.h"
#include "digest/digest.h"
#include "json/json.h"
#include "runners/component_spec.h"

static int artifact(sp_error *err, const char *fmt, const char *a, const char *b)
{
    return sp_fail(err, "component.artifact", fmt, a, b);
}

static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc && errno != EEXIST)
            return -1;
    }
    return mkdir(path, 0700) && errno != EEXIST ? -1 : 0;
}

static bool usable_root(const char *root)
{
    char probe[PATH_MAX];
    snprintf(probe, sizeof probe, "%s", root);
    return mkdirs(probe) == 0 && access(root, W_OK | X_OK) == 0;
}

int sp_cache_dir(const char *sub, char *out, size_t n, sp_error *err)
{
    char root[PATH_MAX] = "";
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        snprintf(root, sizeof root, "%s/spore", xdg);
    if ((!root[0] || !usable_root(root)) && home && home[0] == '/')
        snprintf(root, sizeof root, "%s/.cache/spore", home);
    if (!root[0] || !usable_root(root))
        snprintf(root, sizeof root, "/tmp/spore-cache-%u", (unsigned)getuid());
    struct stat st;
    if (!usable_root(root) || lstat(root, &st) || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
        return sp_fail(err, "component.artifact", "no usable cache directory (tried %s)", root);
    if ((size_t)snprintf(out, n, "%s/%s", root, sub) >= n)
        return sp_fail(err, "component.artifact", "the cache path is too long");
    if (mkdirs(out))
        return sp_fail(err, "component.artifact", "cannot create %s: %s", out, strerror(errno));
    return 0;
}

int sp_cache_fetch(const sp_artifacts *a, const char *digest, void **bytes, size_t *len,
                   sp_error *err)
{
    *bytes = NULL;
    *len = 0;
    if (!a || !a->get_blob)
        return artifact(err, "no store to load %s from%s", digest, "");
    sp_error e = {0};
    int rc = a->get_blob(a->ctx, digest, bytes, len, &e);
    if (rc != 0) {
        int r = sp_fail(err, "component.artifact", "the sealed bytes %s are %s%s%s", digest,
                        rc > 0 ? "missing from the store" : "unreachable", rc > 0 ? "" : ": ",
                        rc > 0 ? "" : e.message);
        sp_error_clear(&e);
        return r;
    }
    char actual[SP_DIGEST_TEXT_LEN + 1];
    sp_sha256_text(*bytes, *len, actual);
    if (strcmp(actual, digest) != 0) {
        free(*bytes);
        *bytes = NULL;
        return artifact(err, "the store's bytes for %s hash to %s", digest, actual);
    }
    return 0;
}

/* The digest of a file's bytes; false when unreadable. */
static bool file_digest(const char *path, char out[SP_DIGEST_TEXT_LEN + 1])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
        EVP_MD_CTX_free(ctx);
        close(fd);
        return false;
    }
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        EVP_DigestUpdate(ctx, buf, (size_t)n);
    close(fd);
    unsigned char md[32];
    unsigned int mdlen = 0;
    bool ok = n == 0 && EVP_DigestFinal_ex(ctx, md, &mdlen) && mdlen == 32;
    EVP_MD_CTX_free(ctx);
    if (ok) {
        memcpy(out, "sha256:", 7);
        sp_hex(md, 32, out + 7);
    }
    return ok;
}

/* Write bytes to `path` atomically with `mode`. */
static int write_atomic(const char *path, const void *bytes, size_t len, mode_t mode)
{
    char tmp[PATH_MAX], rnd[17];
    sp_random_hex(rnd, 8);
    snprintf(tmp, sizeof tmp, "%s.tmp-%s", path, rnd);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    const char *p = bytes;
    size_t left = len;
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(fd);
            unlink(tmp);
            return -1;
        }
        p += n;
        left -= (size_t)n;
    }
    if (fchmod(fd, mode) || fsync(fd) || close(fd) || rename(tmp, path)) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int materialize(const sp_artifacts *a, const char *digest, bool program, char *path,
                       size_t n, sp_error *err)
{
    char dir[PATH_MAX];
    if (sp_cache_dir("blobs", dir, sizeof dir, err))
        return -1;
    if (strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != SP_DIGEST_TEXT_LEN)
        return artifact(err, "not a sealed digest: %s%s", digest, "");
    if ((size_t)snprintf(path, n, "%s/%s%s", dir, digest + 7, program ? ".x" : "") >= n)
        return artifact(err, "the cache path for %s is too long%s", digest, "");
    char have[SP_DIGEST_TEXT_LEN + 1];
    if (file_digest(path, have) && strcmp(have, digest) == 0)
        return 0;
    unlink(path); /* missing or damaged: fetch again */
    void *bytes;
    size_t len;
    if (sp_cache_fetch(a, digest, &bytes, &len, err))
        return -1;
    int rc = write_atomic(path, bytes, len, program ? 0555 : 0444);
    free(bytes);
    if (rc)
        return sp_fail(err, "component.artifact", "cannot write %s: %s", path, strerror(errno));
    return 0;
}

int sp_cache_program(const sp_artifacts *a, const char *digest, char *path, size_t n,
                     sp_error *err)
{
    return materialize(a, digest, true, path, n, err);
}

/* The sealed entries below `entry` as {"<path below>": digest}. */
static json_t *manifest(const json_t *sealed, const char *entry)
{
    json_t *m = json_object();
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)sealed, key, v)
    {
        const char *rest;
        if (m && sp_path_within(entry, key, &rest) && strcmp(rest, ".") != 0)
            json_object_set(m, rest, v);
    }
    return m;
}

static int make_parents(const char *base, const char *rel)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", base, rel) >= sizeof path)
        return -1;
    char *slash = strrchr(path, '/');
    *slash = '\0';
    return mkdirs(path);
}

static int fill_tree(const sp_artifacts *a, const json_t *m, const char *tmp, sp_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)m, key, v)
    {
        char blob[PATH_MAX], dst[PATH_MAX];
        if (materialize(a, json_string_value(v), false, blob, sizeof blob, err))
            return -1;
        if (make_parents(tmp, key) ||
            (size_t)snprintf(dst, sizeof dst, "%s/%s", tmp, key) >= sizeof dst)
            return sp_fail(err, "component.artifact", "cannot lay out %s", key);
        if (link(blob, dst) == 0)
            continue;
        void *bytes;
        size_t len;
        if (sp_cache_fetch(a, json_string_value(v), &bytes, &len, err))
            return -1;
        int rc = write_atomic(dst, bytes, len, 0444);
        free(bytes);
        if (rc)
            return sp_fail(err, "component.artifact", "cannot write %s: %s", dst, strerror(errno));
    }
    return 0;
}

/* Every directory of a finished tree becomes read-only (files already are). */
static void make_read_only(int at, const char *name, int depth)
{
    struct stat st;
    if (depth > 64 || fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
        return;
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0)
        close(fd);
    struct dirent *ent;
    while (d && (ent = readdir(d)))
        if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, ".."))
            make_read_only(dirfd(d), ent->d_name, depth + 1);
    if (d)
        closedir(d);
    fchmodat(at, name, 0555, 0);
}

static void remove_tree(const char *dir);

int sp_cache_tree(const sp_artifacts *a, const json_t *sealed, const char *entry, char *path,
                  size_t n, sp_error *err)
{
    json_t *m = manifest(sealed, entry);
    char *text = m ? sp_json_encode_alloc(m, NULL, NULL) : NULL;
    char trees[PATH_MAX], hex[SP_DIGEST_TEXT_LEN + 1];
    if (!text) {
        json_decref(m);
        return sp_oom(err);
    }
    sp_sha256_text(text, strlen(text), hex);
    free(text);
    int rc = sp_cache_dir("trees", trees, sizeof trees, err);
    if (rc == 0 && (size_t)snprintf(path, n, "%s/%s", trees, hex + 7) >= n)
        rc = sp_fail(err, "component.artifact", "the cache path is too long");
    struct stat st;
    if (rc == 0 && stat(path, &st) != 0) {
        char tmp[PATH_MAX], rnd[17];
        sp_random_hex(rnd, 8);
        snprintf(tmp, sizeof tmp, "%s.tmp-%s", path, rnd);
        rc = mkdir(tmp, 0700) ? sp_fail(err, "component.artifact", "cannot create %s", tmp)
                              : fill_tree(a, m, tmp, err);
        if (rc == 0) {
            make_read_only(AT_FDCWD, tmp, 0);
            if (rename(tmp, path) && errno != ENOTEMPTY && errno != EEXIST)
                rc = sp_fail(err, "component.artifact", "cannot place %s", path);
        }
        remove_tree(tmp); /* a lost race or a failure leaves the temporary behind */
    }
    json_decref(m);
    return rc;
}

/* Remove a temporary tree (bounded depth; directories made writable first). */
static void remove_at(int at, const char *name, int depth)
{
    struct stat st;
    if (depth > 64 || fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW))
        return;
    if (S_ISDIR(st.st_mode)) {
        fchmodat(at, name, 0700, 0);
        int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d && fd >= 0)
            close(fd);
        struct dirent *ent;
        while (d && (ent = readdir(d)))
            if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, ".."))
                remove_at(dirfd(d), ent->d_name, depth + 1);
        if (d)
            closedir(d);
        unlinkat(at, name, AT_REMOVEDIR);
    } else {
        unlinkat(at, name, 0);
    }
}

static void remove_tree(const char *dir)
{
    remove_at(AT_FDCWD, dir, 0);
}
