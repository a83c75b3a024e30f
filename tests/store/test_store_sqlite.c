/*
 * test_store_sqlite.c - the store conformance suite against the SQLite
 * adapter on real temporary files, plus the SQLite-specific tests:
 *   Q01 reopen keeps everything;
 *   Q02 two instances on one file on different threads (S01/S03/...);
 *   Q03 a child process aborts at every store failpoint; after reopen the
 *       mutation is wholly absent (before-commit) or present (after-commit),
 *       and retrying the identical request converges to one applied mutation;
 *   Q04 a newer schema is refused; a directory is store.io, a non-database
 *       file store.corrupt, a foreign database schema.unknown, an empty file
 *       is initialized, a held write lock is unavailable/store.busy.
 *
 * Usage: test_store_sqlite <store_crash_child> [suite|cross|reopen|crash|errors]
 */
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crash.h"
#include "suite_util.h"

extern char **environ;

/* ---- the factory: files in a private temporary directory ---- */

typedef struct sqlite_ctx {
    char dir[512];
    int counter;
} sqlite_ctx;

static bool sq_fresh(void *ctx, char location[STORE_LOCATION_MAX])
{
    sqlite_ctx *c = ctx;
    snprintf(location, STORE_LOCATION_MAX, "%s/store-%d.db", c->dir, ++c->counter);
    return true;
}

static sp_store *sq_open(void *ctx, const char *location, const sp_clock *clock, sp_error *err)
{
    (void)ctx;
    return sp_store_open(location, clock, err);
}

static void sq_destroy(void *ctx, const char *location)
{
    (void)ctx;
    char path[STORE_LOCATION_MAX + 8];
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", location, suffixes[i]);
        unlink(path);
    }
}

static sqlite_ctx CTX;
static const store_factory SQLITE = {"sqlite", &CTX, sq_fresh, sq_open, sq_destroy};

static sp_store *open_at(const char *path, manual_clock *clock, sp_error *err)
{
    sp_clock c = manual_clock_of(clock);
    return sp_store_open(path, &c, err);
}

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

static void q01_reopen(void)
{
    store_env e;
    if (!store_env_open(&e, &SQLITE, false)) {
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
    printf("sqlite Q01 reopen keeps everything: done\n");
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

static void q03_one(const char *child, crash_op op, bool after)
{
    manual_clock clock;
    char db[STORE_LOCATION_MAX], point[96];
    sp_error err = {0};
    sq_fresh(&CTX, db);
    snprintf(point, sizeof point, "store.%s.%s", crash_op_name(op),
             after ? "after-commit" : "before-commit");
    manual_clock_set(&clock, CRASH_PREPARE_MS);
    sp_store *s = open_at(db, &clock, &err);
    CHECK(s && crash_prepare(s, op));
    sp_store_close(s);
    int sig = run_child(child, db, op, point);
    if (sig != SIGABRT)
        check_fail(__FILE__, __LINE__, "%s: child ended with %d, not SIGABRT", point, sig);
    manual_clock_set(&clock, CRASH_MS);
    s = open_at(db, &clock, &err);
    CHECK(s != NULL);
    if (!s)
        return;
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
    sq_destroy(&CTX, db);
}

static void q03_crash(const char *child)
{
    int before = check_failures;
    for (int op = 0; op < CRASH_OPS; op++) {
        q03_one(child, (crash_op)op, false);
        q03_one(child, (crash_op)op, true);
    }
    printf("sqlite Q03 crash at %d store failpoints: %s\n", 2 * CRASH_OPS,
           check_failures == before ? "ok" : "FAILED");
}

/* ---- Q04 and the error mapping ---- */

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
}

static void expect_open_fails(const char *path, const char *code)
{
    manual_clock clock;
    manual_clock_set(&clock, 1000);
    sp_error err = {0};
    sp_store *s = open_at(path, &clock, &err);
    CHECK(s == NULL);
    CHECK_STR(err.code, code);
    sp_error_clear(&err);
    sp_store_close(s);
}

static void q04_schema(void)
{
    char db[STORE_LOCATION_MAX];
    manual_clock clock;
    manual_clock_set(&clock, 1000);
    sp_error err = {0};
    sq_fresh(&CTX, db);
    sp_store *s = open_at(db, &clock, &err);
    CHECK(s != NULL);
    sp_store_close(s);
    raw_exec(db, "PRAGMA user_version = 2");
    expect_open_fails(db, "schema.too-new");
    sq_destroy(&CTX, db);
    sq_fresh(&CTX, db);
    raw_exec(db, "CREATE TABLE foreign_table (x)");
    expect_open_fails(db, "schema.unknown");
    sq_destroy(&CTX, db);
    sq_fresh(&CTX, db); /* an empty file is initialized */
    int fd = open(db, O_CREAT | O_WRONLY, 0600);
    close(fd);
    s = open_at(db, &clock, &err);
    CHECK(s != NULL);
    sp_run_key k = fx_key("run_q04");
    sp_create_run_res cr;
    if (s)
        EXPECT_OK(fx_create(s, &k, "q04", &cr, &err), &err);
    sp_store_close(s);
    sq_destroy(&CTX, db);
}

static void q04_files(void)
{
    char dir[STORE_LOCATION_MAX], junk[STORE_LOCATION_MAX];
    snprintf(dir, sizeof dir, "%s/a-directory", CTX.dir);
    mkdir(dir, 0700);
    expect_open_fails(dir, "store.io");
    rmdir(dir);
    snprintf(junk, sizeof junk, "%s/junk.db", CTX.dir);
    FILE *f = fopen(junk, "w");
    for (int i = 0; i < 400; i++)
        fputs("this is not a database file\n", f);
    fclose(f);
    expect_open_fails(junk, "store.corrupt");
    sq_destroy(&CTX, junk);
    expect_open_fails(":memory:", "store.io"); /* no WAL: not a shareable store */
    sp_error err = {0};
    CHECK(sp_store_open("postgres://user:secret@host/db", NULL, &err) == NULL);
    CHECK_STR(err.code, "store.unsupported");
    CHECK(strstr(err.message, "secret") == NULL);
    sp_error_clear(&err);
}

static void q04_busy(void)
{
    char db[STORE_LOCATION_MAX];
    manual_clock clock;
    manual_clock_set(&clock, 1000);
    sp_error err = {0};
    sq_fresh(&CTX, db);
    sp_store *s = open_at(db, &clock, &err);
    sp_run_key k = fx_key("run_busy");
    sp_create_run_res cr;
    EXPECT_OK(fx_create(s, &k, "busy", &cr, &err), &err);
    sqlite3 *other = NULL;
    CHECK(sqlite3_open(db, &other) == SQLITE_OK);
    CHECK(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    sp_run_view v; /* readers are not blocked by the writer (WAL) */
    bool found = false;
    EXPECT_OK(sp_store_get_run(s, &k, &v, &found, &err), &err);
    CHECK(found);
    sp_run_view_free(&v);
    sp_append_event_res a;
    EXPECT(fx_signal(s, &k, "m1", "go", &a, &err), &err, SP_STORE_UNAVAILABLE, "store.busy");
    CHECK(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(other);
    EXPECT_OK(fx_signal(s, &k, "m1", "go", &a, &err), &err); /* retry the identical request */
    CHECK(a.disposition == SP_APPLIED && a.sequence == 2);
    sp_store_close(s);
    sq_destroy(&CTX, db);
}

static void q04_errors(void)
{
    int before = check_failures;
    q04_schema();
    q04_files();
    q04_busy();
    printf("sqlite Q04 schema and error mapping: %s\n", check_failures == before ? "ok" : "FAILED");
}

/* ---- main ---- */

static bool wants(const char *group, const char *name)
{
    return !group || strcmp(group, name) == 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_store_sqlite <store_crash_child> [group]\n");
        return 2;
    }
    const char *group = argc > 2 ? argv[2] : NULL;
    const char *tmp = getenv("TMPDIR");
    snprintf(CTX.dir, sizeof CTX.dir, "%s/spore-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(CTX.dir)) {
        perror("mkdtemp");
        return 1;
    }
    if (wants(group, "suite"))
        store_suite_run(&SQLITE);
    if (wants(group, "cross"))
        store_suite_cross(&SQLITE);
    if (wants(group, "reopen"))
        q01_reopen();
    if (wants(group, "crash"))
        q03_crash(argv[1]);
    if (wants(group, "errors"))
        q04_errors();
    rmdir(CTX.dir);
    return check_done(group ? group : "store.sqlite");
}
