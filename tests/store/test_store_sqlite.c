/*
 * test_store_sqlite.c - the store conformance suite against the SQLite
 * adapter on real temporary files, plus the SQLite-specific tests:
 *   Q01 reopen keeps everything (adapter.c);
 *   Q02 two instances on one file on different threads (S01/S03/...);
 *   Q03 a child process aborts at every store failpoint; after reopen the
 *       mutation is wholly absent (before-commit) or present (after-commit),
 *       and retrying the identical request converges to one applied mutation
 *       (adapter.c);
 *   Q04 a newer schema is refused; a directory is store.io, a non-database
 *       file store.corrupt, a foreign database schema.unknown, an empty file
 *       is initialized, a held write lock is unavailable/store.busy, the WAL
 *       is checkpointed at 4000 pages and starts over while the
 *       checkpointer copies it (and, when the checkpointer cannot start,
 *       while the writer copies it alone), and a checkpoint a reader
 *       stopped short is tried again 1000 pages later, not after every
 *       commit.
 *
 * Usage: test_store_sqlite <store_crash_child> [suite|cross|reopen|crash|errors]
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adapter.h"
#include "suite_util.h"

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

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* A WAL frame: its 24-byte header and a 4 KiB page. */
enum { WAL_FRAME = 4096 + 24 };

/* A fresh store with one run, for the checkpoint tests. */
typedef struct wal_fixture {
    char db[STORE_LOCATION_MAX], wal[STORE_LOCATION_MAX + 8];
    manual_clock clock;
    sp_store *s;
    sp_run_key k;
} wal_fixture;

/* The store at `db` (created when new), with a run of its own. */
static bool wal_join(wal_fixture *f, const char *db, const char *run)
{
    sp_error err = {0};
    manual_clock_set(&f->clock, 1000);
    snprintf(f->db, sizeof f->db, "%s", db);
    snprintf(f->wal, sizeof f->wal, "%s-wal", f->db);
    f->s = open_at(f->db, &f->clock, &err);
    CHECK(f->s != NULL);
    f->k = fx_key(run);
    sp_create_run_res cr;
    if (f->s && fx_create(f->s, &f->k, "wal", &cr, &err) == SP_STORE_OK)
        return true;
    sp_error_clear(&err);
    sp_store_close(f->s);
    return false;
}

static bool wal_open(wal_fixture *f, const char *run)
{
    char db[STORE_LOCATION_MAX];
    sq_fresh(&CTX, db);
    return wal_join(f, db, run);
}

static void wal_close(wal_fixture *f)
{
    sp_store_close(f->s);
    sq_destroy(&CTX, f->db);
}

/* One signal: a commit of a few pages. */
static void wal_signal(wal_fixture *f, int n)
{
    char id[32];
    snprintf(id, sizeof id, "m%d", n);
    sp_append_event_res a;
    sp_error err = {0};
    EXPECT_OK(fx_signal(f->s, &f->k, id, "go", &a, &err), &err);
}

/* The WAL is checkpointed at 4000 pages (SP_SQLITE_CHECKPOINT_PAGES,
 * src/store/sqlite/sqlite.h), not at SQLite's 1000: signals are appended
 * until the -wal file holds more than 1000 pages and the database file is
 * still as small as the new store left it; then until it holds 4000 and
 * the checkpoint has copied the pages into the database file. */
static void q04_checkpoint(void)
{
    wal_fixture f;
    if (!wal_open(&f, "run_wal"))
        return;
    const long before = file_size(f.db);
    int n = 0;
    for (; n < 2000 && file_size(f.wal) < 1200L * WAL_FRAME; n++)
        wal_signal(&f, n);
    CHECK(file_size(f.wal) >= 1200L * WAL_FRAME);
    CHECK(file_size(f.db) == before); /* no checkpoint yet */
    for (; n < 4000 && file_size(f.db) == before; n++)
        wal_signal(&f, n);
    CHECK(file_size(f.db) > before); /* checkpointed ... */
    CHECK(file_size(f.wal) >= 4000L * WAL_FRAME); /* ... after 4000 pages */
    CHECK(file_size(f.wal) < 4200L * WAL_FRAME);
    wal_close(&f);
}

/* The checkpointer (src/store/sqlite/checkpointer.c) copies the bulk of
 * each checkpoint while the writer commits, and the writer's hook copies
 * the rest itself: only that lets the WAL start over. Signals are appended
 * for three times the pages of a whole WAL: had no checkpoint reached the
 * WAL's end, the -wal file would hold 12,000 pages or more (the writer
 * checkpoints alone only past 16,000); it holds fewer than 8,000, so the
 * WAL started over, and the database file holds what was copied. */
static void q04_checkpoint_rounds(void)
{
    wal_fixture f;
    if (!wal_open(&f, "run_rounds"))
        return;
    const long before = file_size(f.db);
    int n = 0;
    for (; n < 4000 && file_size(f.wal) < 4000L * WAL_FRAME; n++)
        wal_signal(&f, n);
    CHECK(file_size(f.wal) >= 4000L * WAL_FRAME);
    for (int more = 3 * n; n < more; n++)
        wal_signal(&f, n);
    CHECK(file_size(f.wal) < 8000L * WAL_FRAME);
    CHECK(file_size(f.db) > before);
    wal_close(&f);
}

/* This process's threads (/proc/self/task); -1 when unknown. */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The checkpointer cannot start (its connection cannot open a file: the
 * process is at its limit of open files), so the writer's hook copies the
 * WAL itself, as it did before the checkpointer: in a child process whose
 * RLIMIT_NOFILE stops at the lowest free descriptor once the store has its
 * files open, signals are appended for three times the pages of a whole
 * WAL, as in q04_checkpoint_rounds. The child has no second thread (the
 * checkpointer's), every signal committed, the database file holds what was
 * copied, and the WAL started over (fewer than 8,000 pages: without the
 * hook's own checkpoint it would grow to the writer's bound, 16,000). */
static void q04_checkpoint_alone(void)
{
    char db[STORE_LOCATION_MAX];
    sq_fresh(&CTX, db);
    pid_t child = fork();
    if (child == 0) {
        const int failed_before = check_failures;
        wal_fixture f;
        if (!wal_join(&f, db, "run_alone"))
            _exit(3);
        const long before = file_size(f.db);
        wal_signal(&f, 0); /* the WAL and its index are open */
        int lowest = dup(0);
        close(lowest);
        struct rlimit was, cap;
        if (lowest < 0 || getrlimit(RLIMIT_NOFILE, &was) != 0)
            _exit(4);
        cap = was;
        cap.rlim_cur = (rlim_t)lowest;
        if (setrlimit(RLIMIT_NOFILE, &cap) != 0)
            _exit(4);
        int n = 1;
        for (; n < 4000 && file_size(f.wal) < 4000L * WAL_FRAME; n++)
            wal_signal(&f, n);
        for (int more = 3 * n; n < more; n++)
            wal_signal(&f, n);
        CHECK(setrlimit(RLIMIT_NOFILE, &was) == 0); /* reading the threads opens a file */
        CHECK_INT(thread_count(), 1);
        CHECK(file_size(f.wal) < 8000L * WAL_FRAME);
        CHECK(file_size(f.db) > before);
        sp_event_list tail = {0}; /* the last signal, at sequence n + 1 (run.started 1) */
        sp_error err = {0};
        EXPECT_OK(sp_store_list_events(f.s, &f.k, (uint64_t)n, 8, &tail, &err), &err);
        char last[32];
        snprintf(last, sizeof last, "sig:m%d", n - 1);
        CHECK(tail.n == 1 && strcmp(tail.events[0].event_id, last) == 0);
        sp_event_list_free(&tail);
        sp_store_close(f.s);
        _exit(check_failures == failed_before ? 0 : 1);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "q04_checkpoint_alone: the child ended with status %#x\n", status);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sq_destroy(&CTX, db);
}

/* The whole database file, to see whether a commit's checkpoint wrote it. */
static char *file_bytes(const char *path, long *len)
{
    *len = file_size(path);
    char *buf = *len > 0 ? malloc((size_t)*len) : NULL;
    FILE *fp = buf ? fopen(path, "rb") : NULL;
    if (!fp || fread(buf, 1, (size_t)*len, fp) != (size_t)*len) {
        free(buf);
        buf = NULL;
    }
    if (fp)
        fclose(fp);
    return buf;
}

/* A reader in another connection (another worker process in real use) that
 * holds a snapshot at every commit stops each checkpoint short of the WAL's
 * end. SQLite's own hook then checkpointed after every commit and wrote the
 * database file each time; the store's tries again only once the WAL has
 * grown by SP_SQLITE_CHECKPOINT_RETRY_PAGES (1000) more pages. */
static void q04_checkpoint_reader(void)
{
    wal_fixture f;
    if (!wal_open(&f, "run_reader"))
        return;
    sqlite3 *reader = NULL;
    CHECK(sqlite3_open_v2(f.db, &reader, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    int writes = 0;
    long wal_at = 0, len = 0, new_len = 0;
    char *bytes = NULL;
    for (int n = 0; reader && n < 6000; n++) {
        CHECK(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM events;", NULL, NULL, NULL) ==
              SQLITE_OK);
        wal_signal(&f, n);
        CHECK(sqlite3_exec(reader, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
        if (!bytes && file_size(f.wal) >= 4100L * WAL_FRAME) { /* past the first checkpoint */
            bytes = file_bytes(f.db, &len);
            wal_at = file_size(f.wal);
            continue;
        }
        if (!bytes)
            continue;
        char *now = file_bytes(f.db, &new_len);
        writes += new_len != len || (now && bytes && memcmp(now, bytes, (size_t)len) != 0);
        free(bytes);
        bytes = now, len = new_len;
        if (file_size(f.wal) >= wal_at + 1500L * WAL_FRAME)
            break;
    }
    CHECK(bytes != NULL && file_size(f.wal) >= wal_at + 1500L * WAL_FRAME);
    CHECK(writes >= 1 && writes <= 2); /* not one per commit (hundreds) */
    free(bytes);
    sqlite3_close(reader);
    wal_close(&f);
}

/* One signal with a body padded to `pad` bytes (a 3 KiB body: a commit of
 * about one page of its own). */
static void wal_padded_signal(wal_fixture *f, int n, int pad)
{
    char id[32], request_id[48], event_id[48];
    char *json = malloc((size_t)pad + 64);
    if (!json) {
        CHECK(json != NULL);
        return;
    }
    snprintf(id, sizeof id, "w%d", n);
    snprintf(request_id, sizeof request_id, "signal/%s", id);
    snprintf(event_id, sizeof event_id, "sig:%s", id);
    snprintf(json, (size_t)pad + 64, "{\"name\":\"go\",\"pad\":\"%*d\"}", pad, n);
    fx_body body = fx_body_of(json);
    sp_append_event_req req = {f->k, request_id, event_id, "signal.received", fx_evidence(&body)};
    sp_append_event_res a;
    sp_error err = {0};
    EXPECT_OK(sp_store_append_event(f->s, &req, &a, &err), &err);
    fx_body_free(&body);
    free(json);
}

static void wal_wide_signal(wal_fixture *f, int n)
{
    wal_padded_signal(f, n, 3000);
}

/* Signals n .. n+3 in one batch, committed as an engine commits (its
 * flush left to the store's flusher). */
static void wal_batch(wal_fixture *f, int n)
{
    sp_error err = {0};
    uint64_t ticket = 0;
    EXPECT_OK(sp_store_batch_begin(f->s, &err), &err);
    for (int i = 0; i < 4; i++)
        wal_padded_signal(f, n + i, 10000);
    EXPECT_OK(sp_store_batch_commit_deferred(f->s, &ticket, &err), &err);
}

/* Another worker process on the same file, reading as a worker does
 * between its turns at the write lock: it reads the store's path from `go`
 * (once the store exists), then holds one snapshot after another - each
 * for 2 ms, the next at once - until it is killed. */
static void contending_reader(int go)
{
    char db[STORE_LOCATION_MAX] = {0};
    sqlite3 *r = NULL;
    if (read(go, db, sizeof db - 1) <= 0 || sqlite3_open_v2(db, &r, SQLITE_OPEN_READONLY, NULL))
        _exit(1);
    sqlite3_busy_timeout(r, 5000);
    for (;;) {
        sqlite3_exec(r, "BEGIN; SELECT count(*) FROM runs;", NULL, NULL, NULL);
        usleep(2000);
        sqlite3_exec(r, "COMMIT", NULL, NULL, NULL);
    }
}

/* Two workers on one file: each begins its next transaction as soon as
 * the other's commit releases the write lock, before that commit's
 * checkpoint, so no PASSIVE checkpoint leaves the WAL copied to its end
 * when a writer begins, and no writer can start the WAL over - it grew
 * past 140,000 pages (580 MB) in a run of two bench_compare worker
 * processes. Past CHECKPOINT_WRITER_FACTOR x the mark (16,000 pages) the
 * writer's checkpoint is RESTART: it waits for the other's transaction and
 * snapshot to end, and the next commit starts the WAL over. Another
 * process holds one snapshot after another while this one appends about
 * twice that bound (12,000 signals of 10 KB, four to a batch, committed as
 * an engine commits): the -wal file never holds 18,000 pages (with PASSIVE
 * checkpoints only, it grew to the pages appended). */
static void q04_checkpoint_contended(void)
{
    wal_fixture f;
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t child = fork(); /* before the store's threads */
    if (child == 0) {
        close(go[1]);
        contending_reader(go[0]);
    }
    close(go[0]);
    bool opened = child > 0 && wal_open(&f, "run_contended");
    CHECK(opened && write(go[1], f.db, strlen(f.db)) == (ssize_t)strlen(f.db));
    close(go[1]);
    long most = 0;
    for (int n = 0; opened && n < 12000; n += 4) {
        wal_batch(&f, n);
        long now = file_size(f.wal);
        most = now > most ? now : most;
    }
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    CHECK(most > 4000L * WAL_FRAME && most < 18000L * WAL_FRAME);
    if (opened)
        wal_close(&f);
}

/* A batch's changed pages stay in the connection's page cache until its
 * commit (SP_SQLITE_CACHE_KIB, src/store/sqlite/sqlite.h): ~3.6 MiB of
 * changes in one batch - far more than SQLite's default 2000 KiB cache -
 * reach the -wal file at the commit and not before (a smaller cache spills
 * changed pages into the WAL in the middle of the transaction). */
static void q04_cache(void)
{
    wal_fixture f;
    if (!wal_open(&f, "run_cache"))
        return;
    const long before = file_size(f.wal);
    sp_error err = {0};
    EXPECT_OK(sp_store_batch_begin(f.s, &err), &err);
    for (int n = 0; n < 1200; n++)
        wal_wide_signal(&f, n);
    const long during = file_size(f.wal);
    EXPECT_OK(sp_store_batch_commit(f.s, &err), &err);
    CHECK(during == before);                             /* nothing spilled */
    CHECK(file_size(f.wal) >= before + 900L * WAL_FRAME); /* all of it at the commit */
    wal_close(&f);
}

static void q04_errors(void)
{
    int before = check_failures;
    q04_schema();
    q04_files();
    q04_busy();
    q04_checkpoint();
    q04_checkpoint_rounds();
    q04_checkpoint_alone();
    q04_checkpoint_reader();
    q04_checkpoint_contended();
    q04_cache();
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
        adapter_q01_reopen(&SQLITE);
    if (wants(group, "crash"))
        adapter_q03_crash(&SQLITE, argv[1]);
    if (wants(group, "errors"))
        q04_errors();
    rmdir(CTX.dir);
    return check_done(group ? group : "store.sqlite");
}
