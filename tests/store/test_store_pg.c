/*
 * test_store_pg.c - the store conformance suite against the PostgreSQL
 * adapter on a real server, plus the PostgreSQL twins of the adapter tests:
 *   suite   S01-S14 and X01-X04 unchanged, one fresh schema per test;
 *   cross   Q02: two connections (two instances) race: S01, S02, S03, S07, S12;
 *   reopen  Q01: closing every connection and reconnecting keeps everything;
 *   crash   Q03: a child process aborts at every store failpoint; the
 *           mutation is wholly absent or present, a retry converges;
 *   errors  Q04: a newer schema is schema.too-new, a foreign schema
 *           schema.unknown, concurrent first connects all succeed; and the
 *           driver's contract: credentials never in locations or errors
 *           (wrong password -> store.unauthorized, no server -> store.io);
 *           a held row lock -> unavailable/store.busy after lock_timeout and
 *           the identical retry applies (a dispatch's claim, skip_busy:
 *           conflict/run.busy at once); a racing create_run -> one applied,
 *           the loser unavailable or duplicate, and its retry duplicate; a
 *           connection killed mid-transaction -> unavailable, and the next
 *           request reconnects; deferred commits the flusher had not proved
 *           when the connection went are proved by the reconnect (kept) or
 *           refused as lost; a whole run through the C API (spore_open).
 *
 * The server: $SPORE_TEST_PG, else the URL in the file $SPORE_TEST_PG_FILE
 * (written by `scripts/pg.sh ensure`, CTest's fixture). No server is a
 * failure, never a skip.
 *
 * Usage: test_store_pg <store_crash_child> [suite|cross|reopen|crash|errors]
 */
#include <errno.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adapter.h"
#include "spore/spore.h"
#include "suite_util.h"

/* ---- the server and the factory: one schema per location ---- */

typedef struct pg_ctx {
    char url[STORE_LOCATION_MAX / 2]; /* room for the options each location adds */
    PGconn *admin;
    int counter;
} pg_ctx;

static pg_ctx CTX;

static bool load_url(char *out, size_t cap)
{
    const char *env = getenv("SPORE_TEST_PG");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return true;
    }
    const char *file = getenv("SPORE_TEST_PG_FILE");
    FILE *f = file ? fopen(file, "r") : NULL;
    if (!f)
        return false;
    bool ok = fgets(out, (int)cap, f) != NULL;
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
    return ok && *out;
}

static bool admin_exec(const char *sql)
{
    PGresult *r = PQexec(CTX.admin, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        fprintf(stderr, "admin: %s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    return ok;
}

/* One number the admin connection reads; -1 when there is none. */
static long admin_long(const char *sql)
{
    PGresult *r = PQexec(CTX.admin, sql);
    long v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)
                 ? atol(PQgetvalue(r, 0, 0))
                 : -1;
    PQclear(r);
    return v;
}

/* The URL of a store in `schema` (search_path through libpq's options) on
 * the server `base` names, with `extra` ("-c name=value" settings) added. */
static void url_through(char *out, size_t cap, const char *base, const char *schema,
                        const char *extra)
{
    int n = snprintf(out, cap, "%s%coptions=-csearch_path%%3D%s%s", base,
                     strchr(base, '?') ? '&' : '?', schema, extra ? extra : "");
    CHECK(n > 0 && (size_t)n < cap);
}

static void url_for(char *out, size_t cap, const char *schema, const char *extra)
{
    url_through(out, cap, CTX.url, schema, extra); /* the test server, directly */
}

static const char *schema_of(const char *location)
{
    const char *p = strstr(location, "search_path%3D");
    static char name[128];
    snprintf(name, sizeof name, "%s", p ? p + 14 : "");
    name[strcspn(name, "&%")] = '\0';
    return name;
}

static bool new_schema(char *name, size_t cap)
{
    char sql[256];
    snprintf(name, cap, "spore_t_%d_%d", (int)getpid(), ++CTX.counter);
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", name, name);
    return admin_exec(sql);
}

static bool pg_fresh(void *ctx, char location[STORE_LOCATION_MAX])
{
    (void)ctx;
    char schema[64];
    if (!new_schema(schema, sizeof schema))
        return false;
    url_for(location, STORE_LOCATION_MAX, schema, NULL);
    return true;
}

static sp_store *pg_open(void *ctx, const char *location, const sp_clock *clock, sp_error *err)
{
    (void)ctx;
    return sp_store_open(location, clock, err);
}

static void pg_destroy(void *ctx, const char *location)
{
    (void)ctx;
    char sql[256];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", schema_of(location));
    admin_exec(sql);
}

static const store_factory PG = {"postgres", &CTX, pg_fresh, pg_open, pg_destroy};

static sp_store *open_at(const char *location, manual_clock *clock, sp_error *err)
{
    sp_clock c = manual_clock_of(clock);
    return sp_store_open(location, &c, err);
}

/* The password of the test URL (what must never be printed). */
static void password_of(char *out, size_t cap)
{
    const char *auth = strstr(CTX.url, "://");
    const char *at = auth ? strchr(auth + 3, '@') : NULL;
    const char *colon = auth ? strchr(auth + 3, ':') : NULL;
    out[0] = '\0';
    if (at && colon && colon < at)
        snprintf(out, cap, "%.*s", (int)(at - colon - 1), colon + 1);
}

/* ---- Q04: schema versions ---- */

static void expect_open_fails(const char *location, const char *code)
{
    manual_clock clock;
    manual_clock_set(&clock, 1000);
    sp_error err = {0};
    sp_store *s = open_at(location, &clock, &err);
    CHECK(s == NULL);
    CHECK_STR(err.code, code);
    sp_error_clear(&err);
    sp_store_close(s);
}

static void q04_schema(void)
{
    char loc[STORE_LOCATION_MAX], sql[256];
    manual_clock clock;
    manual_clock_set(&clock, 1000);
    sp_error err = {0};
    CHECK(pg_fresh(&CTX, loc));
    sp_store *s = open_at(loc, &clock, &err);
    CHECK(s != NULL);
    sp_store_close(s);
    s = open_at(loc, &clock, &err); /* the second open finds version 1 */
    CHECK(s != NULL);
    sp_store_close(s);
    snprintf(sql, sizeof sql, "UPDATE %s.schema_version SET version = 2", schema_of(loc));
    CHECK(admin_exec(sql));
    expect_open_fails(loc, "schema.too-new");
    pg_destroy(&CTX, loc);
    CHECK(pg_fresh(&CTX, loc));
    snprintf(sql, sizeof sql, "CREATE TABLE %s.foreign_table (x int)", schema_of(loc));
    CHECK(admin_exec(sql));
    expect_open_fails(loc, "schema.unknown");
    pg_destroy(&CTX, loc);
    url_for(loc, sizeof loc, "spore_no_such_schema", NULL);
    expect_open_fails(loc, "store.io");
}

/* Eight processes' worth of first connects at once on an empty schema. */
typedef struct first_open {
    const char *location;
    pthread_barrier_t *barrier;
    bool ok;
    char code[SP_CODE_MAX];
} first_open;

static void *first_open_thread(void *p)
{
    first_open *f = p;
    manual_clock clock;
    manual_clock_set(&clock, 1000);
    sp_error err = {0};
    pthread_barrier_wait(f->barrier);
    sp_store *s = open_at(f->location, &clock, &err);
    f->ok = s != NULL;
    snprintf(f->code, sizeof f->code, "%s", err.code);
    sp_error_clear(&err);
    sp_store_close(s);
    return NULL;
}

static void q04_concurrent_first_connects(void)
{
    enum { N = 8 };
    char loc[STORE_LOCATION_MAX];
    CHECK(pg_fresh(&CTX, loc));
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, N);
    first_open f[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        f[i] = (first_open){loc, &barrier, false, ""};
        pthread_create(&t[i], NULL, first_open_thread, &f[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        if (!f[i].ok)
            check_fail(__FILE__, __LINE__, "concurrent first connect %d failed: %s", i, f[i].code);
        check_count++;
    }
    pthread_barrier_destroy(&barrier);
    pg_destroy(&CTX, loc);
}

/* ---- credentials ---- */

static void q04_credentials(void)
{
    char password[128], loc[STORE_LOCATION_MAX], bad[2 * STORE_LOCATION_MAX];
    password_of(password, sizeof password);
    CHECK(password[0] != '\0'); /* the test server uses a password */
    manual_clock clock;
    manual_clock_set(&clock, 1000);
    sp_error err = {0};
    CHECK(pg_fresh(&CTX, loc));
    sp_store *s = open_at(loc, &clock, &err);
    CHECK(s != NULL);
    if (s) {
        CHECK(strstr(sp_store_location(s), password) == NULL);
        CHECK(strstr(sp_store_location(s), "search_path") != NULL);
        sp_store_capabilities caps;
        sp_store_capabilities_get(s, &caps);
        CHECK_STR(caps.adapter, "postgres");
    }
    sp_store_close(s);
    /* the password as a parameter instead of in the userinfo */
    char user_host[STORE_LOCATION_MAX / 2];
    const char *auth = strstr(CTX.url, "://") + 3;
    const char *colon = strchr(auth, ':'), *at = strchr(auth, '@');
    snprintf(user_host, sizeof user_host, "%.*s%s", (int)(colon - CTX.url), CTX.url, at);
    snprintf(bad, sizeof bad, "%s?password=%s&options=-csearch_path%%3D%s", user_host, password,
             schema_of(loc));
    s = open_at(bad, &clock, &err);
    CHECK(s != NULL);
    if (s) {
        CHECK(strstr(sp_store_location(s), password) == NULL);
        CHECK(strstr(sp_store_location(s), "password") == NULL);
    }
    sp_store_close(s);
    sp_error_clear(&err);
    /* a wrong password: unauthorized, and neither password in the message */
    snprintf(bad, sizeof bad, "%.*s:wrong-%s%s", (int)(colon - CTX.url), CTX.url, password, at);
    s = open_at(bad, &clock, &err);
    CHECK(s == NULL);
    CHECK_STR(err.code, "store.unauthorized");
    CHECK(strstr(err.message, password) == NULL);
    sp_error_clear(&err);
    /* no server there: store.io, no password */
    snprintf(bad, sizeof bad, "postgresql://spore:%s@127.0.0.1:1/spore", password);
    s = open_at(bad, &clock, &err);
    CHECK(s == NULL);
    CHECK_STR(err.code, "store.io");
    CHECK(strstr(err.message, password) == NULL);
    sp_error_clear(&err);
    /* a malformed URL echoes itself in libpq's message: scrubbed */
    snprintf(bad, sizeof bad, "postgresql://spore:%s@127.0.0.1:notaport/spore", password);
    s = open_at(bad, &clock, &err);
    CHECK(s == NULL);
    CHECK(strstr(err.message, password) == NULL);
    sp_error_clear(&err);
    pg_destroy(&CTX, loc);
}

/* ---- a held lock: store.busy, then the identical retry applies ---- */

/* A store in a new schema whose lock waits end after 300 ms, with the run
 * `run_id` created (f->s NULL: failed, checked); its own manual clock. */
typedef struct busy_fixture {
    char schema[64], loc[STORE_LOCATION_MAX];
    manual_clock clock;
    sp_run_key k;
    sp_store *s;
} busy_fixture;

static bool busy_open(busy_fixture *f, const char *run_id)
{
    CHECK(new_schema(f->schema, 64));
    url_for(f->loc, STORE_LOCATION_MAX, f->schema, "%20-clock_timeout%3D300");
    manual_clock_set(&f->clock, 1000);
    sp_error err = {0};
    f->s = open_at(f->loc, &f->clock, &err);
    CHECK(f->s != NULL);
    f->k = fx_key(run_id);
    sp_create_run_res cr;
    if (f->s)
        EXPECT_OK(fx_create(f->s, &f->k, run_id, &cr, &err), &err);
    sp_error_clear(&err);
    return f->s != NULL;
}

static void busy_close(busy_fixture *f)
{
    sp_store_close(f->s);
    pg_destroy(&CTX, f->loc);
}

/* Another session holds the run's row until admin_exec("ROLLBACK"). */
static void hold_run(const char *schema, const char *run_id)
{
    char sql[256];
    CHECK(admin_exec("BEGIN"));
    snprintf(sql, sizeof sql, "SELECT 1 FROM %s.runs WHERE run_id = '%s' FOR UPDATE", schema,
             run_id);
    CHECK(admin_exec(sql));
}

static void q04_busy(void)
{
    busy_fixture f;
    if (!busy_open(&f, "run_busy"))
        return;
    sp_store *s = f.s;
    sp_run_key k = f.k;
    sp_error err = {0};
    hold_run(f.schema, "run_busy");
    sp_run_view v; /* readers are not blocked by the lock */
    bool found = false;
    EXPECT_OK(sp_store_get_run(s, &k, &v, &found, &err), &err);
    CHECK(found);
    sp_run_view_free(&v);
    sp_key_page page; /* work selection skips the locked run instead of waiting */
    EXPECT_OK(sp_store_scan_ready(s, NULL, 0, &page, &err), &err);
    CHECK_INT(page.n, 0);
    sp_key_page_free(&page);
    sp_append_event_res a;
    EXPECT(fx_signal(s, &k, "m1", "go", &a, &err), &err, SP_STORE_UNAVAILABLE, "store.busy");
    CHECK(admin_exec("ROLLBACK"));
    EXPECT_OK(sp_store_scan_ready(s, NULL, 0, &page, &err), &err);
    CHECK_INT(page.n, 1);
    sp_key_page_free(&page);
    EXPECT_OK(fx_signal(s, &k, "m1", "go", &a, &err), &err); /* the identical request again */
    CHECK(a.disposition == SP_APPLIED && a.sequence == 2);
    busy_close(&f);
}

/* A dispatch's claim (skip_busy) does not wait for a run another
 * transaction holds: conflict/run.busy at once, nothing changed; any other
 * claim waits (store.busy after lock_timeout); once the lock is gone the
 * same claim applies. */
static void q04_claim_skips_busy(void)
{
    busy_fixture f;
    if (!busy_open(&f, "run_claim_busy"))
        return;
    sp_store *s = f.s;
    sp_run_key k = f.k;
    sp_error err = {0};
    sp_commit_turn_res turn; /* the first turn schedules a step: an invocation to claim */
    EXPECT_OK(fx_step(s, &k, &turn, &err), &err);
    char inv[SP_ID_LEN + 1] = "";
    CHECK(fx_invocation(s, &k, inv));
    sp_claim_req claim = {.key = k, .request_id = "claim/busy", .invocation_id = inv,
                          .worker = "w1", .lease_duration_ms = 1000,
                          .host = {"host-test", 1, 2}, .skip_busy = true};
    sp_claim c;
    hold_run(f.schema, "run_claim_busy");
    EXPECT(sp_store_claim_attempt(s, &claim, &c, &err), &err, SP_STORE_CONFLICT, "run.busy");
    claim.skip_busy = false;
    EXPECT(sp_store_claim_attempt(s, &claim, &c, &err), &err, SP_STORE_UNAVAILABLE, "store.busy");
    claim.skip_busy = true;
    CHECK(admin_exec("ROLLBACK"));
    EXPECT_OK(sp_store_claim_attempt(s, &claim, &c, &err), &err);
    CHECK(c.disposition == SP_APPLIED && c.attempt_number == 1 && c.attempt.fence == 1);
    sp_claim_free(&c);
    busy_close(&f);
}

/* A coordinator's turn (skip_busy) likewise: a run another transaction
 * holds is conflict/run.busy at once, nothing changed; without skip_busy
 * the commit waits (store.busy after lock_timeout); once the lock is gone
 * the same commit applies. */
static void q04_turn_skips_busy(void)
{
    busy_fixture f;
    if (!busy_open(&f, "run_turn_busy"))
        return;
    sp_error err = {0};
    fx_decision d;
    CHECK(fx_decide(f.s, &f.k, &d));
    d.req.skip_busy = true;
    sp_commit_turn_res res;
    hold_run(f.schema, "run_turn_busy");
    EXPECT(sp_store_commit_turn(f.s, &d.req, &res, &err), &err, SP_STORE_CONFLICT, "run.busy");
    d.req.skip_busy = false;
    EXPECT(sp_store_commit_turn(f.s, &d.req, &res, &err), &err, SP_STORE_UNAVAILABLE,
           "store.busy");
    d.req.skip_busy = true;
    CHECK(admin_exec("ROLLBACK"));
    EXPECT_OK(sp_store_commit_turn(f.s, &d.req, &res, &err), &err);
    CHECK(res.disposition == SP_APPLIED && res.revision == 1);
    fx_decision_free(&d);
    busy_close(&f);
}

/* ---- racing create_run across two connections ---- */

typedef struct create_job {
    sp_store *s;
    sp_run_key key;
    const char *start_key;
    pthread_barrier_t *barrier;
    sp_store_rc rc;
    sp_disposition d;
    char code[SP_CODE_MAX];
} create_job;

static void *create_thread(void *p)
{
    create_job *j = p;
    sp_create_run_res res;
    sp_error err = {0};
    pthread_barrier_wait(j->barrier);
    j->rc = fx_create(j->s, &j->key, j->start_key, &res, &err);
    j->d = res.disposition;
    snprintf(j->code, sizeof j->code, "%s", err.code);
    sp_error_clear(&err);
    return NULL;
}

static void race_two(create_job *jobs)
{
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        jobs[i].barrier = &barrier;
        pthread_create(&t[i], NULL, create_thread, &jobs[i]);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
}

static void q04_create_race(void)
{
    store_env e;
    if (!store_env_open(&e, &PG, true)) {
        CHECK(false);
        return;
    }
    int busy = 0;
    for (int i = 0; i < 20; i++) {
        char id[64], start[64];
        snprintf(id, sizeof id, "run_race_%d", i);
        snprintf(start, sizeof start, "race-%d", i);
        /* the same request from two workers */
        create_job same[2] = {{.s = e.a, .key = fx_key(id), .start_key = start},
                              {.s = e.b, .key = fx_key(id), .start_key = start}};
        race_two(same);
        int applied = 0;
        for (int j = 0; j < 2; j++) {
            applied += same[j].rc == SP_STORE_OK && same[j].d == SP_APPLIED;
            if (same[j].rc == SP_STORE_UNAVAILABLE) {
                busy++;
                CHECK_STR(same[j].code, "store.busy");
                sp_create_run_res r; /* the identical retry finds the receipt */
                sp_error err = {0};
                EXPECT_OK(fx_create(same[j].s, &same[j].key, start, &r, &err), &err);
                CHECK_INT(r.disposition, SP_DUPLICATE);
            } else {
                CHECK_INT(same[j].rc, SP_STORE_OK);
            }
        }
        CHECK_INT(applied, 1);
        /* two runs for one start key: one wins, the other never gets a run */
        char id2[64], id3[64], start2[64];
        snprintf(id2, sizeof id2, "run_race_x%d", i);
        snprintf(id3, sizeof id3, "run_race_y%d", i);
        snprintf(start2, sizeof start2, "race-key-%d", i);
        create_job two[2] = {{.s = e.a, .key = fx_key(id2), .start_key = start2},
                             {.s = e.b, .key = fx_key(id3), .start_key = start2}};
        race_two(two);
        applied = 0;
        for (int j = 0; j < 2; j++) {
            applied += two[j].rc == SP_STORE_OK;
            if (two[j].rc == SP_STORE_UNAVAILABLE) {
                busy++;
                sp_create_run_res r;
                sp_error err = {0};
                EXPECT(fx_create(two[j].s, &two[j].key, start2, &r, &err), &err, SP_STORE_CONFLICT,
                       "run.start-key-mismatch");
            } else if (two[j].rc != SP_STORE_OK) {
                CHECK_STR(two[j].code, "run.start-key-mismatch");
            }
        }
        CHECK_INT(applied, 1);
    }
    printf("postgres create_run races: %d losers answered store.busy and converged on retry\n",
           busy);
    store_env_close(&e);
}

/* A store in a new schema of its own at `loc`, on a manual clock at 1000. */
static sp_store *fresh_store(char *schema, size_t schema_cap, char loc[STORE_LOCATION_MAX],
                             manual_clock *clock)
{
    CHECK(new_schema(schema, schema_cap));
    url_for(loc, STORE_LOCATION_MAX, schema, NULL);
    manual_clock_set(clock, 1000);
    sp_error err = {0};
    sp_store *s = open_at(loc, clock, &err);
    CHECK(s != NULL);
    sp_error_clear(&err);
    return s;
}

/* ---- a connection killed mid-transaction ---- */

static void q04_connection_lost(void)
{
    char schema[64], loc[STORE_LOCATION_MAX], sql[512];
    manual_clock clock;
    sp_error err = {0};
    sp_store *s = fresh_store(schema, sizeof schema, loc, &clock);
    if (!s)
        return;
    sp_run_key k = fx_key("run_lost");
    sp_create_run_res cr;
    EXPECT_OK(fx_create(s, &k, "lost", &cr, &err), &err);
    /* hold the run's lock, let the store's mutation wait on it, kill its session */
    CHECK(admin_exec("BEGIN"));
    snprintf(sql, sizeof sql, "SELECT 1 FROM %s.runs WHERE run_id = 'run_lost' FOR UPDATE", schema);
    CHECK(admin_exec(sql));
    char kill_sql[256]; /* the session waiting for the admin connection's lock */
    snprintf(kill_sql, sizeof kill_sql,
             "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
             " WHERE %d = ANY (pg_blocking_pids(pid))",
             PQbackendPID(CTX.admin));
    pid_t pid = fork();
    if (pid == 0) {
        PGconn *killer = PQconnectdb(CTX.url);
        for (int i = 0; i < 100; i++) { /* until it waits (well before lock_timeout) */
            usleep(20 * 1000);
            PGresult *r = PQexec(killer, kill_sql);
            bool done = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0;
            PQclear(r);
            if (done)
                break;
        }
        PQfinish(killer);
        _exit(0);
    }
    sp_append_event_res a;
    EXPECT(fx_signal(s, &k, "m1", "go", &a, &err), &err, SP_STORE_UNAVAILABLE, "store.io");
    waitpid(pid, NULL, 0);
    CHECK(admin_exec("ROLLBACK"));
    EXPECT_OK(fx_signal(s, &k, "m1", "go", &a, &err), &err); /* reconnected */
    CHECK(a.disposition == SP_APPLIED && a.sequence == 2);
    CHECK_INT(fx_event_count(s, &k, NULL), 2);
    sp_store_close(s);
    pg_destroy(&CTX, loc);
}

/* ---- a batch whose bare first request's deferred write fails ---- */

/* The events of `schema`'s runs, by the admin connection; -1 on error. */
static int admin_events(const char *schema)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.events", schema);
    return (int)admin_long(sql);
}

/* A trigger of the test's refuses the events of run_refused (a check
 * violation: a failure that comes again). */
static void refuse_events(const char *schema)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "CREATE FUNCTION %s.refuse() RETURNS trigger LANGUAGE plpgsql AS"
             " $$BEGIN RAISE EXCEPTION USING ERRCODE = 'check_violation',"
             " MESSAGE = 'refused by the test'; END$$;"
             " CREATE TRIGGER refuse BEFORE INSERT ON %s.events FOR EACH ROW"
             " WHEN (NEW.run_id = 'run_refused') EXECUTE FUNCTION %s.refuse()",
             schema, schema, schema);
    CHECK(admin_exec(sql));
}

/* Where the failing request stands in its batch. */
typedef enum fail_place {
    FAIL_ALONE,  /* the batch's only request */
    FAIL_FIRST,  /* first, another request behind it */
    FAIL_SECOND, /* behind a request, another one behind it */
} fail_place;

/* Signal `message` to run `run`. */
static sp_store_rc batch_signal(sp_store *s, const char *run, const char *message, sp_error *err)
{
    sp_run_key key = fx_key(run);
    sp_append_event_res a;
    return fx_signal(s, &key, message, "go", &a, err);
}

/* The statements of one batch of two signals (message `message`). */
static uint64_t two_signals(sp_store *s, const char *message)
{
    sp_error err = {0};
    sp_store_counters before, after;
    sp_store_counters_get(s, &before);
    EXPECT_OK(sp_store_batch_begin(s, &err), &err);
    EXPECT_OK(batch_signal(s, "run_before", message, &err), &err);
    EXPECT_OK(batch_signal(s, "run_after", message, &err), &err);
    EXPECT_OK(sp_store_batch_commit(s, &err), &err);
    sp_store_counters_get(s, &after);
    return after.statements - before.statements;
}

/* After writes failed for good, each request of a batch keeps its own
 * SAVEPOINT and RELEASE until 64 batches have begun (tx.c); then the first
 * request is bare again and the others have none: four statements less
 * for the same two signals. */
static void answered_batches_end(sp_store *s)
{
    sp_error err = {0};
    uint64_t answered = two_signals(s, "m2");
    for (int i = 0; i < 64; i++) {
        EXPECT_OK(sp_store_batch_begin(s, &err), &err);
        EXPECT_OK(sp_store_batch_commit(s, &err), &err);
    }
    uint64_t unguarded = two_signals(s, "m3");
    CHECK_INT((int)(answered - unguarded), 4);
}

/* A request's pipelined writes are answered by the batch's next exchange
 * (tx.c; a request after the first has no savepoint), after the request
 * has returned: here the server
 * refuses the INSERT of a signal's event (a trigger of the test's, as a
 * check violation: a failure that will come again). Nothing of the batch
 * is stored:
 *   - with a request behind it, that request must not be blamed: it fails
 *     with unavailable/store.busy naming the refusal, and the batch's commit
 *     fails (transient: the batch is made again);
 *   - alone (its writes answered by the COMMIT): conflict/store.constraint,
 *     not unknown-commit.
 * Made again, the batch answers each request's writes on its own, each in
 * its savepoint: the failing request fails alone (conflict/store.constraint)
 * and the others commit; once the trigger is gone it commits too. */
static void q04_batch_write_fails(fail_place place)
{
    char schema[64], loc[STORE_LOCATION_MAX], sql[512];
    manual_clock clock;
    sp_error err = {0};
    sp_store *s = fresh_store(schema, sizeof schema, loc, &clock);
    if (!s)
        return;
    static const char *const RUNS[] = {"run_before", "run_refused", "run_after"};
    sp_create_run_res cr;
    for (int i = 0; i < 3; i++) {
        sp_run_key key = fx_key(RUNS[i]);
        EXPECT_OK(fx_create(s, &key, RUNS[i], &cr, &err), &err);
    }
    /* one batch of all three first: the connection has every statement
     * prepared (a prepare waits, and would answer the writes before it) */
    EXPECT_OK(sp_store_batch_begin(s, &err), &err);
    for (int i = 0; i < 3; i++)
        EXPECT_OK(batch_signal(s, RUNS[i], "m0", &err), &err);
    EXPECT_OK(sp_store_batch_commit(s, &err), &err);
    const int before = 6; /* three run.started, three m0 */
    refuse_events(schema);
    const char *const *batch = RUNS + (place == FAIL_SECOND ? 0 : 1); /* refused: batch[refused] */
    size_t n = place == FAIL_ALONE ? 1 : 2 + (place == FAIL_SECOND);
    size_t refused = place == FAIL_SECOND;
    size_t returning = place == FAIL_ALONE ? 1 : n - 1; /* the refused one's writes unanswered */
    EXPECT_OK(sp_store_batch_begin(s, &err), &err);
    for (size_t i = 0; i < returning; i++)
        EXPECT_OK(batch_signal(s, batch[i], "m1", &err), &err);
    if (place == FAIL_ALONE) {
        EXPECT(sp_store_batch_commit(s, &err), &err, SP_STORE_CONFLICT, "store.constraint");
    } else {
        sp_store_rc next = batch_signal(s, batch[n - 1], "m1", &err);
        CHECK(strstr(err.message, "refused by the test") != NULL); /* whose failure it was */
        EXPECT(next, &err, SP_STORE_UNAVAILABLE, "store.busy");
        sp_store_rc rc = sp_store_batch_commit(s, &err);
        CHECK(rc != SP_STORE_OK && sp_store_rc_transient(rc));
        sp_error_clear(&err);
    }
    CHECK(!sp_store_in_batch(s));
    CHECK_INT(admin_events(schema), before);
    EXPECT_OK(sp_store_batch_begin(s, &err), &err);
    for (size_t i = 0; i < n; i++)
        if (i == refused)
            EXPECT(batch_signal(s, batch[i], "m1", &err), &err, SP_STORE_CONFLICT,
                   "store.constraint");
        else
            EXPECT_OK(batch_signal(s, batch[i], "m1", &err), &err);
    EXPECT_OK(sp_store_batch_commit(s, &err), &err);
    CHECK_INT(admin_events(schema), before + (int)n - 1); /* the others' signals alone */
    snprintf(sql, sizeof sql, "DROP TRIGGER refuse ON %s.events", schema);
    CHECK(admin_exec(sql));
    EXPECT_OK(sp_store_batch_begin(s, &err), &err);
    EXPECT_OK(batch_signal(s, RUNS[1], "m1", &err), &err);
    EXPECT_OK(sp_store_batch_commit(s, &err), &err);
    CHECK_INT(admin_events(schema), before + (int)n);
    if (place == FAIL_FIRST)
        answered_batches_end(s);
    sp_store_close(s);
    pg_destroy(&CTX, loc);
}

/* ---- batches sent with their answers read later (docs/postgres.md §3i) ---- */

/* Two batches sent one behind the other, the first one's answer unread
 * when the second is sent: both commit, each answered with its ticket, in
 * order. A third, while both are unanswered, finds the queue full
 * (SP_DB_SENT_MAX): it is answered at once - after them, its mark chained
 * to theirs - with the larger ticket. Then a batch the server refuses (a trigger of the test's, as
 * above) is sent and its answer left unread, and the next batch begins
 * behind it. That batch's first read answers the refusal first and then
 * fails itself - its transaction was queued after the failed one - as a
 * missed prediction (unavailable/store.prediction-missed, "the batch sent
 * before this one did not commit"), not as the server's "current
 * transaction is aborted" (incompatible/store.sql, which the engine would
 * not make again). The refused batch's own answer is its refusal
 * (conflict/store.constraint). Nothing of either is stored, and the
 * connection serves the next batch. */
static void q04_sent_behind_refused(void)
{
    char schema[64], loc[STORE_LOCATION_MAX];
    manual_clock clock;
    sp_error err = {0};
    sp_store *s = fresh_store(schema, sizeof schema, loc, &clock);
    if (!s)
        return;
    static const char *const RUNS[] = {"run_refused", "run_other"};
    sp_create_run_res cr;
    EXPECT_OK(sp_store_batch_begin(s, &err), &err);
    for (int i = 0; i < 2; i++) {
        sp_run_key key = fx_key(RUNS[i]);
        EXPECT_OK(fx_create(s, &key, RUNS[i], &cr, &err), &err);
        EXPECT_OK(batch_signal(s, RUNS[i], "m0", &err), &err); /* statements prepared */
    }
    EXPECT_OK(sp_store_batch_commit(s, &err), &err);
    uint64_t ticket = 0, first = 0, third = 0;
    bool later = false;
    for (int i = 0; i < 3; i++) {
        EXPECT_OK(sp_store_batch_begin(s, &err), &err);
        EXPECT_OK(batch_signal(s, RUNS[i % 2], i < 2 ? "m1" : "m1b", &err), &err);
        EXPECT_OK(sp_store_batch_send(s, i < 2 ? &ticket : &third, &later, &err), &err);
        CHECK(later == (i < 2)); /* the third: the queue is full */
    }
    EXPECT_OK(sp_store_batch_answer(s, &first, &err), &err);
    EXPECT_OK(sp_store_batch_answer(s, &ticket, &err), &err);
    CHECK(first > 0 && ticket > first && third > ticket && !sp_store_batch_sent(s));
    EXPECT_OK(sp_store_wait_flushed(s, third, &err), &err);
    const int before = 7; /* two run.started, two m0, two m1, one m1b */
    CHECK_INT(admin_events(schema), before);
    refuse_events(schema);
    EXPECT_OK(sp_store_batch_begin(s, &err), &err);
    EXPECT_OK(batch_signal(s, RUNS[0], "m2", &err), &err); /* refused at its answer */
    EXPECT_OK(sp_store_batch_send(s, &ticket, &later, &err), &err);
    CHECK(later && ticket == 0 && sp_store_batch_sent(s));
    EXPECT_OK(sp_store_batch_begin(s, &err), &err);
    EXPECT(batch_signal(s, RUNS[1], "m2", &err), &err, SP_STORE_UNAVAILABLE,
           SP_STORE_PREDICTION_MISSED);
    sp_store_batch_abort(s);
    EXPECT(sp_store_batch_answer(s, &ticket, &err), &err, SP_STORE_CONFLICT, "store.constraint");
    CHECK(!sp_store_batch_sent(s) && ticket == 0);
    CHECK_INT(admin_events(schema), before);
    EXPECT_OK(sp_store_batch_begin(s, &err), &err);
    EXPECT_OK(batch_signal(s, RUNS[1], "m3", &err), &err);
    EXPECT_OK(sp_store_batch_commit(s, &err), &err);
    CHECK_INT(admin_events(schema), before + 1);
    sp_store_close(s);
    pg_destroy(&CTX, loc);
}

/* The settle of `c`'s attempt (success, no decider) in the open batch,
 * expected to answer OK. */
static void settle_ok(sp_store *s, const sp_claim *c)
{
    sp_error err = {0};
    sp_settle_res r;
    sp_store_rc rc = fx_settle_attempt(s, &c->attempt, "success", NULL, &r, &err);
    EXPECT_OK(rc, &err);
    if (rc == SP_STORE_OK)
        sp_settle_res_free(&r);
}

/* That settle in a batch of its own, sent (sp_store_batch_send): whether
 * its answer was left for later. */
static bool send_settle(sp_store *s, const sp_claim *c, uint64_t *ticket)
{
    sp_error err = {0};
    bool later = false;
    EXPECT_OK(sp_store_batch_begin(s, &err), &err);
    settle_ok(s, c);
    EXPECT_OK(sp_store_batch_send(s, ticket, &later, &err), &err);
    return later;
}

static size_t results_of(sp_store *s, const sp_claim *c)
{
    char id[SP_ID_LEN + 24];
    snprintf(id, sizeof id, "att:%s", c->attempt.attempt_id);
    return fx_event_count(s, &c->attempt.key, id);
}

/* What makes the first of two sent batches fail on the server. */
typedef enum sent_failure {
    SENT_GUARD_FAILS,   /* its run moved: a guard fails, its transaction is aborted */
    SENT_COMMIT_FAILS,  /* a deferred check of the test's refuses its COMMIT */
} sent_failure;

/* `run`'s events refused when their transaction commits. */
static void refuse_at_commit(const char *schema, const char *run)
{
    char sql[768];
    snprintf(sql, sizeof sql,
             "CREATE FUNCTION %s.refuse_late() RETURNS trigger LANGUAGE plpgsql AS"
             " $$BEGIN RAISE EXCEPTION USING ERRCODE = 'check_violation',"
             " MESSAGE = 'refused at commit by the test'; END$$;"
             " CREATE CONSTRAINT TRIGGER refuse_late AFTER INSERT ON %s.events"
             " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.run_id = '%s')"
             " EXECUTE FUNCTION %s.refuse_late()",
             schema, schema, run, schema);
    CHECK(admin_exec(sql));
}

/* docs/postgres.md §3i: a batch sent behind one whose answer is unread
 * commits only if that one did. Two settles on predicted reads (no read:
 * the second batch is sent before the first one's answer), each on a run
 * of its own; the first one fails on the server (`how`), the second's
 * guards hold. Both fail and neither result is stored; the second answers
 * the miss. When the first one's COMMIT fails, its transaction is over
 * and the second one's runs: only its chained commit mark (outcome.c)
 * stops it. Made again, they read, and both commit. A pair that both
 * commit goes first: it prepares the statements, the chained mark's among
 * them (preparing one takes an exchange, which reads the answers sent
 * before). */
static void q04_sent_chained(sent_failure how)
{
    char schema[64], loc[STORE_LOCATION_MAX], sql[512];
    sp_error err = {0};
    CHECK(new_schema(schema, sizeof schema));
    url_for(loc, STORE_LOCATION_MAX, schema, NULL);
    sp_store *s = sp_store_open(loc, NULL, &err); /* the database's clock: predictions */
    CHECK(s != NULL);
    if (!s) {
        sp_error_clear(&err);
        return;
    }
    sp_claim c[4];
    store_predicted_claims(s, "sent", c, 4);
    uint64_t first = 0, second = 0;
    CHECK(send_settle(s, &c[0], &first) && send_settle(s, &c[1], &second));
    EXPECT_OK(sp_store_batch_answer(s, &first, &err), &err);
    EXPECT_OK(sp_store_batch_answer(s, &second, &err), &err);
    CHECK(first > 0 && second > first);
    if (how == SENT_COMMIT_FAILS) {
        refuse_at_commit(schema, c[2].attempt.key.run_id);
    } else {
        snprintf(sql, sizeof sql, "UPDATE %s.runs SET updated_at_ms = updated_at_ms + 1"
                                  " WHERE run_id = '%s'", schema, c[2].attempt.key.run_id);
        CHECK(admin_exec(sql));
    }
    sp_store_counters before, after;
    sp_store_counters_get(s, &before);
    CHECK(send_settle(s, &c[2], &first));
    CHECK(send_settle(s, &c[3], &second)); /* behind the first, its answer unread */
    sp_store_counters_get(s, &after);
    CHECK_INT(after.predicted - before.predicted, 2);
    CHECK_INT(after.sent - before.sent, 2);
    if (how == SENT_COMMIT_FAILS)
        EXPECT(sp_store_batch_answer(s, &first, &err), &err, SP_STORE_CONFLICT,
               "store.constraint");
    else
        EXPECT(sp_store_batch_answer(s, &first, &err), &err, SP_STORE_UNAVAILABLE,
               SP_STORE_PREDICTION_MISSED);
    EXPECT(sp_store_batch_answer(s, &second, &err), &err, SP_STORE_UNAVAILABLE,
           SP_STORE_PREDICTION_MISSED);
    CHECK(first == 0 && second == 0 && !sp_store_batch_sent(s));
    CHECK_INT(results_of(s, &c[2]), 0);
    CHECK_INT(results_of(s, &c[3]), 0);
    if (how == SENT_COMMIT_FAILS) {
        snprintf(sql, sizeof sql, "DROP TRIGGER refuse_late ON %s.events", schema);
        CHECK(admin_exec(sql));
    }
    /* made again: they read, and commit */
    EXPECT_OK(sp_store_batch_begin(s, &err), &err);
    settle_ok(s, &c[2]);
    settle_ok(s, &c[3]);
    EXPECT_OK(sp_store_batch_commit(s, &err), &err);
    for (int i = 0; i < 4; i++) {
        CHECK_INT(results_of(s, &c[i]), 1);
        sp_claim_free(&c[i]);
    }
    sp_store_close(s);
    pg_destroy(&CTX, loc);
}

/* ---- answers lost on their way (tests/pg/commit_cut.py) ---- */

/* The proxy of tests/pg/commit_cut.py in front of the test server. */
typedef struct cut_proxy {
    pid_t pid;
    char dir[64]; /* its files: port, armed, cuts */
    char url[STORE_LOCATION_MAX]; /* the test server's URL through it, in the clear */
} cut_proxy;

static void proxy_file(const cut_proxy *p, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", p->dir, name);
}

/* host:port of the test server's URL into `out`. */
static bool server_target(char *out, size_t cap)
{
    const char *at = strchr(CTX.url, '@');
    const char *host = at ? at + 1 : strstr(CTX.url, "://");
    if (!host)
        return false;
    host += at ? 0 : 3;
    size_t n = strcspn(host, "/?");
    bool has_port = memchr(host, ':', n) != NULL;
    return (size_t)snprintf(out, cap, "%.*s%s", (int)n, host, has_port ? "" : ":5432") < cap;
}

/* The proxy's port once it listens (its port file), 0 after 10 s. */
static int proxy_port(const cut_proxy *p)
{
    char path[96];
    proxy_file(p, "port", path, sizeof path);
    for (int i = 0; i < 1000; i++) {
        FILE *f = fopen(path, "r");
        int port = 0;
        if (f && fscanf(f, "%d", &port) != 1)
            port = 0;
        if (f)
            fclose(f);
        if (port > 0)
            return port;
        usleep(10000);
    }
    return 0;
}

/* Started, losing the answers of the armed COMMITs numbered `lose`. */
static bool proxy_start(cut_proxy *p, const char *lose)
{
    char target[256], port_file[96], armed[96], cuts[96];
    snprintf(p->dir, sizeof p->dir, "/tmp/spore-cut-XXXXXX");
    if (!server_target(target, sizeof target) || !mkdtemp(p->dir))
        return false;
    proxy_file(p, "port", port_file, sizeof port_file);
    proxy_file(p, "armed", armed, sizeof armed);
    proxy_file(p, "cuts", cuts, sizeof cuts);
    p->pid = fork();
    if (p->pid == 0) {
        execlp("python3", "python3", SPORE_COMMIT_CUT, "--target", target, "--port-file",
               port_file, "--arm-file", armed, "--log", cuts, "--lose-answer", lose, (char *)NULL);
        _exit(127);
    }
    int port = p->pid > 0 ? proxy_port(p) : 0;
    const char *at = strchr(CTX.url, '@');
    size_t scheme = at ? (size_t)(at + 1 - CTX.url) : 0;
    const char *rest = at ? at + 1 + strcspn(at + 1, "/?") : "";
    snprintf(p->url, sizeof p->url, "%.*s127.0.0.1:%d%s%csslmode=disable&gssencmode=disable",
             (int)scheme, CTX.url, port, rest, strchr(rest, '?') ? '&' : '?');
    return port > 0 && at != NULL;
}

static void proxy_arm(const cut_proxy *p)
{
    char path[96];
    proxy_file(p, "armed", path, sizeof path);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
}

/* The proxy's log of its cuts (empty when there is none). */
static void proxy_cuts(const cut_proxy *p, char *out, size_t cap)
{
    char path[96];
    proxy_file(p, "cuts", path, sizeof path);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(out, 1, cap - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
}

static void proxy_stop(cut_proxy *p)
{
    if (p->pid > 0) {
        kill(p->pid, SIGTERM);
        waitpid(p->pid, NULL, 0);
    }
    static const char *const files[] = {"port", "armed", "cuts"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[96];
        proxy_file(p, files[i], path, sizeof path);
        unlink(path);
    }
    rmdir(p->dir);
}

/* docs/postgres.md §3i: two batches sent, the second behind the first, both
 * committed, and both answers lost with the connection (the proxy cuts
 * once the server answered the first one's COMMIT; the first one's event
 * waits on the server, so the second was on the server before that answer
 * and commits too). The session's mark is then the second one's: the read
 * back says that the first committed (a mark of a batch chained behind it
 * is proof), and then that the second did. Nothing is stored twice or
 * lost. */
static void q04_sent_both_lost(void)
{
    char schema[64], loc[STORE_LOCATION_MAX], sql[768], cuts[256];
    cut_proxy proxy = {0};
    bool started = proxy_start(&proxy, "1");
    if (!started)
        fprintf(stderr, "q04_sent_both_lost: the proxy %s did not start (python3 is needed:"
                        " scripts/deps.sh installs it)\n", SPORE_COMMIT_CUT);
    CHECK(started);
    CHECK(new_schema(schema, sizeof schema));
    url_through(loc, sizeof loc, proxy.url, schema, NULL);
    sp_error err = {0};
    sp_store *s = started ? sp_store_open(loc, NULL, &err) : NULL;
    CHECK(s != NULL);
    if (!s) {
        sp_error_clear(&err);
        pg_destroy(&CTX, loc); /* the schema new_schema made */
        proxy_stop(&proxy);
        return;
    }
    sp_claim c[4];
    store_predicted_claims(s, "lost", c, 4);
    uint64_t first = 0, second = 0;
    CHECK(send_settle(s, &c[0], &first) && send_settle(s, &c[1], &second)); /* prepared */
    EXPECT_OK(sp_store_batch_answer(s, &first, &err), &err);
    EXPECT_OK(sp_store_batch_answer(s, &second, &err), &err);
    snprintf(sql, sizeof sql,
             "CREATE FUNCTION %s.slow() RETURNS trigger LANGUAGE plpgsql AS"
             " $$BEGIN PERFORM pg_sleep(0.3); RETURN NEW; END$$;"
             " CREATE TRIGGER slow BEFORE INSERT ON %s.events FOR EACH ROW"
             " WHEN (NEW.run_id = '%s') EXECUTE FUNCTION %s.slow()",
             schema, schema, c[2].attempt.key.run_id, schema);
    CHECK(admin_exec(sql));
    proxy_arm(&proxy);
    CHECK(send_settle(s, &c[2], &first));
    CHECK(send_settle(s, &c[3], &second)); /* behind the first, its answer unread */
    sp_commit_outcome out = SP_COMMIT_UNKNOWABLE;
    for (int i = 0; i < 2; i++) {
        uint64_t ticket = 1;
        EXPECT(sp_store_batch_answer(s, &ticket, &err), &err, SP_STORE_UNKNOWN_COMMIT,
               "store.unknown-commit");
        CHECK(ticket == 0);
        EXPECT_OK(sp_store_commit_outcome(s, &out, &err), &err);
        CHECK_INT(out, SP_COMMIT_HAPPENED);
    }
    CHECK(!sp_store_batch_sent(s));
    proxy_cuts(&proxy, cuts, sizeof cuts);
    CHECK(strncmp(cuts, "answer 1 ", 9) == 0 && strchr(cuts, '\n') == strrchr(cuts, '\n'));
    for (int i = 0; i < 4; i++) {
        CHECK_INT(results_of(s, &c[i]), 1);
        sp_claim_free(&c[i]);
    }
    sp_store_close(s);
    pg_destroy(&CTX, loc);
    proxy_stop(&proxy);
}

/* ---- a reconnect proves the commits the flusher has not ---- */

/* The backend of application `app` whose last statement was the flusher's
 * (flush.c: FLUSH_SQL) when `flusher`, else the other one (the store's
 * own); -1 when there is not exactly one. */
static long backend_of(const char *app, bool flusher)
{
    char sql[320];
    snprintf(sql, sizeof sql,
             "SELECT min(pid) FROM pg_stat_activity WHERE application_name = '%s'"
             " AND (query LIKE 'SELECT txid_current()%%') = %s HAVING count(*) = 1",
             app, flusher ? "true" : "false");
    return admin_long(sql);
}

/* One deferred batch of a signal on `run`: its ticket (0 on failure). */
static uint64_t deferred_signal(sp_store *s, const char *run, const char *message)
{
    sp_error err = {0};
    uint64_t ticket = 0;
    EXPECT_OK(sp_store_batch_begin(s, &err), &err);
    EXPECT_OK(batch_signal(s, run, message, &err), &err);
    EXPECT_OK(sp_store_batch_commit_deferred(s, &ticket, &err), &err);
    CHECK(ticket != 0);
    return ticket;
}

static uint64_t unflushed_of(sp_store *s)
{
    sp_store_counters n;
    sp_store_counters_get(s, &n);
    return n.unflushed;
}

/* End the store's own backend, then signal `run` until a request gets
 * through the reconnect: the first may fail with the connection (its BEGIN
 * went out with it: a transient failure, made again). The answer of the
 * request that reconnected. */
static sp_store_rc cut_and_signal(sp_store *s, const char *app, const char *run,
                                  const char *message, sp_error *err)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%ld)", backend_of(app, false));
    CHECK(admin_long(sql) >= 0);
    sp_store_rc rc = batch_signal(s, run, message, err);
    if (sp_store_rc_transient(rc)) { /* lost commits are corrupt: not made again */
        sp_error_clear(err);
        rc = batch_signal(s, run, message, err);
    }
    return rc;
}

/* docs/postgres.md §3h item 4: commits the flusher has not proved when the
 * store's connection is lost are proved by the reconnected connection
 * itself, before anything else, with the flusher stopped (its backend
 * SIGSTOPped mid-flush, so that only the reconnect can answer):
 *   - the server kept them: the reconnect flushes the tickets (none is
 *     left unflushed, the flusher still stopped);
 *   - the session's mark stays behind them (a trigger of the test's, as
 *     after a server crash that lost its WAL: test_pg_flush_lost.sh does
 *     the same through the flusher): the request that reconnected fails
 *     with corrupt/store.io naming the lost commits, and a batch after it
 *     does not commit.
 * Needs the server's processes on this host (the test's own server). */
static void q04_flush_reconnect(void)
{
    char schema[64], loc[STORE_LOCATION_MAX], app[64], sql[512];
    manual_clock clock;
    sp_error err = {0};
    CHECK(new_schema(schema, sizeof schema));
    snprintf(app, sizeof app, "spore_flush_%d", (int)getpid());
    url_for(loc, STORE_LOCATION_MAX, schema, NULL);
    snprintf(loc + strlen(loc), STORE_LOCATION_MAX - strlen(loc), "&application_name=%s", app);
    manual_clock_set(&clock, 1000);
    sp_store *s = open_at(loc, &clock, &err);
    CHECK(s != NULL);
    if (!s)
        return;
    sp_run_key k = fx_key("run_flush");
    sp_create_run_res cr;
    EXPECT_OK(fx_create(s, &k, "flush", &cr, &err), &err);
    EXPECT_OK(sp_store_wait_flushed(s, deferred_signal(s, "run_flush", "f1"), &err), &err);
    long flusher = backend_of(app, true);
    CHECK(flusher > 0);
    bool stopped = flusher > 0 && kill((pid_t)flusher, SIGSTOP) == 0;
    if (!stopped) {
        fprintf(stderr, "q04_flush_reconnect: cannot stop the flusher's backend %ld (%s): the"
                        " test needs its PostgreSQL server on this host\n",
                flusher, strerror(errno));
        CHECK(stopped);
        sp_store_close(s);
        pg_destroy(&CTX, loc);
        return;
    }
    /* kept by the server, proved by the reconnect alone */
    deferred_signal(s, "run_flush", "f2");
    CHECK(unflushed_of(s) > 0);
    EXPECT_OK(cut_and_signal(s, app, "run_flush", "f3", &err), &err);
    CHECK_INT(unflushed_of(s), 0);
    CHECK_INT(fx_event_count(s, &k, NULL), 4); /* run.started, f1, f2, f3 */
    /* lost by the server: the mark stays where it was */
    snprintf(sql, sizeof sql,
             "CREATE FUNCTION %s.keep_mark() RETURNS trigger LANGUAGE plpgsql AS"
             " $$BEGIN NEW.mark := OLD.mark; RETURN NEW; END$$;"
             " CREATE TRIGGER keep_mark BEFORE UPDATE ON %s.commit_marks"
             " FOR EACH ROW EXECUTE FUNCTION %s.keep_mark()",
             schema, schema, schema);
    CHECK(admin_exec(sql));
    deferred_signal(s, "run_flush", "f4");
    CHECK(unflushed_of(s) > 0);
    sp_store_rc rc = cut_and_signal(s, app, "run_flush", "f5", &err);
    CHECK(strstr(err.message, "lost commits it had answered") != NULL);
    EXPECT(rc, &err, SP_STORE_CORRUPT, "store.io");
    CHECK_INT(fx_event_count(s, &k, "sig:f4"), 1); /* the server has it; the proof did not */
    CHECK_INT(fx_event_count(s, &k, "sig:f5"), 0); /* refused before it began */
    uint64_t ticket = 1;
    EXPECT_OK(sp_store_batch_begin(s, &err), &err); /* a batch after it does not commit */
    EXPECT_OK(batch_signal(s, "run_flush", "f6", &err), &err);
    EXPECT(sp_store_batch_commit_deferred(s, &ticket, &err), &err, SP_STORE_CORRUPT, "store.io");
    CHECK_INT(fx_event_count(s, &k, "sig:f6"), 0);
    kill((pid_t)flusher, SIGCONT);
    sp_store_close(s);
    pg_destroy(&CTX, loc);
}

/* ---- the C API on PostgreSQL ---- */

static int api_step(void *user, const char *input, size_t input_len, spore_call *call)
{
    (void)user, (void)input, (void)input_len;
    return spore_call_succeed(call, NULL, "{\"ok\":true}", 11);
}

/* spore_open on a postgres:// URL: a whole run, and its status. */
static void q04_api(void)
{
    char loc[STORE_LOCATION_MAX];
    CHECK(pg_fresh(&CTX, loc));
    spore_error err = {0};
    spore_db *db = spore_open(loc, &err);
    if (!db) {
        check_fail(__FILE__, __LINE__, "spore_open: %s: %s", err.code, err.message);
        return;
    }
    static const char WF[] =
        "{\"format\":\"runspore.workflow/0.1\",\"name\":\"api-pg\",\"start\":\"a\","
        "\"actions\":{\"a\":{\"kind\":\"native\",\"function\":\"pg.step\","
        "\"effect\":\"idempotent\"}},"
        "\"nodes\":{\"a\":{\"kind\":\"activity\",\"action\":\"a\",\"outcomes\":{\"ok\":\"done\"}},"
        "\"done\":{\"kind\":\"complete\",\"output\":{\"$get\":[\"nodes\",\"a\",\"output\"]}}}}";
    CHECK_INT(spore_register_native(db, "pg.step", api_step, NULL, &err), 0);
    char *run_id = NULL, *status = NULL;
    bool created = false;
    CHECK_INT(spore_start(db, WF, "{}", "api-pg", &run_id, &created, &err), 0);
    CHECK(created);
    spore_park park = SPORE_PARK_FAILED;
    CHECK(run_id && spore_run_until_parked(db, run_id, &park, &err) == 0);
    CHECK_INT(park, SPORE_PARK_COMPLETED);
    CHECK(run_id && spore_status(db, run_id, &status, &err) == 0);
    CHECK(status && strstr(status, "\"status\":\"completed\"") && strstr(status, "\"ok\":true"));
    if (err.code[0])
        fprintf(stderr, "api: %s: %s\n", err.code, err.message);
    spore_free(run_id);
    spore_free(status);
    spore_error_clear(&err);
    spore_close(db);
    pg_destroy(&CTX, loc);
}

/* ---- work selection reads a page, not the queue ---- */

#define QUEUE_LEN 2000
#define QUEUE_PAGE 5

/* Entries the scans of `schema`'s due index returned, as the statistics
 * say (-1: none reported yet). A backend reports them by the time it
 * exits; this waits up to 10 s for the report. */
static long due_index_reads(const char *schema)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE schemaname = '%s'"
             " AND indexrelname = 'invocations_due' AND idx_tup_read > 0",
             schema);
    long n = -1;
    for (int i = 0; i < 500 && n < 0; i++) {
        admin_exec("SELECT pg_stat_clear_snapshot()");
        n = admin_long(sql);
        if (n < 0)
            usleep(20 * 1000);
    }
    return n;
}

/* A page of the outbox while QUEUE_LEN invocations are pending that the
 * tables' statistics have not seen (a burst; autovacuum kept away so that
 * no ANALYZE catches up meanwhile). The planner then expects about three
 * rows and, left to itself, reads every pending row through a bitmap scan,
 * joins each to its run and sorts them; a writer's session reads the due
 * index in its order and stops at the page (driver.c, WRITER_SQL). Counted
 * through the server's statistics: the due index entries the scans
 * returned (2,000 without the setting, 6 with it). */
static void q04_scan_reads_a_page(void)
{
    char schema[64], loc[STORE_LOCATION_MAX], sql[256];
    manual_clock clock;
    sp_error err = {0};
    sp_store *s = fresh_store(schema, sizeof schema, loc, &clock);
    if (!s)
        return;
    snprintf(sql, sizeof sql,
             "ALTER TABLE %s.invocations SET (autovacuum_enabled = off);"
             "ALTER TABLE %s.runs SET (autovacuum_enabled = off)",
             schema, schema);
    CHECK(admin_exec(sql));
    for (int i = 0; i < QUEUE_LEN && check_failures == 0; i++) {
        char run[32];
        snprintf(run, sizeof run, "run_queue_%04d", i);
        sp_run_key k = fx_key(run);
        sp_create_run_res cr;
        EXPECT_OK(fx_create(s, &k, run, &cr, &err), &err);
        CHECK_INT(fx_settle(s, &k), 1);
    }
    sp_store_close(s);
    s = open_at(loc, &clock, &err);
    CHECK(s != NULL);
    sp_due_page page = {0};
    if (s)
        EXPECT_OK(sp_store_scan_outbox(s, NULL, NULL, QUEUE_PAGE, &page, &err), &err);
    CHECK(page.n == QUEUE_PAGE && page.next_cursor);
    sp_due_page_free(&page);
    if (s)
        sp_store_close(s); /* its backend reports its statistics as it exits */
    long reads = due_index_reads(schema);
    if (reads < 0 || reads > 4 * QUEUE_PAGE)
        check_fail(__FILE__, __LINE__,
                   "a page of %d pending invocations out of %d read %ld entries of the due"
                   " index (at most %d expected; -1: no statistics came)",
                   QUEUE_PAGE, QUEUE_LEN, reads, 4 * QUEUE_PAGE);
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", schema);
    admin_exec(sql);
}

static void q04_errors(void)
{
    int before = check_failures;
    q04_schema();
    q04_concurrent_first_connects();
    q04_credentials();
    q04_busy();
    q04_claim_skips_busy();
    q04_turn_skips_busy();
    q04_create_race();
    q04_connection_lost();
    q04_flush_reconnect();
    q04_batch_write_fails(FAIL_ALONE);
    q04_batch_write_fails(FAIL_FIRST);
    q04_batch_write_fails(FAIL_SECOND);
    q04_sent_behind_refused();
    q04_sent_chained(SENT_GUARD_FAILS);
    q04_sent_chained(SENT_COMMIT_FAILS);
    q04_sent_both_lost();
    q04_api();
    q04_scan_reads_a_page();
    printf("postgres Q04 schema, credentials and error mapping: %s\n",
           check_failures == before ? "ok" : "FAILED");
}

/* ---- main ---- */

static bool wants(const char *group, const char *name)
{
    return !group || strcmp(group, name) == 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_store_pg <store_crash_child> [group]\n");
        return 2;
    }
    const char *group = argc > 2 ? argv[2] : NULL;
    if (!load_url(CTX.url, sizeof CTX.url)) {
        fprintf(stderr, "test_store_pg: no PostgreSQL server: set SPORE_TEST_PG or run "
                        "`scripts/pg.sh ensure <dir>` and set SPORE_TEST_PG_FILE=<dir>/url\n");
        return 1; /* never a skip */
    }
    CTX.admin = PQconnectdb(CTX.url);
    if (PQstatus(CTX.admin) != CONNECTION_OK) {
        fprintf(stderr, "test_store_pg: cannot reach the test server\n");
        PQfinish(CTX.admin);
        return 1;
    }
    PQclear(PQexec(CTX.admin, "SET client_min_messages = warning"));
    if (wants(group, "suite"))
        store_suite_run(&PG);
    if (wants(group, "cross"))
        store_suite_cross(&PG);
    if (wants(group, "reopen"))
        adapter_q01_reopen(&PG);
    if (wants(group, "crash"))
        adapter_q03_crash(&PG, argv[1]);
    if (wants(group, "errors"))
        q04_errors();
    PQfinish(CTX.admin);
    return check_done(group ? group : "store.postgres");
}
