/*
 * test_command_runner.c - H5: the `command` runner's result table, through
 * real processes (engine.md §5), plus the UTF-8 helpers it relies on.
 *
 * Every row of the table, every output mode, stdin delivery, environment,
 * cwd, the stdout and stderr bounds, the process-group kill on timeout, stop
 * from another thread, signals the command sent itself, and no orphan after
 * the worker is SIGKILLed (argv[1] = the runner_worker_child helper). Every
 * run also checks that no descriptor leaked into the test process.
 *
 * The test makes itself a child subreaper so that killed grandchildren come
 * back to it and can be reaped and told apart from live ones.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/utf8.h"
#include "check.h"
#include "json/json.h"
#include "runners/process.h"
#include "runners/registry.h"

static char g_tmp[PATH_MAX];
static const char *g_worker_child;

/* ---- helpers ---- */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The supervisor program's image (src/supervisor/launch.c): one descriptor
 * the process keeps from its first command on, by design. */
static bool is_supervisor_image(const char *name)
{
    char path[300], target[300];
    snprintf(path, sizeof path, "/proc/self/fd/%s", name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0)
        return false;
    target[n] = '\0';
    return strncmp(target, "/memfd:spore-supervisor ", 24) == 0;
}

/* The open descriptors, those of the supervisor's image apart. */
static int count_fds_of(bool images)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.' && is_supervisor_image(e->d_name) == images;
    if (d)
        closedir(d);
    return n;
}

static int count_fds(void)
{
    return count_fds_of(false);
}

static void reap_orphans(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

/* Gone = no such process, or a zombie (killed, not yet reaped). */
static bool pid_gone(pid_t pid)
{
    char path[64], buf[512];
    reap_orphans();
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z';
}

static bool wait_gone(pid_t pid, int ms)
{
    uint64_t until = now_ms() + (uint64_t)ms;
    while (!pid_gone(pid)) {
        if (now_ms() > until)
            return false;
        sleep_ms(10);
    }
    return true;
}

static pid_t read_pid_file(const char *name, int wait_ms)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", g_tmp, name);
    uint64_t until = now_ms() + (uint64_t)wait_ms;
    for (;;) {
        FILE *f = fopen(path, "r");
        int pid = 0;
        if (f) {
            int ok = fscanf(f, "%d", &pid);
            fclose(f);
            if (ok == 1 && pid > 0) {
                unlink(path);
                return pid;
            }
        }
        if (now_ms() > until)
            return -1;
        sleep_ms(10);
    }
}

static sp_runner_ctx make_ctx(sp_stop_signal *stop)
{
    return (sp_runner_ctx){
        .tenant = "default",
        .run_id = "run_0123",
        .node_id = "build",
        .action_id = "act",
        .invocation_id = "inv_abc",
        .effect_key = "inv_abc",
        .attempt = 2,
        .base_dir = g_tmp,
        .traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        .stop = stop,
    };
}

static json_t *sh(const char *script)
{
    return json_pack("{s:s,s:[s,s,s]}", "kind", "command", "argv", "sh", "-c", script);
}

/* Run `action` (reference taken) with `input` (NULL = null) and check that
 * the error, if any, is a well-formed canonical value and no fd leaked. */
static void run_with(const sp_runner_ctx *ctx, json_t *action, const json_t *input,
                     sp_activity_output *out)
{
    int before = count_fds();
    const sp_runner *runner = sp_runner_find("command");
    CHECK(runner && runner->run);
    CHECK_INT(runner->run(ctx, &(sp_runner_action){"act", action, NULL}, input, out), 0);
    CHECK_INT(count_fds(), before);
    CHECK(count_fds_of(true) <= 1); /* made at the first spawn, kept, never made again */
    if (out->kind != SP_OUTPUT_SUCCESS) {
        char *bytes = sp_json_encode_alloc(out->error, NULL, NULL);
        CHECK(bytes != NULL);
        free(bytes);
    }
    json_decref(action);
    reap_orphans();
}

static void run(json_t *action, sp_activity_output *out)
{
    sp_runner_ctx ctx = make_ctx(NULL);
    run_with(&ctx, action, NULL, out);
}

static const char *code_of(const sp_activity_output *o)
{
    return json_string_value(json_object_get(o->error, "code"));
}

static const json_t *detail(const sp_activity_output *o, const char *key)
{
    return json_object_get(json_object_get(o->error, "details"), key);
}

static void expect_failure(sp_activity_output *o, const char *code, bool retryable)
{
    CHECK_INT(o->kind, SP_OUTPUT_FAILURE);
    CHECK_STR(code_of(o), code);
    CHECK_INT(o->retryable, retryable);
}

static void expect_unknown(sp_activity_output *o, const char *code)
{
    CHECK_INT(o->kind, SP_OUTPUT_UNKNOWN);
    CHECK_STR(code_of(o), code);
}

static void expect_output(sp_activity_output *o, const char *outcome, const char *canonical)
{
    CHECK_INT(o->kind, SP_OUTPUT_SUCCESS);
    CHECK_STR(o->outcome ? o->outcome : "ok", outcome);
    char *bytes = o->output ? sp_json_encode_alloc(o->output, NULL, NULL) : strdup("null");
    CHECK_STR(bytes, canonical);
    free(bytes);
}

static json_t *with(json_t *action, const char *key, json_t *value)
{
    json_object_set_new(action, key, value);
    return action;
}

/* ---- utf8.c ---- */

static void test_utf8(void)
{
    CHECK(sp_utf8_valid("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 10));
    CHECK(!sp_utf8_valid("\xC0\xAF", 2));         /* overlong */
    CHECK(!sp_utf8_valid("\xED\xA0\x80", 3));     /* surrogate */
    CHECK(!sp_utf8_valid("\xF4\x90\x80\x80", 4)); /* above U+10FFFF */
    CHECK(!sp_utf8_valid("\xE2\x82", 2));         /* truncated */
    size_t n;
    char *s = sp_utf8_lossy("a\xFF" "b\xE2\x82" "c", 6, &n);
    CHECK_STR(s, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c");
    free(s);
    s = sp_utf8_lossy("\xF0\x9F\x98", 3, &n); /* one maximal subpart, one U+FFFD */
    CHECK_STR(s, "\xEF\xBF\xBD");
    free(s);
    CHECK_INT(sp_utf8_cut("a\xC3\xA9", 3, 2), 1);
    CHECK_INT(sp_utf8_cut("a\xC3\xA9", 3, 3), 3);
    CHECK_INT(sp_utf8_skip_partial("\x82\xACx", 3), 2);
    char buf[4];
    sp_utf8_clean(buf, sizeof buf, "ab\xE2\x82\xAC");
    CHECK_STR(buf, "ab");
    json_t *j = sp_utf8_lossy_json("x\0y", 3);
    CHECK_INT(json_string_length(j), 3);
    json_decref(j);
}

/* ---- the result table, row by row ---- */

static void test_invalid(void)
{
    sp_activity_output o;
    run(json_pack("{s:s}", "kind", "command"), &o);
    expect_failure(&o, "command.invalid", false);
    sp_activity_output_free(&o);
    run(with(sh("true"), "output", json_string("xml")), &o);
    expect_failure(&o, "command.invalid", false);
    sp_activity_output_free(&o);
}

static void test_spawn(void)
{
    sp_activity_output o;
    run(json_pack("{s:s,s:[s]}", "kind", "command", "argv", "/nonexistent/program"), &o);
    expect_failure(&o, "command.spawn", true);
    CHECK_STR(json_string_value(detail(&o, "errno")), "ENOENT");
    CHECK_STR(json_string_value(detail(&o, "step")), "exec");
    sp_activity_output_free(&o);

    run(json_pack("{s:s,s:[s]}", "kind", "command", "argv", "spore-no-such-program"), &o);
    expect_failure(&o, "command.spawn", true);
    CHECK_STR(json_string_value(detail(&o, "errno")), "ENOENT");
    sp_activity_output_free(&o);

    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/not-executable", g_tmp);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("#!/bin/sh\nexit 0\n", f);
        fclose(f);
    }
    chmod(path, 0644);
    run(json_pack("{s:s,s:[s]}", "kind", "command", "argv", path), &o);
    expect_failure(&o, "command.spawn", true);
    CHECK_STR(json_string_value(detail(&o, "errno")), "EACCES");
    sp_activity_output_free(&o);

    run(with(sh("true"), "cwd", json_string("no-such-dir")), &o);
    expect_failure(&o, "command.spawn", true);
    CHECK_STR(json_string_value(detail(&o, "step")), "chdir");
    sp_activity_output_free(&o);
}

/* More descriptors to hand over than the supervisor takes: refused before
 * anything starts (the bound is the supervisor's, src/supervisor/launch.c). */
static void test_pass_fds_bound(void)
{
    static int fds[SP_PROC_PASS_MAX + 1];
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        fds[i] = 0;
    const char *argv[] = {"true", NULL}, *envp[] = {"PATH=/bin:/usr/bin", NULL};
    sp_proc_spec spec = {.argv = argv, .envp = envp, .pass_fds = fds};
    sp_proc_result res;
    for (size_t n = SP_PROC_PASS_MAX; n <= SP_PROC_PASS_MAX + 1; n++) {
        int before = count_fds();
        spec.npass_fds = n;
        sp_proc_run(&spec, &res);
        if (n == SP_PROC_PASS_MAX) {
            CHECK_INT(res.end, SP_PROC_EXITED);
            CHECK_INT(res.exit_code, 0);
        } else {
            CHECK_INT(res.end, SP_PROC_SPAWN_FAILED);
            CHECK_STR(res.spawn_step, "setup");
            CHECK_INT(res.spawn_errno, EMFILE);
            CHECK_INT(res.pgid, 0);
        }
        CHECK_INT(count_fds(), before);
        sp_proc_result_free(&res);
    }
}

static void test_timeout_kills_group(void)
{
    sp_activity_output o;
    uint64_t t0 = now_ms();
    run(with(sh("sleep 100 & echo $! > bg.pid; echo $$ > sh.pid; wait"), "timeoutMs",
             json_integer(400)),
        &o);
    uint64_t took = now_ms() - t0;
    expect_unknown(&o, "command.timeout");
    CHECK_INT(json_integer_value(detail(&o, "timeoutMs")), 400);
    CHECK(took >= 400 && took < 3000);
    pid_t bg = read_pid_file("bg.pid", 100), shell = read_pid_file("sh.pid", 100);
    CHECK(bg > 0 && shell > 0);
    if (bg > 0 && shell > 0) {
        CHECK(wait_gone(shell, 1000));
        CHECK(wait_gone(bg, 1000));
    }
    sp_activity_output_free(&o);

    run(with(sh("sleep 5"), "timeoutMs", json_string("0")), &o); /* decimal string, 0 ms */
    expect_unknown(&o, "command.timeout");
    sp_activity_output_free(&o);
}

typedef struct stopper {
    sp_stop_signal *stop;
    int after_ms;
} stopper;

static void *fire_later(void *arg)
{
    stopper *s = arg;
    sleep_ms(s->after_ms);
    sp_stop_fire(s->stop);
    return NULL;
}

/* The eventfd is made on first use: made after the signal fired, it is
 * readable at once; made before, it becomes readable when fired. */
static void test_stop_fd(void)
{
    sp_stop_signal late, early;
    CHECK_INT(sp_stop_init(&late, NULL), 0);
    CHECK_INT(sp_stop_init(&early, NULL), 0);
    int fd_early = sp_stop_fd(&early);
    CHECK(fd_early >= 0 && sp_stop_fd(&early) == fd_early);
    struct pollfd pf = {fd_early, POLLIN, 0};
    CHECK_INT(poll(&pf, 1, 0), 0);
    sp_stop_fire(&early);
    sp_stop_fire(&late);
    CHECK_INT(poll(&pf, 1, 0), 1);
    pf.fd = sp_stop_fd(&late);
    CHECK(pf.fd >= 0);
    CHECK_INT(poll(&pf, 1, 0), 1);
    CHECK(sp_stop_fired(&late) && sp_stop_fired(&early));
    sp_stop_destroy(&late);
    sp_stop_destroy(&early);
}

static void test_stop(void)
{
    sp_stop_signal stop;
    CHECK_INT(sp_stop_init(&stop, NULL), 0);
    /* the signal's eventfd is made on first use and lives until
     * sp_stop_destroy: made here, so the run's descriptor count is even */
    CHECK(sp_stop_fd(&stop) >= 0);
    sp_runner_ctx ctx = make_ctx(&stop);
    stopper s = {&stop, 200};
    pthread_t t;
    pthread_create(&t, NULL, fire_later, &s);
    sp_activity_output o;
    uint64_t t0 = now_ms();
    run_with(&ctx, with(sh("sleep 30 & echo $! > bg.pid; sleep 30"), "timeoutMs",
                        json_integer(60000)),
             NULL, &o);
    uint64_t took = now_ms() - t0;
    pthread_join(t, NULL);
    expect_unknown(&o, "command.stopped");
    CHECK(took >= 200 && took < 1500);
    pid_t bg = read_pid_file("bg.pid", 100);
    CHECK(bg > 0 && wait_gone(bg, 1000));
    sp_activity_output_free(&o);
    sp_stop_destroy(&stop);
}

static void test_signaled(void)
{
    sp_activity_output o;
    run(sh("ulimit -c 0; echo dying >&2; kill -SEGV $$"), &o);
    expect_unknown(&o, "command.signaled");
    CHECK_STR(json_string_value(detail(&o, "signalName")), "SIGSEGV");
    CHECK_INT(json_integer_value(detail(&o, "signal")), SIGSEGV);
    CHECK_STR(json_string_value(detail(&o, "stderrTail")), "dying\n");
    sp_activity_output_free(&o);
    run(sh("kill -KILL $$"), &o);
    expect_unknown(&o, "command.signaled");
    CHECK_STR(json_string_value(detail(&o, "signalName")), "SIGKILL");
    sp_activity_output_free(&o);
}

static json_t *outcomes(const char *a, const char *b)
{
    return b ? json_pack("[s,s]", a, b) : json_pack("[s]", a);
}

static void test_exit_outcomes(void)
{
    sp_activity_output o;
    json_t *a = with(sh("exit 3"), "outcomes", outcomes("ok", "later"));
    run(with(a, "exitOutcomes", json_pack("{s:s}", "3", "later")), &o);
    expect_output(&o, "later", "{\"exitCode\":3,\"stdout\":\"\"}");
    sp_activity_output_free(&o);

    a = with(sh("printf hi"), "outcomes", outcomes("done", NULL));
    run(with(a, "exitOutcomes", json_pack("{s:s}", "0", "done")), &o);
    expect_output(&o, "done", "{\"exitCode\":0,\"stdout\":\"hi\"}");
    sp_activity_output_free(&o);

    /* listed codes map, others still fail */
    a = with(sh("exit 4"), "outcomes", outcomes("ok", "later"));
    run(with(a, "exitOutcomes", json_pack("{s:s}", "3", "later")), &o);
    expect_failure(&o, "command.exit", true);
    sp_activity_output_free(&o);
}

static void test_exit_zero_and_nonzero(void)
{
    sp_activity_output o;
    run(sh("printf 'hello'"), &o);
    expect_output(&o, "ok", "{\"exitCode\":0,\"stdout\":\"hello\"}");
    sp_activity_output_free(&o);

    run(sh("echo oops >&2; exit 7"), &o);
    expect_failure(&o, "command.exit", true);
    CHECK_INT(json_integer_value(detail(&o, "exitCode")), 7);
    CHECK_STR(json_string_value(detail(&o, "stderrTail")), "oops\n");
    sp_activity_output_free(&o);
}

static void test_stderr_tail(void)
{
    sp_activity_output o;
    run(sh("head -c 6000 /dev/zero | tr '\\0' a >&2; head -c 4000 /dev/zero | tr '\\0' b >&2;"
           " exit 1"),
        &o);
    expect_failure(&o, "command.exit", true);
    const char *tail = json_string_value(detail(&o, "stderrTail"));
    CHECK(tail && strlen(tail) == 4096);
    if (tail && strlen(tail) == 4096) {
        CHECK(strspn(tail, "a") == 96);
        CHECK(strspn(tail + 96, "b") == 4000);
    }
    sp_activity_output_free(&o);

    /* a multi-byte character cut by the ring is dropped, not mangled */
    run(sh("printf '\\342\\202\\254' >&2; head -c 4095 /dev/zero | tr '\\0' c >&2; exit 1"), &o);
    tail = json_string_value(detail(&o, "stderrTail"));
    CHECK(tail && strlen(tail) == 4095 && strspn(tail, "c") == 4095);
    sp_activity_output_free(&o);
}

static void test_stdout_bounds(void)
{
    sp_activity_output o;
    run(sh("head -c 65536 /dev/zero | tr '\\0' x"), &o);
    CHECK_INT(o.kind, SP_OUTPUT_SUCCESS);
    const char *out = json_string_value(json_object_get(o.output, "stdout"));
    CHECK(out && strlen(out) == 65536 && strspn(out, "x") == 65536);
    sp_activity_output_free(&o);

    run(sh("head -c 65537 /dev/zero | tr '\\0' x"), &o);
    expect_failure(&o, "command.output-too-large", false);
    sp_activity_output_free(&o);

    /* over the bound on a failing exit: the exit wins (success path only) */
    run(sh("head -c 100000 /dev/zero; exit 2"), &o);
    expect_failure(&o, "command.exit", true);
    sp_activity_output_free(&o);
}

static void test_output_modes(void)
{
    sp_activity_output o;
    run(with(sh("printf '{ \"b\" : [1, 2],\\n \"a\": \"x\" }\\n'"), "output", json_string("json")),
        &o);
    expect_output(&o, "ok", "{\"a\":\"x\",\"b\":[1,2]}");
    sp_activity_output_free(&o);

    run(with(sh("printf '{\"a\": 1.5}'"), "output", json_string("json")), &o);
    expect_failure(&o, "command.malformed-output", false);
    sp_activity_output_free(&o);

    run(with(sh("printf 'not json'"), "output", json_string("json")), &o);
    expect_failure(&o, "command.malformed-output", false);
    sp_activity_output_free(&o);

    run(with(sh("printf '{\"a\":1,\"a\":2}'"), "output", json_string("json")), &o);
    expect_failure(&o, "command.malformed-output", false);
    sp_activity_output_free(&o);

    run(with(sh("echo ignored"), "output", json_string("none")), &o);
    expect_output(&o, "ok", "null");
    sp_activity_output_free(&o);

    run(sh("printf '\\377ok\\000z'"), &o); /* text: lossy UTF-8, NUL kept */
    expect_output(&o, "ok", "{\"exitCode\":0,\"stdout\":\"\xEF\xBF\xBDok\\u0000z\"}");
    sp_activity_output_free(&o);
}

static void result_run(const char *script, const json_t *declared, sp_activity_output *o)
{
    json_t *a = with(sh(script), "output", json_string("result"));
    if (declared)
        json_object_set(a, "outcomes", (json_t *)declared);
    run(a, o);
}

static void test_result_mode(void)
{
    sp_activity_output o;
    json_t *decl = outcomes("ok", "shipped");
    result_run("printf '{\"outcome\":\"shipped\",\"output\":{\"n\":1}}'", decl, &o);
    expect_output(&o, "shipped", "{\"n\":1}");
    sp_activity_output_free(&o);

    result_run("echo '{\"outcome\":\"ok\",\"output\":null}'", decl, &o); /* one LF */
    expect_output(&o, "ok", "null");
    sp_activity_output_free(&o);

    result_run("printf '{\"error\":{\"code\":\"pay.declined\",\"message\":\"no\"},"
               "\"retryable\":true}'", decl, &o);
    expect_failure(&o, "pay.declined", true);
    CHECK_STR(json_string_value(json_object_get(o.error, "message")), "no");
    sp_activity_output_free(&o);

    result_run("printf '{\"error\":{\"code\":\"pay.bad\",\"message\":\"m\"},"
               "\"retryable\":false}'", decl, &o);
    expect_failure(&o, "pay.bad", false);
    sp_activity_output_free(&o);

    const char *bad[] = {
        "printf '{\"output\":1,\"outcome\":\"ok\"}'",           /* not canonical order */
        "printf '{\"outcome\": \"ok\",\"output\":1}'",          /* whitespace */
        "printf '{\"outcome\":\"ok\",\"output\":1,\"x\":2}'",   /* extra member */
        "printf '{\"outcome\":\"ok\"}'",                        /* missing output */
        "printf '{\"error\":{\"code\":\"c\"},\"retryable\":true}'",
        "printf '{\"error\":{\"code\":\"c\",\"message\":\"m\"},\"retryable\":1}'",
        "printf ''",
        "printf '{\"outcome\":\"ok\",\"output\":1}\\n\\n'",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        result_run(bad[i], decl, &o);
        expect_failure(&o, "command.malformed-output", false);
        sp_activity_output_free(&o);
    }

    result_run("printf '{\"outcome\":\"weird\",\"output\":1}'", decl, &o);
    expect_failure(&o, "command.undeclared-outcome", false);
    CHECK_STR(json_string_value(detail(&o, "outcome")), "weird");
    sp_activity_output_free(&o);

    result_run("printf '{\"outcome\":\"ok\",\"output\":1}'; exit 5", decl, &o);
    expect_failure(&o, "command.exit", true); /* non-zero exits map through the table */
    sp_activity_output_free(&o);
    json_decref(decl);
}

static void test_undeclared_ok(void)
{
    sp_activity_output o;
    run(with(sh("true"), "outcomes", outcomes("done", NULL)), &o);
    expect_failure(&o, "command.undeclared-outcome", false);
    CHECK_STR(json_string_value(detail(&o, "outcome")), "ok");
    sp_activity_output_free(&o);
}

static void test_stdin(void)
{
    sp_runner_ctx ctx = make_ctx(NULL);
    sp_activity_output o;
    const char *doc = "{ \"b\": 2, \"a\": \"\xC3\xA9\" }";
    json_t *input = sp_json_parse(doc, strlen(doc), NULL);
    CHECK(input != NULL);
    run_with(&ctx, with(sh("cat"), "output", json_string("json")), input, &o);
    expect_output(&o, "ok", "{\"a\":\"\xC3\xA9\",\"b\":2}");
    sp_activity_output_free(&o);
    run_with(&ctx, sh("cat"), input, &o); /* the exact canonical bytes, then EOF */
    expect_output(&o, "ok", "{\"exitCode\":0,\"stdout\":\"{\\\"a\\\":\\\"\xC3\xA9\\\",\\\"b\\\":2}\"}");
    sp_activity_output_free(&o);
    json_decref(input);

    /* 1 MiB of input: counted by a reader, and ignored by a non-reader without deadlock */
    char *big = malloc(1 << 20);
    memset(big, 'q', 1 << 20);
    input = json_stringn(big, 1 << 20);
    free(big);
    run_with(&ctx, with(sh("wc -c"), "output", json_string("json")), input, &o);
    expect_output(&o, "ok", "1048578");
    sp_activity_output_free(&o);
    run_with(&ctx, sh("exit 0"), input, &o);
    expect_output(&o, "ok", "{\"exitCode\":0,\"stdout\":\"\"}");
    sp_activity_output_free(&o);
    run_with(&ctx, sh("exec 0<&-; sleep 0.2"), input, &o); /* closes stdin early */
    CHECK_INT(o.kind, SP_OUTPUT_SUCCESS);
    sp_activity_output_free(&o);
    json_decref(input);

    run(with(sh("cat"), "output", json_string("json")), &o); /* no input: null */
    expect_output(&o, "ok", "null");
    sp_activity_output_free(&o);
}

static void test_environment(void)
{
    setenv("SPORE_TEST_INHERITED", "engine", 1);
    setenv("SPORE_TEST_OVERRIDDEN", "engine", 1);
    json_t *env = json_pack("{s:s,s:s,s:s}", "FOO", "bar baz", "SPORE_TEST_OVERRIDDEN", "action",
                            "SPORE_RUN_ID", "forged");
    sp_activity_output o;
    run(with(sh("printf '%s|' \"$SPORE_RUN_ID\" \"$SPORE_NODE_ID\" \"$SPORE_INVOCATION_ID\" "
                "\"$SPORE_ATTEMPT\" \"$SPORE_EFFECT_KEY\" \"$RUNSPORE_RUN_ID\" "
                "\"$RUNSPORE_NODE_ID\" \"$RUNSPORE_INVOCATION_ID\" \"$RUNSPORE_ATTEMPT\" "
                "\"$RUNSPORE_EFFECT_KEY\" \"$TRACEPARENT\" \"$FOO\" \"$SPORE_TEST_INHERITED\" "
                "\"$SPORE_TEST_OVERRIDDEN\""),
             "env", env),
        &o);
    CHECK_INT(o.kind, SP_OUTPUT_SUCCESS);
    CHECK_STR(json_string_value(json_object_get(o.output, "stdout")),
              "run_0123|build|inv_abc|2|inv_abc|run_0123|build|inv_abc|2|inv_abc|"
              "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01|bar baz|engine|action|");
    sp_activity_output_free(&o);
    unsetenv("SPORE_TEST_INHERITED");
    unsetenv("SPORE_TEST_OVERRIDDEN");
}

static void test_cwd(void)
{
    char sub[PATH_MAX + 16], want[PATH_MAX + 64];
    snprintf(sub, sizeof sub, "%s/sub", g_tmp);
    mkdir(sub, 0755);
    sp_activity_output o;
    run(with(sh("pwd -P"), "cwd", json_string("sub")), &o);
    snprintf(want, sizeof want, "%s/sub\n", g_tmp);
    CHECK_STR(json_string_value(json_object_get(o.output, "stdout")), want);
    sp_activity_output_free(&o);

    run(sh("pwd -P"), &o); /* default "." = base_dir */
    snprintf(want, sizeof want, "%s\n", g_tmp);
    CHECK_STR(json_string_value(json_object_get(o.output, "stdout")), want);
    sp_activity_output_free(&o);

    run(with(sh("pwd -P"), "cwd", json_string("/")), &o); /* absolute: as is */
    CHECK_STR(json_string_value(json_object_get(o.output, "stdout")), "/\n");
    sp_activity_output_free(&o);
}

static void test_no_inherited_fds(void)
{
    sp_activity_output o;
    int keep = open("/dev/null", O_RDONLY); /* not CLOEXEC: must still not reach the child */
    run(json_pack("{s:s,s:[s,s]}", "kind", "command", "argv", "ls", "/proc/self/fd"), &o);
    CHECK_STR(json_string_value(json_object_get(o.output, "stdout")), "0\n1\n2\n3\n");
    sp_activity_output_free(&o);
    close(keep);
}

/* The supervisor is the spore-supervisor program (src/supervisor/), not a
 * copy of this process: the command's parent says so by its name, and it
 * leads the command's process group. */
static void test_supervisor_program(void)
{
    sp_activity_output o;
    run(sh("cat /proc/$PPID/comm; [ $(cut -d' ' -f5 /proc/$$/stat) -eq $PPID ] && echo leader"),
        &o);
    expect_output(&o, "ok", "{\"exitCode\":0,\"stdout\":\"spore-superviso\\nleader\\n\"}");
    sp_activity_output_free(&o);
}

static void test_stragglers_after_exit(void)
{
    sp_activity_output o;
    uint64_t t0 = now_ms();
    run(sh("sleep 30 & echo $! > bg.pid; echo done"), &o);
    CHECK(now_ms() - t0 < 2000);
    expect_output(&o, "ok", "{\"exitCode\":0,\"stdout\":\"done\\n\"}");
    pid_t bg = read_pid_file("bg.pid", 100);
    CHECK(bg > 0 && wait_gone(bg, 1000));
    sp_activity_output_free(&o);
}

/* H5: SIGKILL the worker (a helper process running the command on a
 * thread); the command and its grandchild must be gone within a second. */
static void test_no_orphan_after_worker_kill(void)
{
    if (!g_worker_child) {
        check_fail(__FILE__, __LINE__, "no runner_worker_child path given");
        return;
    }
    pid_t helper = fork();
    if (helper == 0) {
        execl(g_worker_child, g_worker_child, g_tmp, (char *)NULL);
        _exit(127);
    }
    pid_t shell = read_pid_file("sh.pid", 5000), bg = read_pid_file("bg.pid", 1000);
    CHECK(shell > 0 && bg > 0);
    pid_t pgid = shell > 0 ? getpgid(shell) : -1;
    CHECK(shell > 0 && !pid_gone(shell) && !pid_gone(bg));
    CHECK(pgid > 0 && pgid != getpgid(0) && pgid != helper);
    kill(helper, SIGKILL);
    waitpid(helper, NULL, 0);
    CHECK(shell > 0 && wait_gone(shell, 1000));
    CHECK(bg > 0 && wait_gone(bg, 1000));
    uint64_t until = now_ms() + 1000;
    while (pgid > 0 && kill(-pgid, 0) == 0 && now_ms() < until) {
        reap_orphans();
        sleep_ms(10);
    }
    CHECK(pgid > 0 && kill(-pgid, 0) < 0 && errno == ESRCH); /* the whole group */
}

static void make_tmp(void)
{
    char tmpl[] = "/tmp/spore-cmd-XXXXXX";
    CHECK(mkdtemp(tmpl) != NULL);
    CHECK(realpath(tmpl, g_tmp) != NULL);
}

static void remove_tmp(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    CHECK_INT(system(cmd), 0);
}

int main(int argc, char **argv)
{
    g_worker_child = argc > 1 ? argv[1] : NULL;
    signal(SIGPIPE, SIG_DFL); /* the runner must not need SIGPIPE ignored */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    make_tmp();
    test_utf8();
    test_invalid();
    test_spawn();
    test_pass_fds_bound();
    test_timeout_kills_group();
    test_stop_fd();
    test_stop();
    test_signaled();
    test_exit_outcomes();
    test_exit_zero_and_nonzero();
    test_stderr_tail();
    test_stdout_bounds();
    test_output_modes();
    test_result_mode();
    test_undeclared_ok();
    test_stdin();
    test_environment();
    test_cwd();
    test_no_inherited_fds();
    test_supervisor_program();
    test_stragglers_after_exit();
    test_no_orphan_after_worker_kill();
    remove_tmp();
    return check_done("test_command_runner");
}
