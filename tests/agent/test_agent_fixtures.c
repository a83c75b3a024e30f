/*
 * test_agent_fixtures.c - A1 (agent-step.md §10): every case under
 * tests/fixtures/agent/<case>/ classified as expected.json says, twice:
 *
 *   classify  the exchange fed from the files through the shared session
 *             (src/agent/session.c) - the code of `spore agent classify` -
 *             in several chunkings, which must all agree;
 *   runner    the real agent runner (sp_agent_execute) running the case's
 *             replayer (agent_fixture replay) as its step CLI, through the
 *             exec transport and in the local bubblewrap sandbox, so bytes
 *             arrive from a live process and a violation kills it.
 *
 * usage: test_agent_fixtures <fixtures-dir> <agent_fixture> [case...]
 *
 * expected.json: status, code, retryable, taint, breaker, stepId; and when
 * given: rule, line, output (exact), errorContains, tailContains, events,
 * resultFile (a subset of the diagnostic), secretFile (no 16-byte piece of
 * that secret may appear anywhere in the outcome).
 *
 * Must never skip a case: a missing file is a failure.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/redact.h"
#include "agent/session.h"
#include "check.h"
#include "runners/agent.h"
#include "sandbox/sandbox.h"

static char *FIXTURE_BIN;
static char TMP[4096], AGENT_DIR[4200];

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    return buf;
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* The case's stdout (materialized from a recipe when there is one). */
static char *stdout_path(const char *dir, const char *name)
{
    char *p;
    if (asprintf(&p, "%s/stdout.gen.json", dir) < 0)
        return NULL;
    if (!exists(p)) {
        free(p);
        return asprintf(&p, "%s/stdout", dir) < 0 ? NULL : p;
    }
    char *out, *cmd;
    if (asprintf(&out, "%s/%s.stdout", TMP, name) < 0 ||
        asprintf(&cmd, "'%s' gen '%s' '%s'", FIXTURE_BIN, p, out) < 0)
        return NULL;
    CHECK(system(cmd) == 0);
    free(cmd);
    free(p);
    return out;
}

static char *result_path(const char *dir, const char *name)
{
    char *p;
    if (asprintf(&p, "%s/result.json.gen.json", dir) < 0)
        return NULL;
    if (exists(p)) {
        char *out, *cmd;
        if (asprintf(&out, "%s/%s.result.json", TMP, name) < 0 ||
            asprintf(&cmd, "'%s' gen '%s' '%s'", FIXTURE_BIN, p, out) < 0)
            return NULL;
        CHECK(system(cmd) == 0);
        free(cmd);
        free(p);
        return out;
    }
    free(p);
    if (asprintf(&p, "%s/result.json", dir) < 0)
        return NULL;
    return p; /* may not exist: then absent */
}

static void end_of(const char *dir, sp_agent_end *end)
{
    char path[8600];
    snprintf(path, sizeof path, "%s/exit", dir);
    char *how = slurp(path, NULL);
    CHECK(how != NULL);
    memset(end, 0, sizeof *end);
    if (!how)
        return;
    if (strncmp(how, "signal:", 7) == 0) {
        end->kind = SP_AGENT_SIGNALED;
        end->signal = atoi(how + 7);
    } else if (strncmp(how, "lost-stream", 11) == 0) {
        end->kind = SP_AGENT_LOST;
    } else {
        end->kind = SP_AGENT_EXITED;
        end->exit_code = atoi(how);
    }
    free(how);
}

static sp_redactor *redactor_for(const char *dir, const json_t *expected, char **secret)
{
    sp_redactor *r = sp_redactor_new();
    *secret = NULL;
    const char *file = json_string_value(json_object_get(expected, "secretFile"));
    if (file) {
        char path[8600];
        snprintf(path, sizeof path, "%s/%s", dir, file);
        size_t n;
        *secret = slurp(path, &n);
        CHECK(*secret != NULL);
        sp_error err = {0};
        if (*secret)
            CHECK(sp_redactor_add(r, *secret, n, &err) == 0);
    }
    return r;
}

/* ---- comparing an outcome with expected.json ---- */

static bool subset(const json_t *want, const json_t *got)
{
    if (!json_is_object(want))
        return json_equal(want, got);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)want, k, v)
    {
        if (!subset(v, json_object_get(got, k)))
            return false;
    }
    return true;
}

static int compare(const char *name, const char *path_kind, const json_t *exp,
                   const sp_agent_outcome *o, const char *secret)
{
    int before = check_failures;
    json_t *got = sp_agent_outcome_json(o);
    const json_t *d = json_object_get(got, "details");
    CHECK(got != NULL);
#define WANT(cond)                                                                             \
    do {                                                                                       \
        check_count++;                                                                         \
        if (!(cond))                                                                           \
            check_fail(__FILE__, __LINE__, "%s [%s]: %s", name, path_kind, #cond);             \
    } while (0)
    WANT(json_equal(json_object_get(exp, "status"), json_object_get(got, "status")));
    WANT(json_equal(json_object_get(exp, "code"), json_object_get(got, "code")));
    WANT(json_equal(json_object_get(exp, "retryable"), json_object_get(got, "retryable")));
    WANT(json_equal(json_object_get(exp, "taint"), json_object_get(got, "taint")));
    WANT(json_equal(json_object_get(exp, "breaker"), json_object_get(got, "breaker")));
    WANT(json_equal(json_object_get(exp, "stepId"), json_object_get(d, "stepId")));
    if (json_object_get(exp, "rule"))
        WANT(json_equal(json_object_get(exp, "rule"), json_object_get(d, "rule")));
    if (json_object_get(exp, "line"))
        WANT(json_equal(json_object_get(exp, "line"), json_object_get(d, "line")));
    if (json_object_get(exp, "output"))
        WANT(json_equal(json_object_get(exp, "output"), json_object_get(got, "output")));
    if (json_object_get(exp, "events"))
        WANT(json_equal(json_object_get(exp, "events"), json_object_get(d, "events")));
    if (json_object_get(exp, "resultFile"))
        WANT(subset(json_object_get(exp, "resultFile"), json_object_get(d, "resultFile")));
    const char *want_err = json_string_value(json_object_get(exp, "errorContains"));
    if (want_err)
        WANT(o->error && strstr(o->error, want_err));
    const char *want_tail = json_string_value(json_object_get(exp, "tailContains"));
    const char *tail = json_string_value(json_object_get(d, "stderrTail"));
    if (want_tail)
        WANT(tail && strstr(tail, want_tail));
    if (secret) {
        char *all = json_dumps(got, JSON_COMPACT);
        size_t n = strlen(secret);
        bool leaked = false;
        for (size_t i = 0; all && i + 16 <= n && !leaked; i++)
            leaked = memmem(all, strlen(all), secret + i, 16) != NULL;
        WANT(all && !leaked);
        free(all);
    }
    if (check_failures != before) {
        char *text = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
        fprintf(stderr, "  %s [%s] got: %.2000s\n", name, path_kind, text ? text : "?");
        free(text);
    }
    json_decref(got);
    return check_failures == before;
}

/* ---- the classify path ---- */

static void classify(const char *dir, const char *name, const json_t *exp, size_t chunk,
                     sp_agent_outcome *o, char **secret_out)
{
    char *secret;
    sp_redactor *r = redactor_for(dir, exp, &secret);
    sp_agent_session s;
    sp_agent_session_cfg cfg = {json_string_value(json_object_get(exp, "stepId")), r, "n", 1,
                                NULL, NULL};
    CHECK(sp_agent_session_init(&s, &cfg) == 0);
    char *out = stdout_path(dir, name), *err_path, *res = result_path(dir, name);
    size_t len = 0, elen = 0;
    char *data = slurp(out, &len);
    CHECK(data != NULL);
    for (size_t at = 0; data && at < len;) {
        size_t n = len - at < chunk ? len - at : chunk;
        if (!sp_agent_session_stdout(&s, data + at, n))
            break;
        at += n;
    }
    CHECK(asprintf(&err_path, "%s/stderr", dir) >= 0);
    char *edata = slurp(err_path, &elen);
    CHECK(edata != NULL);
    if (edata)
        sp_agent_session_stderr(&s, edata, elen);
    sp_agent_end end;
    end_of(dir, &end);
    sp_agent_session_finish(&s, &end, res, true, o);
    sp_agent_session_free(&s);
    sp_redactor_free(r);
    free(data);
    free(edata);
    free(out);
    free(err_path);
    free(res);
    *secret_out = secret;
}

/* ---- the runner path ---- */

/* The live runner: through the exec transport (a no-op prefix, the lost
 * stream is exit 255), or in the local bubblewrap sandbox (the case
 * directory readable, the replayer bound in). */
static void run_live(const char *dir, const char *name, const json_t *exp, bool local,
                     sp_agent_outcome *o)
{
    char work[4200], provider[300];
    snprintf(work, sizeof work, "%s/work-%s", TMP, name);
    snprintf(provider, sizeof provider, "%s-%s", name, local ? "local" : "exec");
    mkdir(work, 0700);
    json_t *action =
        local ? json_pack("{s:s,s:[s,s,s],s:s,s:s,s:{s:s,s:[s]}}", "kind", "agent", "stepCli",
                          FIXTURE_BIN, "replay", dir, "provider", provider, "timeoutMs", "60000",
                          "sandbox", "transport", "local", "readable", dir)
              : json_pack("{s:s,s:[s,s,s],s:s,s:s,s:{s:s,s:[s],s:s,s:s,s:i}}", "kind", "agent",
                          "stepCli", FIXTURE_BIN, "replay", dir, "provider", provider,
                          "timeoutMs", "60000", "sandbox", "transport", "exec", "command",
                          "/usr/bin/env", "workRoot", work, "hostWorkRoot", work,
                          "lostStreamExit", 255);
    const char *secret_file = json_string_value(json_object_get(exp, "secretFile"));
    if (secret_file) {
        char path[8600];
        snprintf(path, sizeof path, "%s/%s", dir, secret_file);
        json_object_set_new(action, "secrets", json_pack("{s:{s:s}}", "CASE_SECRET", "file", path));
    }
    json_t *input = json_pack("{s:s}", "query", "replay");
    sp_agent_exec_in in = {
        .action_id = "replay",
        .action = action,
        .input = input,
        .run_id = "run_fixture",
        .node_id = "replay",
        .attempt = 1,
        .base_dir = TMP,
        .step_id = json_string_value(json_object_get(exp, "stepId")),
    };
    sp_agent_execute(&in, o);
    json_decref(action);
    json_decref(input);
}

static void one_case(const char *root, const char *name)
{
    char dir[4200], path[8600];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    snprintf(path, sizeof path, "%s/expected.json", dir);
    json_error_t je;
    json_t *exp = json_load_file(path, 0, &je);
    CHECK(exp != NULL);
    if (!exp) {
        fprintf(stderr, "  %s: %s\n", name, je.text);
        return;
    }
    bool ok = true;
    /* chunkings: tiny ones only for small files (they are slow on 64 MiB) */
    struct stat st;
    snprintf(path, sizeof path, "%s/stdout", dir);
    bool small = stat(path, &st) == 0 && st.st_size < 256 * 1024;
    size_t chunks[] = {65536, 4096, 7, 1};
    for (size_t i = 0; i < (small ? 4u : 1u); i++) {
        sp_agent_outcome o;
        char *secret = NULL;
        classify(dir, name, exp, chunks[i], &o, &secret);
        char label[32];
        snprintf(label, sizeof label, "classify/%zu", chunks[i]);
        ok &= compare(name, label, exp, &o, secret);
        sp_agent_outcome_free(&o);
        free(secret);
    }
    sp_agent_end end;
    end_of(dir, &end);
    for (int local = 0; local < 2; local++) {
        if (local && end.kind == SP_AGENT_LOST)
            continue; /* a lost stream is the exec transport's own ending */
        sp_agent_outcome o;
        run_live(dir, name, exp, local, &o);
        char *secret = NULL;
        sp_redactor *r = redactor_for(dir, exp, &secret);
        ok &= compare(name, local ? "runner/local" : "runner/exec", exp, &o, secret);
        sp_redactor_free(r);
        free(secret);
        sp_agent_outcome_free(&o);
    }
    printf("%-40s %s\n", name, ok ? "ok" : "FAILED");
    json_decref(exp);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_agent_fixtures <fixtures-dir> <agent_fixture> [case...]\n");
        return 2;
    }
    FIXTURE_BIN = realpath(argv[2], NULL);
    if (!FIXTURE_BIN) {
        perror(argv[2]);
        return 2;
    }
    char *root = realpath(argv[1], NULL);
    if (!root) {
        perror(argv[1]);
        return 2;
    }
    snprintf(TMP, sizeof TMP, "%s/spore-agent-fixtures-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(TMP)) {
        perror("mkdtemp");
        return 2;
    }
    snprintf(AGENT_DIR, sizeof AGENT_DIR, "%s-agent", TMP);
    mkdir(AGENT_DIR, 0700);
    setenv("SPORE_AGENT_DIR", AGENT_DIR, 1);
    char *names[512];
    size_t n = 0;
    if (argc > 3) {
        for (int i = 3; i < argc && n < 512; i++)
            names[n++] = strdup(argv[i]);
    } else {
        DIR *d = opendir(root);
        CHECK(d != NULL);
        struct dirent *e;
        while (d && (e = readdir(d)) && n < 512) {
            char p[4200];
            snprintf(p, sizeof p, "%s/%s/expected.json", root, e->d_name);
            if (e->d_name[0] != '.' && exists(p))
                names[n++] = strdup(e->d_name);
        }
        if (d)
            closedir(d);
        CHECK(n >= 60); /* the corpus: captured and synthetic cases */
    }
    qsort(names, n, sizeof names[0], by_name);
    for (size_t i = 0; i < n; i++) {
        one_case(root, names[i]);
        free(names[i]);
    }
    sp_sandbox_remove_tree(TMP);
    sp_sandbox_remove_tree(AGENT_DIR);
    free(root);
    free(FIXTURE_BIN);
    return check_done("agent fixtures (A1)");
}
