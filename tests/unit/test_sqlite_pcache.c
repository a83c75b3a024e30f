/*
 * test_sqlite_pcache.c - the store's page cache wrapper
 * (src/store/sqlite/pcache.c), on a real file, with every connection of
 * this process on it (it is installed when the program loads):
 *
 *   - two connections write the same file in turn, each in transactions of
 *     rows with scattered keys and large values (B-tree pages split and
 *     are renumbered while they balance), a third of them rolled back
 *     after growing the file; after every transaction each connection
 *     reads the table's count and sum and compares them with a model, so a
 *     truncation that was wrongly skipped - a page of the other
 *     connection's past, or of a rolled-back transaction, served from a
 *     cache - shows as a wrong answer;
 *   - at the end a fresh connection (an empty cache) reads the same, and
 *     PRAGMA integrity_check answers ok;
 *   - truncations were both passed on and skipped (the wrapper did work);
 *   - through the cache methods themselves (SQLITE_CONFIG_GETPCACHE2, the
 *     wrapper): a truncation drops every page at or above its limit and
 *     skips only when none is there - a page renumbered far beyond the end
 *     and back, a renumbered page left there, more keys than the wrapper
 *     remembers (32) with the one to drop beyond them, a limit below the
 *     last one.
 *
 * What it must never do: check less than every transaction's result.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sqlite_exec.h"
#include "store/sqlite/sqlite.h"

#define TRANSACTIONS 600
#define ROWS_PER_TX 6
#define VALUE_BYTES 1500

static sqlite3 *open_db(const char *path)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    exec_ok(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                " PRAGMA cache_size = -16384; PRAGMA busy_timeout = 5000");
    return db;
}

/* count(*) and sum(id) of t as `db` sees them. */
static void read_totals(sqlite3 *db, long long *count, long long *sum)
{
    sqlite3_stmt *st = NULL;
    *count = *sum = -1;
    if (sqlite3_prepare_v2(db, "SELECT count(*), coalesce(sum(id), 0) FROM t", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        *count = sqlite3_column_int64(st, 0);
        *sum = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
}

/* One transaction on `db`: ROWS_PER_TX rows from `next_id` with keys
 * scattered over the index, committed or rolled back. */
static void one_transaction(sqlite3 *db, long long next_id, bool commit)
{
    static char value[VALUE_BYTES + 1];
    if (!value[0])
        memset(value, 'v', VALUE_BYTES);
    exec_ok(db, "BEGIN IMMEDIATE");
    sqlite3_stmt *ins = NULL;
    CHECK(sqlite3_prepare_v2(db, "INSERT INTO t (id, k, v) VALUES (?, ?, ?)", -1, &ins, NULL) ==
          SQLITE_OK);
    for (long long i = 0; i < ROWS_PER_TX && ins; i++) {
        long long id = next_id + i;
        char key[32];
        unsigned long long scattered = (unsigned long long)id * 2654435761ULL & 0xffffffffULL;
        snprintf(key, sizeof key, "%08llx", scattered);
        sqlite3_bind_int64(ins, 1, id);
        sqlite3_bind_text(ins, 2, key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 3, value, VALUE_BYTES, SQLITE_STATIC);
        CHECK(sqlite3_step(ins) == SQLITE_DONE);
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    exec_ok(db, commit ? "COMMIT" : "ROLLBACK");
}

static void expect_totals(sqlite3 *db, long long count, long long sum)
{
    long long c, s;
    read_totals(db, &c, &s);
    CHECK_INT(c, count);
    CHECK_INT(s, sum);
}

/* ---- the cache methods themselves ---- */

static sqlite3_pcache_methods2 M;

static void touch(sqlite3_pcache *c, unsigned key)
{
    sqlite3_pcache_page *p = M.xFetch(c, key, 2);
    CHECK(p != NULL);
    if (p)
        M.xUnpin(c, p, 0);
}

static bool cached(sqlite3_pcache *c, unsigned key)
{
    sqlite3_pcache_page *p = M.xFetch(c, key, 0);
    if (p)
        M.xUnpin(c, p, 0);
    return p != NULL;
}

static unsigned long skips(void)
{
    unsigned long passed, skipped;
    sp_sqlite_pcache_counts(&passed, &skipped);
    return skipped;
}

/* `c`'s truncation at `limit`: whether the wrapper skipped it. */
static bool truncate_skipped(sqlite3_pcache *c, unsigned limit)
{
    unsigned long before = skips();
    M.xTruncate(c, limit);
    return skips() == before + 1;
}

static void direct_truncations(void)
{
    sqlite3_pcache *c = M.xCreate(4096, 64, 0);
    CHECK(c != NULL);
    if (!c)
        return;
    enum { FAR = 262145 }; /* where balancing renumbers pages through */
    for (unsigned k = 1; k <= 10; k++)
        touch(c, k);
    CHECK(!truncate_skipped(c, 5)); /* 5..10 are there */
    CHECK(cached(c, 4) && !cached(c, 5) && !cached(c, 10));
    touch(c, 3);
    CHECK(truncate_skipped(c, 7)); /* nothing at or above 7 */
    CHECK(cached(c, 3) && cached(c, 4));
    sqlite3_pcache_page *p = M.xFetch(c, 2, 2); /* far and back: nothing to drop */
    M.xRekey(c, p, 2, FAR);
    M.xRekey(c, p, FAR, 2);
    M.xUnpin(c, p, 0);
    CHECK(truncate_skipped(c, 7));
    CHECK(cached(c, 2));
    p = M.xFetch(c, 4, 2); /* far and left there: dropped */
    M.xRekey(c, p, 4, FAR);
    M.xUnpin(c, p, 0);
    CHECK(!truncate_skipped(c, 7));
    CHECK(!cached(c, FAR) && cached(c, 3));
    for (unsigned k = 7; k < 7 + 40; k++) /* more than the wrapper remembers, all kept */
        touch(c, k);
    touch(c, 200); /* beyond them, to drop */
    CHECK(!truncate_skipped(c, 100));
    CHECK(!cached(c, 200) && cached(c, 46));
    CHECK(truncate_skipped(c, 100)); /* nothing came since */
    CHECK(!truncate_skipped(c, 10)); /* below the last limit */
    CHECK(!cached(c, 10) && !cached(c, 46) && cached(c, 9));
    M.xDestroy(c);
}

int main(void)
{
    CHECK(sp_sqlite_pcache_install());
    /* the installed methods (the wrapper), before SQLite initializes them */
    CHECK(sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &M) == SQLITE_OK);
    CHECK(sqlite3_initialize() == SQLITE_OK);
    direct_truncations();
    char dir[] = "/tmp/spore-pcache-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/t.db", dir);
    sqlite3 *db[2] = {open_db(path), open_db(path)};
    exec_ok(db[0], "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL UNIQUE, v TEXT)");
    long long count = 0, sum = 0, next_id = 1;
    for (int n = 0; n < TRANSACTIONS; n++) {
        sqlite3 *w = db[n % 2];
        bool commit = n % 3 != 2;
        one_transaction(w, next_id, commit);
        if (commit) {
            for (long long i = 0; i < ROWS_PER_TX; i++)
                sum += next_id + i;
            count += ROWS_PER_TX;
            next_id += ROWS_PER_TX;
        }
        expect_totals(db[0], count, sum);
        expect_totals(db[1], count, sum);
    }
    sqlite3 *fresh = open_db(path);
    expect_totals(fresh, count, sum);
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(fresh, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK);
    CHECK(st && sqlite3_step(st) == SQLITE_ROW);
    CHECK_STR((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    unsigned long passed = 0, skipped = 0;
    sp_sqlite_pcache_counts(&passed, &skipped);
    printf("truncations: %lu passed on, %lu skipped\n", passed, skipped);
    CHECK(passed > 0);
    CHECK(skipped > 0);
    for (int i = 0; i < 2; i++)
        sqlite3_close(db[i]);
    sqlite3_close(fresh);
    static const char *const suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char f[160];
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        unlink(f);
    }
    rmdir(dir);
    return check_done("unit.test_sqlite_pcache");
}
