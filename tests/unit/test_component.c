/*
 * test_component.c - unit tests of the component runner's pieces
 * (runners.md): the one path normalization (§2) and grant matching, the
 * 1 MiB socket reply cap enforced as bytes arrive (§3), openat2
 * confinement of file_read and dir_list, sealed process handles (§5), the
 * world check with exact types (§6), and a jailed call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "json/json.h"
#include "runners/component_handle.h"
#include "runners/component_io.h"
#include "runners/component_spec.h"

static const char *norm(const char *in)
{
    static char out[SP_PATH_MAX];
    return sp_path_normalize(in, strlen(in), out, sizeof out) == SP_PATH_OK ? out : "(refused)";
}

static void test_normalize(void)
{
    CHECK_STR(norm("./tools/../bin/job"), "bin/job");
    CHECK_STR(norm("bin/job"), "bin/job");
    CHECK_STR(norm("./bin/job"), "bin/job");
    CHECK_STR(norm("tools/../bin/job"), "bin/job");
    CHECK_STR(norm("bin//job/"), "bin/job");
    CHECK_STR(norm("a/b/../../c"), "c");
    CHECK_STR(norm("."), ".");
    CHECK_STR(norm("a/.."), ".");
    CHECK_STR(norm("/usr/bin/../bin/sleep"), "/usr/bin/sleep");
    CHECK_STR(norm("//usr///bin/"), "/usr/bin");
    CHECK_STR(norm("/"), "/");
    CHECK_STR(norm("/a/.."), "/");
    char out[64];
    CHECK_INT(sp_path_normalize("../x", 4, out, sizeof out), SP_PATH_ESCAPES);
    CHECK_INT(sp_path_normalize("a/../../x", 9, out, sizeof out), SP_PATH_ESCAPES);
    CHECK_INT(sp_path_normalize("/..", 3, out, sizeof out), SP_PATH_ESCAPES);
    CHECK_INT(sp_path_normalize("", 0, out, sizeof out), SP_PATH_EMPTY);
    CHECK_INT(sp_path_normalize("a\0b", 3, out, sizeof out), SP_PATH_NUL);
    CHECK_INT(sp_path_normalize("bin/*", 5, out, sizeof out), SP_PATH_GLOB);
    CHECK_INT(sp_path_normalize("bin/j?b", 7, out, sizeof out), SP_PATH_GLOB);
    CHECK_INT(sp_path_normalize("bin/[ab]", 8, out, sizeof out), SP_PATH_GLOB);
    CHECK_INT(sp_path_normalize("abcdefgh/ijkl", 13, out, 8), SP_PATH_TOO_LONG);
}

static void test_grants(void)
{
    json_t *action = json_pack(
        "{s:s,s:s,s:{s:[s,s],s:[s],s:[s,s]}}", "kind", "component", "module", "./r/../runner.wasm",
        "grants", "programs", "./tools/../bin/job", "/usr/bin/sleep", "sockets", "/run/x.sock",
        "folders", "data", "/var/log/job");
    sp_component_spec spec;
    sp_error err = {0};
    CHECK(sp_component_spec_parse("action a", action, false, &spec, &err) == 0);
    CHECK_STR(spec.module, "runner.wasm");
    CHECK_STR(sp_component_granted(&spec, SP_GRANT_PROGRAMS, "bin/job", 7), "bin/job");
    CHECK_STR(sp_component_granted(&spec, SP_GRANT_PROGRAMS, "./bin/job", 9), "bin/job");
    CHECK_STR(sp_component_granted(&spec, SP_GRANT_PROGRAMS, "tools/../bin/job", 16), "bin/job");
    CHECK(sp_component_granted(&spec, SP_GRANT_PROGRAMS, "bin/jobs", 8) == NULL);
    CHECK(sp_component_granted(&spec, SP_GRANT_PROGRAMS, "/bin/job", 8) == NULL);
    CHECK(sp_component_granted(&spec, SP_GRANT_PROGRAMS, "../bin/job", 10) == NULL);
    CHECK_STR(sp_component_granted(&spec, SP_GRANT_PROGRAMS, "/usr/bin/../bin/sleep", 21),
              "/usr/bin/sleep");
    CHECK(sp_component_granted(&spec, SP_GRANT_SOCKETS, "/run/y.sock", 11) == NULL);
    char n[SP_PATH_MAX];
    const char *rest = NULL;
    CHECK_STR(sp_component_folder_of(&spec, "data/x/y.txt", 12, n, sizeof n, &rest), "data");
    CHECK_STR(rest, "x/y.txt");
    CHECK_STR(sp_component_folder_of(&spec, "./data", 6, n, sizeof n, &rest), "data");
    CHECK_STR(rest, ".");
    CHECK(sp_component_folder_of(&spec, "data/../secret", 14, n, sizeof n, &rest) == NULL);
    CHECK(sp_component_folder_of(&spec, "database", 8, n, sizeof n, &rest) == NULL);
    CHECK(sp_component_folder_of(&spec, "data/../../x", 12, n, sizeof n, &rest) == NULL);
    CHECK_STR(sp_component_folder_of(&spec, "/var/log/job/a.log", 18, n, sizeof n, &rest),
              "/var/log/job");
    CHECK(sp_component_folder_of(&spec, "/var/log/jobs", 13, n, sizeof n, &rest) == NULL);
    sp_component_spec_free(&spec);
    json_decref(action);

    const char *bad[][2] = {
        {"{\"programs\":[\"bin/*\"]}", "component.grant-unsupported"},
        {"{\"programs\":[\"\"]}", "component.grant-unsupported"},
        {"{\"programs\":[\"a\\u0000b\"]}", "component.grant-unsupported"},
        {"{\"networks\":[\"x\"]}", "component.grant-unsupported"},
        {"{\"sockets\":[\"run/x.sock\"]}", "component.grant-unsupported"},
        {"{\"programs\":[\"a\",\"./a\"]}", "component.grant-unsupported"},
        {"{\"folders\":[\"../up\"]}", "component.grant-escapes"},
        {"{\"folders\":[\"/..\"]}", "component.grant-unsupported"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *grants = json_loads(bad[i][0], JSON_ALLOW_NUL, NULL);
        json_t *a = json_pack("{s:s,s:s,s:o}", "kind", "component", "module", "r.wasm", "grants",
                              grants);
        CHECK(sp_component_spec_parse("action a", a, false, &spec, &err) != 0);
        CHECK_STR(err.code, bad[i][1]);
        sp_error_clear(&err);
        json_decref(a);
    }
}

/* ---- the 1 MiB socket reply cap ---- */

typedef struct feed {
    int fd;
    size_t n;
    bool newline;
} feed;

static void *writer(void *arg)
{
    feed *f = arg;
    char chunk[65536];
    memset(chunk, 'x', sizeof chunk);
    size_t left = f->n;
    while (left > 0) {
        /* send, not write: a reader that closed early is EPIPE, never a SIGPIPE */
        ssize_t w = send(f->fd, chunk, left < sizeof chunk ? left : sizeof chunk, MSG_NOSIGNAL);
        if (w <= 0)
            break;
        left -= (size_t)w;
    }
    if (f->newline && send(f->fd, "\nafter", 6, MSG_NOSIGNAL) < 0) {
        /* the reader may have gone */
    }
    shutdown(f->fd, SHUT_WR);
    return NULL;
}

static sp_io_status reply_of(size_t n, bool newline, size_t *len)
{
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    feed f = {sv[1], n, newline};
    pthread_t t;
    pthread_create(&t, NULL, writer, &f);
    char *out = NULL;
    *len = 0;
    sp_io_status st = sp_socket_read_line(sv[0], UINT64_MAX / 2, &out, len);
    close(sv[0]); /* the writer sees EPIPE if it is still writing */
    pthread_join(t, NULL);
    close(sv[1]);
    free(out);
    return st;
}

static void test_socket_cap(void)
{
    size_t len;
    CHECK_INT(reply_of(SP_SOCKET_REPLY_MAX, false, &len), SP_IO_OK);
    CHECK_INT(len, SP_SOCKET_REPLY_MAX);
    CHECK_INT(reply_of(SP_SOCKET_REPLY_MAX, true, &len), SP_IO_OK);
    CHECK_INT(len, SP_SOCKET_REPLY_MAX);
    CHECK_INT(reply_of(SP_SOCKET_REPLY_MAX + 1, false, &len), SP_IO_TOO_LARGE);
    CHECK_INT(reply_of(SP_SOCKET_REPLY_MAX + 1, true, &len), SP_IO_TOO_LARGE);
    CHECK_INT(reply_of(10, true, &len), SP_IO_OK);
    CHECK_INT(len, 10);
    /* the cap holds while the peer keeps the connection open: no waiting for EOF */
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    feed f = {sv[1], SP_SOCKET_REPLY_MAX + 100, false};
    pthread_t t;
    pthread_create(&t, NULL, writer, &f);
    char *out = NULL;
    CHECK_INT(sp_socket_read_line(sv[0], UINT64_MAX / 2, &out, &len), SP_IO_TOO_LARGE);
    close(sv[0]);
    pthread_join(t, NULL);
    close(sv[1]);
}

/* ---- openat2 confinement ---- */

static void test_beneath(void)
{
    char root[] = "/tmp/spore-beneath.XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/data", root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/data/a.txt", root);
    FILE *fp = fopen(path, "w");
    fputs("hello", fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/secret.txt", root);
    fp = fopen(path, "w");
    fputs("secret", fp);
    fclose(fp);
    char link[512], data[512];
    snprintf(data, sizeof data, "%s/data", root);
    snprintf(link, sizeof link, "%s/data/out", root);
    CHECK(symlink("../secret.txt", link) == 0);
    snprintf(link, sizeof link, "%s/data/abs", root);
    CHECK(symlink(path, link) == 0);
    snprintf(link, sizeof link, "%s/data/in", root);
    CHECK(symlink("a.txt", link) == 0);
    char *bytes = NULL, why[256];
    size_t len = 0;
    bool eof = false;
    CHECK(sp_file_read_beneath(data, "a.txt", 0, 100, &bytes, &len, &eof, why, sizeof why) == 0);
    CHECK(len == 5 && memcmp(bytes, "hello", 5) == 0 && eof);
    free(bytes);
    CHECK(sp_file_read_beneath(data, "a.txt", 1, 2, &bytes, &len, &eof, why, sizeof why) == 0);
    CHECK(len == 2 && memcmp(bytes, "el", 2) == 0 && !eof);
    free(bytes);
    CHECK(sp_file_read_beneath(data, "in", 0, 100, &bytes, &len, &eof, why, sizeof why) == 0);
    free(bytes);
    CHECK(sp_file_read_beneath(data, "out", 0, 100, &bytes, &len, &eof, why, sizeof why) != 0);
    CHECK(strncmp(why, "escapes", 7) == 0);
    CHECK(sp_file_read_beneath(data, "abs", 0, 100, &bytes, &len, &eof, why, sizeof why) != 0);
    CHECK(strncmp(why, "escapes", 7) == 0);
    CHECK(sp_file_read_beneath(data, "../secret.txt", 0, 100, &bytes, &len, &eof, why,
                               sizeof why) != 0);
    CHECK(strncmp(why, "escapes", 7) == 0);
    json_t *list = sp_dir_list_beneath(data, ".", why, sizeof why);
    CHECK(json_array_size(list) == 4);
    CHECK_STR(json_string_value(json_object_get(json_array_get(list, 0), "name")), "a.txt");
    CHECK_STR(json_string_value(json_object_get(json_array_get(list, 1), "type")), "symlink");
    json_decref(list);
    CHECK(sp_dir_list_beneath(data, "..", why, sizeof why) == NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
}

/* ---- sealed handles ---- */

static void test_handles(void)
{
    unsigned char key[32], other[32];
    memset(key, 7, sizeof key);
    memset(other, 8, sizeof other);
    sp_process_handle p = {.pid = 4242, .started = 123456};
    snprintf(p.boot, sizeof p.boot, "%s", "boot-1");
    json_t *h = sp_handle_seal(key, &p, "bin/job", "run_a", "inv_a");
    sp_process_handle out;
    CHECK(h && json_object_size(h) == 7);
    CHECK(sp_handle_open(key, h, "run_a", "inv_a", &out));
    CHECK(out.pid == 4242 && out.started == 123456 && strcmp(out.boot, "boot-1") == 0);
    CHECK(!sp_handle_open(other, h, "run_a", "inv_a", &out)); /* another store */
    CHECK(!sp_handle_open(key, h, "run_b", "inv_a", &out));   /* another run */
    CHECK(!sp_handle_open(key, h, "run_a", "inv_b", &out));   /* another step */
    json_t *altered = json_deep_copy(h);
    json_object_set_new(altered, "pid", json_integer(1234));
    CHECK(!sp_handle_open(key, altered, "run_a", "inv_a", &out));
    json_decref(altered);
    altered = json_deep_copy(h);
    json_object_set_new(altered, "started", json_string("123457"));
    CHECK(!sp_handle_open(key, altered, "run_a", "inv_a", &out));
    json_decref(altered);
    altered = json_deep_copy(h);
    json_object_set_new(altered, "extra", json_true());
    CHECK(!sp_handle_open(key, altered, "run_a", "inv_a", &out));
    json_decref(altered);
    json_t *forged = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:s}", "pid", 1, "started", "1", "boot",
                               "b", "program", "x", "run", "run_a", "invocation", "inv_a", "mac",
                               "0000000000000000000000000000000000000000000000000000000000000000");
    CHECK(!sp_handle_open(key, forged, "run_a", "inv_a", &out));
    json_decref(forged);
    json_decref(h);
}

int main(void)
{
    test_normalize();
    test_grants();
    test_socket_cap();
    test_beneath();
    test_handles();
    return check_done("test_component");
}
