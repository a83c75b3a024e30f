/*
 * test_artifact.c - the artifact container and its contents
 * (authoring.md §2, docs/authoring.md "The artifact format"): a written
 * artifact reads back, the same inputs give the same bytes, every
 * malformed container (path tricks, duplicates, symlinks, oversize,
 * truncation, damage) and every inconsistent content is refused with its
 * code, and unpacking lays out exactly the sealed files.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "authoring/authoring.h"
#include "check.h"
#include "digest/digest.h"
#include "json/json.h"

static const char MODULE[] = "\0asm-not-really";
static const char DATA[] = "settings: 1\n";

/* A canonical package with one component action sealing r.wasm and
 * data/s.txt, and a granted folder "empty" that holds no file. */
static char *package(size_t *len, char *digest, char *module_digest, char *data_digest)
{
    sp_sha256_text(MODULE, sizeof MODULE - 1, module_digest);
    sp_sha256_text(DATA, sizeof DATA - 1, data_digest);
    json_t *p = json_pack(
        "{s:s,s:s,s:s,s:{s:{s:s,s:s,s:{s:[s,s]},s:{s:s,s:s}}},s:{s:{s:s,s:s,s:{s:s}},s:{s:s}}}",
        "format", "runspore.workflow/0.1", "name", "t", "start", "a", "actions", "job", "kind",
        "component", "module", "r.wasm", "grants", "folders", "data", "empty", "sealed", "r.wasm",
        module_digest, "data/s.txt", data_digest, "nodes", "a", "kind", "activity", "action",
        "job", "outcomes", "ok", "done", "done", "kind", "complete");
    char *bytes = sp_json_encode_alloc(p, len, NULL);
    json_decref(p);
    sp_digest_one("package", bytes, *len, digest);
    return bytes;
}

typedef struct fixture {
    char *package;
    size_t package_len;
    char digest[SP_DIGEST_TEXT_LEN + 1], module[SP_DIGEST_TEXT_LEN + 1], data[SP_DIGEST_TEXT_LEN + 1];
    sp_artifact_blob blobs[2];
} fixture;

static void fixture_init(fixture *f)
{
    f->package = package(&f->package_len, f->digest, f->module, f->data);
    f->blobs[0] = (sp_artifact_blob){f->module, MODULE, sizeof MODULE - 1};
    f->blobs[1] = (sp_artifact_blob){f->data, DATA, sizeof DATA - 1};
}

static int write_artifact(const fixture *f, const sp_folder *folder, sp_buf *out, sp_error *err)
{
    sp_artifact_spec spec = {f->package, f->package_len, f->digest, f->blobs, 2, folder, "9.9.9"};
    return sp_artifact_write(&spec, out, err);
}

/* ---- a raw container, for artifacts the writer would never make ---- */

typedef struct raw_member {
    const char *name;
    const char *bytes;
    size_t len;
    unsigned type;         /* 0: 1 */
    uint64_t declared;     /* 0: len */
    bool wrong_digest;
} raw_member;

static void put_be(sp_buf *b, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--)
        sp_buf_append_char(b, (char)(v >> (8 * i)));
}

static void raw_sha(const char *bytes, size_t len, unsigned char out[32])
{
    char text[SP_DIGEST_TEXT_LEN + 1];
    sp_sha256_text(bytes, len, text);
    for (int i = 0; i < 32; i++) {
        unsigned v;
        sscanf(text + 7 + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
}

static void raw(sp_buf *b, const raw_member *m, size_t n)
{
    sp_buf_append(b, SP_ARTIFACT_MAGIC, SP_ARTIFACT_MAGIC_LEN);
    put_be(b, 1, 4);
    put_be(b, n, 4);
    for (size_t i = 0; i < n; i++) {
        unsigned char sha[32];
        raw_sha(m[i].bytes, m[i].len, sha);
        sha[0] ^= m[i].wrong_digest;
        put_be(b, m[i].type ? m[i].type : 1, 1);
        put_be(b, 0, 1);
        put_be(b, strlen(m[i].name), 2);
        put_be(b, 0, 4);
        put_be(b, m[i].declared ? m[i].declared : m[i].len, 8);
        sp_buf_append(b, sha, 32);
        sp_buf_append_str(b, m[i].name);
    }
    for (size_t i = 0; i < n; i++)
        sp_buf_append(b, m[i].bytes, m[i].len);
}

static void expect_refused(const sp_buf *b, const char *code, const char *what)
{
    sp_artifact a;
    sp_error err = {0};
    int rc = sp_artifact_read(b->data, b->len, &a, &err);
    CHECK(rc == -1);
    if (rc == 0) {
        check_fail(__FILE__, __LINE__, "%s: accepted", what);
        sp_artifact_free(&a);
        return;
    }
    if (strcmp(err.code, code) != 0)
        check_fail(__FILE__, __LINE__, "%s: %s (%s), want %s", what, err.code, err.message, code);
    sp_error_clear(&err);
}

static void expect_raw_refused(const raw_member *m, size_t n, const char *code, const char *what)
{
    sp_buf b = SP_BUF_INIT;
    raw(&b, m, n);
    expect_refused(&b, code, what);
    sp_buf_free(&b);
}

/* ---- tests ---- */

static void test_round_trip(void)
{
    fixture f;
    fixture_init(&f);
    sp_buf one = SP_BUF_INIT, two = SP_BUF_INIT;
    sp_error err = {0};
    CHECK(write_artifact(&f, NULL, &one, &err) == 0);
    CHECK(write_artifact(&f, NULL, &two, &err) == 0);
    CHECK(one.len == two.len && memcmp(one.data, two.data, one.len) == 0);
    CHECK(sp_artifact_magic(one.data, one.len));
    sp_artifact a;
    CHECK(sp_artifact_read(one.data, one.len, &a, &err) == 0);
    CHECK_INT(a.nmembers, 4); /* two blobs, manifest, package */
    CHECK(a.package_len == f.package_len && memcmp(a.package_bytes, f.package, f.package_len) == 0);
    CHECK_STR(json_string_value(json_object_get(a.manifest, "packageDigest")), f.digest);
    CHECK_STR(json_string_value(json_object_get(a.manifest, "name")), "t");
    CHECK_STR(json_string_value(json_object_get(a.manifest, "format")), "runspore.workflow/0.1");
    CHECK_STR(json_string_value(json_object_get(a.manifest, "sporeVersion")), "9.9.9");
    const json_t *sealed = json_object_get(a.manifest, "sealed");
    CHECK_INT(json_array_size(sealed), 2);
    CHECK_STR(json_string_value(json_object_get(json_array_get(sealed, 0), "path")), "data/s.txt");
    CHECK_STR(json_string_value(json_object_get(json_array_get(sealed, 1), "size")), "15");
    const sp_artifact_member *m = sp_artifact_blob_of(&a, f.module);
    CHECK(m && m->len == sizeof MODULE - 1 && memcmp(m->bytes, MODULE, m->len) == 0);
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_sha256_text(one.data, one.len, digest);
    CHECK_STR(a.digest, digest);

    char *dir = NULL;
    CHECK(sp_artifact_unpack(&a, &dir, &err) == 0);
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/r.wasm", dir);
    CHECK(stat(path, &st) == 0 && (size_t)st.st_size == sizeof MODULE - 1);
    snprintf(path, sizeof path, "%s/data/s.txt", dir);
    CHECK(stat(path, &st) == 0 && (size_t)st.st_size == sizeof DATA - 1);
    snprintf(path, sizeof path, "%s/empty", dir);
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode)); /* a granted folder with no file */
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 077) == 0);
    sp_remove_tree(dir);
    CHECK(stat(dir, &st) == -1);
    free(dir);
    sp_artifact_free(&a);
    sp_buf_free(&one);
    sp_buf_free(&two);
    free(f.package);
}

static void test_assets(void)
{
    fixture f;
    fixture_init(&f);
    char tmpl[] = "/tmp/spore-test-artifact-XXXXXX";
    CHECK(mkdtemp(tmpl) != NULL);
    char real[4200];
    snprintf(real, sizeof real, "%s/notes.md", tmpl);
    FILE *fp = fopen(real, "w");
    fputs("# notes\n", fp);
    fclose(fp);
    sp_folder_asset asset = {"docs/notes.md", real, 8};
    sp_folder folder = {.dir = tmpl, .assets = &asset, .nassets = 1};
    sp_buf b = SP_BUF_INIT;
    sp_error err = {0};
    CHECK(write_artifact(&f, &folder, &b, &err) == 0);
    sp_artifact a;
    CHECK(sp_artifact_read(b.data, b.len, &a, &err) == 0);
    const json_t *assets = json_object_get(a.manifest, "assets");
    CHECK_INT(json_array_size(assets), 1);
    CHECK_STR(json_string_value(json_object_get(json_array_get(assets, 0), "path")), "docs/notes.md");
    CHECK_STR(json_string_value(json_object_get(json_array_get(assets, 0), "size")), "8");
    CHECK_INT(a.nmembers, 5);
    sp_artifact_free(&a);
    sp_buf_free(&b);
    asset.size = 9; /* the folder said otherwise: it changed under the build */
    CHECK(write_artifact(&f, &folder, &b, &err) == -1);
    CHECK_STR(err.code, "build.asset-changed");
    sp_error_clear(&err);
    sp_buf_free(&b);
    unlink(real);
    rmdir(tmpl);
    free(f.package);
}

/* The members of a good artifact, to be changed one at a time. */
typedef struct good {
    fixture f;
    sp_buf b;
    sp_artifact a;
    raw_member m[4];
} good;

static void good_init(good *g)
{
    sp_error err = {0};
    fixture_init(&g->f);
    memset(&g->b, 0, sizeof g->b);
    write_artifact(&g->f, NULL, &g->b, &err);
    sp_artifact_read(g->b.data, g->b.len, &g->a, &err);
    for (size_t i = 0; i < 4; i++) {
        static char names[4][128];
        snprintf(names[i], sizeof names[i], "%.*s", (int)g->a.members[i].name_len, g->a.members[i].name);
        g->m[i] = (raw_member){names[i], g->a.members[i].bytes, g->a.members[i].len, 0, 0, false};
    }
}

static void good_free(good *g)
{
    sp_artifact_free(&g->a);
    sp_buf_free(&g->b);
    free(g->f.package);
}

static void test_container_refusals(void)
{
    good g;
    good_init(&g);
    raw_member m[6];
    /* the raw writer reproduces the good artifact byte for byte */
    sp_buf again = SP_BUF_INIT;
    raw(&again, g.m, 4);
    CHECK(again.len == g.b.len && memcmp(again.data, g.b.data, again.len) == 0);
    sp_buf_free(&again);

    static const char *const bad_names[] = {"../x", "/etc/passwd", "a//b", "./a", "a/./b", "a/",
                                            "a/../b", "..", "a\\b", "a\nb"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        memcpy(m, g.m, sizeof g.m);
        m[0].name = bad_names[i];
        expect_raw_refused(m, 4, "artifact.member-path", bad_names[i]);
    }
    memcpy(m, g.m, sizeof g.m);
    m[4] = g.m[3];
    expect_raw_refused(m, 5, "artifact.member-duplicate", "package.json twice");
    memcpy(m, g.m, sizeof g.m);
    m[0] = g.m[1], m[1] = g.m[0];
    expect_raw_refused(m, 4, "artifact.member-order", "blobs swapped");
    memcpy(m, g.m, sizeof g.m);
    m[4] = (raw_member){"zz-link", "../../etc/passwd", 16, 2, 0, false};
    expect_raw_refused(m, 5, "artifact.member-type", "a symlink member");
    m[4].type = 5;
    expect_raw_refused(m, 5, "artifact.member-type", "a folder member");
    memcpy(m, g.m, sizeof g.m);
    m[0].declared = (uint64_t)SP_ARTIFACT_MEMBER_MAX + 1;
    expect_raw_refused(m, 4, "artifact.member-size", "an oversize member");
    memcpy(m, g.m, sizeof g.m);
    m[1].wrong_digest = true;
    expect_raw_refused(m, 4, "artifact.member-digest", "a damaged member");
    memcpy(m, g.m, sizeof g.m);
    m[4] = (raw_member){"zz.txt", "x", 1, 0, 0, false};
    expect_raw_refused(m, 5, "artifact.member-unknown", "an unknown member");
    expect_raw_refused(g.m, 3, "artifact.member-missing", "no package");
    expect_raw_refused(g.m + 1, 3, "artifact.member-missing", "no sealed module blob");
    memcpy(m, g.m, sizeof g.m);
    m[0].bytes = "other bytes";
    m[0].len = 11;
    expect_raw_refused(m, 4, "artifact.member-digest", "a blob whose name is not its digest");
    expect_raw_refused(g.m, 0, "artifact.too-large", "no member at all");

    sp_buf b = SP_BUF_INIT;
    sp_buf_append(&b, g.b.data, g.b.len - 1);
    expect_refused(&b, "artifact.truncated", "the last byte cut");
    b.len = 20;
    expect_refused(&b, "artifact.truncated", "cut in the first entry");
    b.len = 0;
    sp_buf_append(&b, g.b.data, g.b.len);
    sp_buf_append_char(&b, 0);
    expect_refused(&b, "artifact.trailing-bytes", "a byte after the last member");
    b.data[11] = 2; /* version 2 */
    expect_refused(&b, "artifact.version", "version 2");
    b.data[0] = '{';
    expect_refused(&b, "artifact.magic", "a JSON file");
    b.data[0] = (char)0x89;
    b.data[11] = 1;
    b.len--; /* without the trailing byte: good again, but for a reserved byte */
    b.data[17] = 1;
    expect_refused(&b, "artifact.invalid", "a reserved byte that is not 0");
    b.data[17] = 0;
    b.data[14] = 0x20; /* 0x2000 members */
    expect_refused(&b, "artifact.too-large", "8196 members");
    b.len = 5;
    expect_refused(&b, "artifact.magic", "five bytes");
    sp_buf_free(&b);
    good_free(&g);
}

static void test_content_refusals(void)
{
    good g;
    good_init(&g);
    raw_member m[4];
    /* a blob no manifest entry lists, among the others in name order */
    char extra[SP_DIGEST_TEXT_LEN + 1];
    static char name[128];
    sp_sha256_text("zzz", 3, extra);
    snprintf(name, sizeof name, "%s%s", SP_ARTIFACT_BLOB_PREFIX, extra + 7);
    raw_member blobs[3] = {g.m[0], g.m[1], {name, "zzz", 3, 0, 0, false}};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (strcmp(blobs[i].name, blobs[j].name) > 0) {
                raw_member t = blobs[i];
                blobs[i] = blobs[j];
                blobs[j] = t;
            }
    raw_member all[5] = {blobs[0], blobs[1], blobs[2], g.m[2], g.m[3]};
    expect_raw_refused(all, 5, "artifact.member-unreferenced", "an unlisted blob");

    /* a manifest naming another package digest */
    json_t *manifest = json_deep_copy(g.a.manifest);
    json_object_set_new(manifest, "packageDigest", json_string(extra));
    size_t len;
    char *bytes = sp_json_encode_alloc(manifest, &len, NULL);
    memcpy(m, g.m, sizeof g.m);
    m[2].bytes = bytes;
    m[2].len = len;
    expect_raw_refused(m, 4, "artifact.manifest", "another package digest");
    free(bytes);
    json_object_set_new(manifest, "packageDigest", json_string(g.f.digest));
    json_object_set_new(manifest, "extra", json_true());
    bytes = sp_json_encode_alloc(manifest, &len, NULL);
    m[2].bytes = bytes;
    m[2].len = len;
    expect_raw_refused(m, 4, "artifact.manifest", "an unknown manifest member");
    free(bytes);
    json_decref(manifest);
    memcpy(m, g.m, sizeof g.m);
    m[2].bytes = "{\"a\": 1}";
    m[2].len = 8;
    expect_raw_refused(m, 4, "artifact.manifest", "a manifest that is not canonical");
    memcpy(m, g.m, sizeof g.m);
    m[3].bytes = "{ }";
    m[3].len = 3;
    expect_raw_refused(m, 4, "artifact.package", "a package that is not canonical");
    memcpy(m, g.m, sizeof g.m);
    m[3].bytes = "{}";
    m[3].len = 2;
    expect_raw_refused(m, 4, "artifact.manifest", "a package the manifest does not name");
    good_free(&g);
}

static void test_sealed_paths_refused(void)
{
    fixture f;
    fixture_init(&f);
    json_t *p = sp_json_parse(f.package, f.package_len, NULL);
    json_t *sealed = json_object_get(json_object_get(json_object_get(p, "actions"), "job"), "sealed");
    json_object_set_new(sealed, "../escape", json_string(f.data));
    free(f.package);
    f.package = sp_json_encode_alloc(p, &f.package_len, NULL);
    sp_digest_one("package", f.package, f.package_len, f.digest);
    sp_buf b = SP_BUF_INIT;
    sp_error err = {0};
    CHECK(write_artifact(&f, NULL, &b, &err) == -1);
    CHECK_STR(err.code, "artifact.package");
    sp_error_clear(&err);
    sp_buf_free(&b);
    json_decref(p);
    free(f.package);
}

int main(void)
{
    test_round_trip();
    test_assets();
    test_container_refusals();
    test_content_refusals();
    test_sealed_paths_refused();
    return check_done("test_artifact");
}
