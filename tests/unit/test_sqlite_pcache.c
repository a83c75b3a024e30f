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
 *   - truncations were both passed on and skipped (the wrapper did work).
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

int main(void)
{
    CHECK(sp_sqlite_pcache_install());
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
