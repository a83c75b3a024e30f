/*
 * adapter.c - the adapter-specific scenarios of store.md §5 that every
 * adapter runs over its own factory (see adapter.h): Q01 reopen keeps
 * everything, Q03 a child process aborts at every store failpoint.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adapter.h"
#include "crash.h"
#include "suite_util.h"

extern char **environ;

/* ---- Q01: reopen keeps everything ---- */

static void q01_build(store_env *e, sp_claim *running)
{
    sp_error err = {0};
    sp_run_key done = fx_key("run_q01_done"), live = fx_key("run_q01_live");
    sp_claim c;
    drive_to_claim(e, &done, "w1", 10000, &c);
    sp_finish_res f;
    EXPECT_OK(fx_finish(e->a, &c.attempt, "success", &f, &err), &err);
    sp_append_event_res a;
    EXPECT_OK(fx_signal(e->a, &done, "m1", "go", &a, &err), &err);
    CHECK_INT(fx_settle(e->a, &done), 2);
    sp_claim_free(&c);
    drive_to_claim(e, &live, "w1", 100, running);
    sp_quarantine_req q = {live, "q/q01", 1, "test.q", "{\"x\":1}"};
    sp_flag_res fl;
    EXPECT_OK(sp_store_quarantine_run(e->a, &q, &fl, &err), &err);
    EXPECT_OK(sp_store_put_blob(
                  e->a, "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
                  "hello", 5, &err),
              &err);
}

void adapter_q01_reopen(const store_factory *factory)
{
    store_env e;
    if (!store_env_open(&e, factory, false)) {
        CHECK(false);
        return;
    }
    sp_run_key done = fx_key("run_q01_done"), live = fx_key("run_q01_live");
    sp_claim c;
    q01_build(&e, &c);
    unsigned char s1[32], s2[32];
    sp_error err = {0};
    EXPECT_OK(sp_store_secret(e.a, s1, &err), &err);
    char *before = fx_state(e.a, &done), *before2 = fx_state(e.a, &live);
    CHECK(store_env_reopen(&e));
    char *after = fx_state(e.a, &done), *after2 = fx_state(e.a, &live);
    CHECK_STR(after, before);
    CHECK_STR(after2, before2);
    CHECK(strstr(after, "status=completed") != NULL);
    EXPECT_OK(sp_store_secret(e.a, s2, &err), &err);
    CHECK(memcmp(s1, s2, 32) == 0);
    void *blob = NULL;
    size_t len = 0;
    bool found = false;
    EXPECT_OK(sp_store_get_blob(
                  e.a, "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
                  &blob, &len, &found, &err),
              &err);
    CHECK(found && len == 5 && memcmp(blob, "hello", 5) == 0);
    free(blob);
    sp_create_run_res cr; /* receipts survive: a replay is a duplicate */
    EXPECT_OK(fx_create(e.a, &done, "run_q01_done", &cr, &err), &err);
    CHECK_INT(cr.disposition, SP_DUPLICATE);
    /* fences continue after a reopen: never reused */
    sp_flag_res fl;
    sp_release_req rel = {live, "release/q01"};
    EXPECT_OK(sp_store_release_run(e.a, &rel, &fl, &err), &err);
    manual_clock_set(&e.clock, 1100);
    sp_finish_res f;
    EXPECT_OK(fx_expire(e.a, &c.attempt, SP_EXPIRE_LEASE, &f, &err), &err);
    CHECK_INT(fx_settle(e.a, &live), 1);
    manual_clock_set(&e.clock, 1600);
    sp_claim c2;
    EXPECT_OK(fx_claim(e.a, &live, c.attempt.invocation_id, "w2", 100, "2", &c2, &err), &err);
    CHECK_INT(c2.attempt.fence, 2);
    sp_claim_free(&c);
    sp_claim_free(&c2);
    free(before);
    free(before2);
    free(after);
    free(after2);
    store_env_close(&e);
    printf("%s Q01 reopen keeps everything: done\n", factory->name);
}

/* ---- Q03: a child aborts at every store failpoint ---- */

static int run_child(const char *child, const char *db, crash_op op, const char *point)
{
    char opnum[8], env[128];
    snprintf(opnum, sizeof opnum, "%d", (int)op);
    snprintf(env, sizeof env, "SPORE_FAILPOINTS=%s", point);
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = calloc(n + 2, sizeof *envp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "SPORE_FAILPOINTS=", 17) != 0)
            envp[m++] = environ[i];
    envp[m++] = env;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDERR_FILENO);
        execve(child, (char *[]){(char *)child, (char *)db, opnum, NULL}, envp);
        _exit(127);
    }
    free(envp);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) ? WTERMSIG(status) : -WEXITSTATUS(status);
}

static sp_store *open_at(const store_factory *f, const char *location, manual_clock *clock,
                         sp_error *err)
{
    sp_clock c = manual_clock_of(clock);
    return f->open(f->ctx, location, &c, err);
}

static void q03_one(const store_factory *f, const char *child, crash_op op, bool after)
{
    manual_clock clock;
    char db[STORE_LOCATION_MAX], point[96];
    sp_error err = {0};
    if (!f->fresh(f->ctx, db)) {
        check_fail(__FILE__, __LINE__, "%s: cannot prepare a store", f->name);
        return;
    }
    snprintf(point, sizeof point, "store.%s.%s", crash_op_name(op),
             after ? "after-commit" : "before-commit");
    manual_clock_set(&clock, CRASH_PREPARE_MS);
    sp_store *s = open_at(f, db, &clock, &err);
    CHECK(s && crash_prepare(s, op));
    sp_store_close(s);
    int sig = run_child(child, db, op, point);
    if (sig != SIGABRT)
        check_fail(__FILE__, __LINE__, "%s: child ended with %d, not SIGABRT", point, sig);
    manual_clock_set(&clock, CRASH_MS);
    s = open_at(f, db, &clock, &err);
    CHECK(s != NULL);
    if (!s) {
        f->destroy(f->ctx, db);
        return;
    }
    bool receipt = false;
    int effects = crash_effects(s, op, &receipt);
    if (effects != (after ? 1 : 0) || receipt != after)
        check_fail(__FILE__, __LINE__, "%s: after the crash %d effects, receipt %d", point, effects,
                   receipt);
    sp_disposition d;
    EXPECT_OK(crash_perform(s, op, &d, &err), &err); /* the identical request again */
    CHECK_INT(d, after ? SP_DUPLICATE : SP_APPLIED);
    EXPECT_OK(crash_perform(s, op, &d, &err), &err);
    CHECK_INT(d, SP_DUPLICATE);
    effects = crash_effects(s, op, &receipt);
    if (effects != 1 || !receipt)
        check_fail(__FILE__, __LINE__, "%s: after the retry %d effects, receipt %d", point, effects,
                   receipt);
    sp_store_close(s);
    f->destroy(f->ctx, db);
}

void adapter_q03_crash(const store_factory *f, const char *child)
{
    int before = check_failures;
    for (int op = 0; op < CRASH_OPS; op++) {
        q03_one(f, child, (crash_op)op, false);
        q03_one(f, child, (crash_op)op, true);
    }
    printf("%s Q03 crash at %d store failpoints: %s\n", f->name, 2 * CRASH_OPS,
           check_failures == before ? "ok" : "FAILED");
}

