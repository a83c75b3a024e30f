/*
 * schema.c - the SQLite schema of the store, version 1 (store.md §4, plus the
 * columns async/external steps, fast takeover and artifacts need, so that
 * they arrive without a migration).
 *
 * What it is for: creating the tables, constraints and indexes on an empty
 * database, and refusing a database this code does not understand.
 *
 * What it must never do: touch a database whose user_version is not 0 or 1,
 * or create tables in a non-empty database that is not a spore store.
 *
 * The constraints back the invariants: one event ID per run names one body
 * (I2, UNIQUE events.event_id), a command ID names one argument set (I3,
 * commands PK), one result per attempt (the derived event ID att:<attemptId>),
 * a fence is never reused (UNIQUE attempts(run, fence)), one attempt per
 * (invocation, number).
 *
 * A CHECK over a set of values is written as OR'ed equalities, never
 * `IN (...)`: SQLite 3.40 builds an ephemeral table for a constant IN list
 * every time the check runs, five times per step (a tenth of a step's
 * instructions). Stores made with the IN form behave the same.
 */
#include <stdio.h>

#include "store/sqlite/sqlite.h"

_Static_assert(SP_DB_SCHEMA_VERSION == 1, "the DDL below writes user_version 1");

/* Durable timers of format 0.2 (docs/format-0.2.md): added to schema
 * version 1 without a version change, so a store an older spore created
 * gets the table the first time a writer opens it (sp_sqlite_schema_add). */
#define TIMERS_DDL                                                                                 \
    "CREATE TABLE IF NOT EXISTS timers ("                                                          \
    " tenant TEXT NOT NULL, run_id TEXT NOT NULL, timer_id TEXT NOT NULL,"                         \
    " activation_id TEXT NOT NULL, due_at_ms INTEGER NOT NULL,"                                    \
    " PRIMARY KEY (tenant, run_id, timer_id),"                                                     \
    " FOREIGN KEY (tenant, run_id) REFERENCES runs (tenant, run_id)) WITHOUT ROWID;"               \
    "CREATE INDEX IF NOT EXISTS timers_due ON timers (due_at_ms, timer_id, tenant, run_id);"

/* Step logs (authoring.md §5, src/store/ops_logs.c): added to version 1 like
 * the timers. A rowid table: its rows hold up to 128 KiB of logs, too large
 * for WITHOUT ROWID's clustered pages. */
#define LOGS_DDL                                                                                   \
    "CREATE TABLE IF NOT EXISTS attempt_logs ("                                                    \
    " tenant TEXT NOT NULL, run_id TEXT NOT NULL, attempt_id TEXT NOT NULL,"                       \
    " invocation_id TEXT NOT NULL, node_id TEXT NOT NULL, attempt_number INTEGER NOT NULL,"        \
    " stdout BLOB NOT NULL, stdout_dropped INTEGER NOT NULL,"                                      \
    " stderr BLOB NOT NULL, stderr_dropped INTEGER NOT NULL, at_ms INTEGER NOT NULL,"              \
    " PRIMARY KEY (tenant, run_id, attempt_id),"                                                   \
    " FOREIGN KEY (tenant, run_id, attempt_id) REFERENCES attempts (tenant, run_id, attempt_id));"

/* Layout 3 (meta 'layout'; schema version 1 still, the SQL is the same for
 * every layout): the tables a step inserts into with keys that are hashes
 * (events, commands, invocations, attempts, receipts - their IDs come from
 * the kernel and are random within a run) are rowid tables, so each new row
 * goes to the end of its table and a step's rows of one table share a page
 * (all the runs' rows of a batch too), while the small entries of their key
 * indexes take the random inserts. As WITHOUT ROWID tables (layout 2) their
 * wide rows (a receipt ~640 bytes, 3-6 rows a page) went into the middle of
 * the run's pages and split them: 27 WAL pages a sequential step against
 * 23 now, and 200 x 10 took 12 % more CPU (docs/step-path.md, "Layout").
 * transitions and timers keep WITHOUT ROWID: their keys grow in order. A
 * store of layout 1 or 2 keeps its layout (tests/cli/test_store_layout.sh). */
static const char DDL[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE packages (digest TEXT PRIMARY KEY, body TEXT NOT NULL);"
    "CREATE TABLE blobs (digest TEXT PRIMARY KEY, body BLOB NOT NULL);"
    "CREATE TABLE runs ("
    " tenant TEXT NOT NULL, run_id TEXT NOT NULL, start_key TEXT NOT NULL,"
    " package_digest TEXT NOT NULL REFERENCES packages (digest), artifact_digest TEXT,"
    " started_digest TEXT NOT NULL, status TEXT NOT NULL,"
    " revision INTEGER NOT NULL, applied_sequence INTEGER NOT NULL,"
    " next_sequence INTEGER NOT NULL, last_accepted_ms INTEGER NOT NULL,"
    " snapshot TEXT, snapshot_digest TEXT, fence INTEGER NOT NULL,"
    " quarantine_code TEXT, quarantine_details TEXT, quarantine_at_ms INTEGER,"
    " created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL,"
    " PRIMARY KEY (tenant, run_id), UNIQUE (tenant, start_key),"
    " CHECK (applied_sequence < next_sequence));"
    "CREATE INDEX runs_ready ON runs (tenant, run_id)"
    " WHERE quarantine_code IS NULL AND " SP_DB_RUN_READY ";"
    "CREATE TABLE events ("
    " tenant TEXT NOT NULL, run_id TEXT NOT NULL, sequence INTEGER NOT NULL,"
    " event_id TEXT NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL,"
    " body_digest TEXT NOT NULL, accepted_at_ms INTEGER NOT NULL, consumed_revision INTEGER,"
    " PRIMARY KEY (tenant, run_id, sequence), UNIQUE (tenant, run_id, event_id),"
    " FOREIGN KEY (tenant, run_id) REFERENCES runs (tenant, run_id));"
    "CREATE TABLE transitions ("
    " tenant TEXT NOT NULL, run_id TEXT NOT NULL, revision INTEGER NOT NULL,"
    " consumed_sequence INTEGER NOT NULL, decision_digest TEXT NOT NULL,"
    " snapshot_digest TEXT NOT NULL, diagnostics TEXT NOT NULL, committed_at_ms INTEGER NOT NULL,"
    " PRIMARY KEY (tenant, run_id, revision), UNIQUE (tenant, run_id, consumed_sequence),"
    " FOREIGN KEY (tenant, run_id, consumed_sequence)"
    " REFERENCES events (tenant, run_id, sequence)) WITHOUT ROWID;"
    "CREATE TABLE commands ("
    " tenant TEXT NOT NULL, run_id TEXT NOT NULL, command_id TEXT NOT NULL,"
    " revision INTEGER NOT NULL, ordinal INTEGER NOT NULL, activation_id TEXT NOT NULL,"
    " kind TEXT NOT NULL, payload TEXT NOT NULL,"
    " PRIMARY KEY (tenant, run_id, command_id),"
    " FOREIGN KEY (tenant, run_id, revision) REFERENCES transitions (tenant, run_id, revision));"
    "CREATE TABLE invocations ("
    " tenant TEXT NOT NULL, run_id TEXT NOT NULL, invocation_id TEXT NOT NULL,"
    " node_id TEXT NOT NULL, action_id TEXT NOT NULL, effect_key TEXT NOT NULL,"
    " input TEXT NOT NULL, input_digest TEXT NOT NULL,"
    " status TEXT NOT NULL"
    " CHECK (status = 'pending' OR status = 'running' OR status = 'settled'),"
    " attempt_number INTEGER NOT NULL, not_before_ms INTEGER NOT NULL,"
    " PRIMARY KEY (tenant, run_id, invocation_id),"
    " FOREIGN KEY (tenant, run_id) REFERENCES runs (tenant, run_id));"
    "CREATE INDEX invocations_due ON invocations (not_before_ms, invocation_id, tenant, run_id)"
    " WHERE status = 'pending';"
    "CREATE TABLE attempts ("
    " tenant TEXT NOT NULL, run_id TEXT NOT NULL, attempt_id TEXT NOT NULL,"
    " invocation_id TEXT NOT NULL, attempt_number INTEGER NOT NULL, owner TEXT NOT NULL,"
    " fence INTEGER NOT NULL, lease_until_ms INTEGER NOT NULL, deadline_ms INTEGER NOT NULL,"
    " status TEXT NOT NULL"
    " CHECK (status = 'running' OR status = 'finished' OR status = 'expired'),"
    " result TEXT, holder TEXT CHECK (holder IS NULL OR length(CAST(holder AS BLOB)) <= 4096),"
    " owner_host TEXT NOT NULL, owner_pid INTEGER NOT NULL, owner_started INTEGER NOT NULL,"
    " expire_reason TEXT, started_at_ms INTEGER NOT NULL, ended_at_ms INTEGER,"
    " PRIMARY KEY (tenant, run_id, attempt_id),"
    " UNIQUE (tenant, run_id, invocation_id, attempt_number), UNIQUE (tenant, run_id, fence),"
    " FOREIGN KEY (tenant, run_id, invocation_id)"
    " REFERENCES invocations (tenant, run_id, invocation_id));"
    "CREATE INDEX attempts_lease ON attempts (lease_until_ms, attempt_id, tenant, run_id)"
    " WHERE status = 'running';"
    "CREATE INDEX attempts_deadline ON attempts (deadline_ms, attempt_id, tenant, run_id)"
    " WHERE status = 'running' AND deadline_ms <> 0;"
    "CREATE TABLE receipts ("
    " tenant TEXT NOT NULL, run_id TEXT NOT NULL, request_id TEXT NOT NULL,"
    " request_digest TEXT NOT NULL, operation TEXT NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY (tenant, run_id, request_id));"
    "CREATE TABLE audit ("
    " audit_id INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, run_id TEXT NOT NULL,"
    " attempt_id TEXT NOT NULL, kind TEXT NOT NULL, reason TEXT,"
    " evidence_digest TEXT NOT NULL, evidence TEXT NOT NULL, at_ms INTEGER NOT NULL);"
    TIMERS_DDL
    LOGS_DDL
    "INSERT INTO meta (key, value) VALUES ('layout', '3');"
    "PRAGMA user_version = 1;";

static sp_store_rc read_int(sqlite3 *db, const char *sql, long long *out, sp_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? SP_STORE_OK : sp_sqlite_map(db, rc, "reading the schema", err);
}

/* Inside BEGIN IMMEDIATE: create the schema if nobody else did meanwhile. */
static sp_store_rc initialize_locked(sqlite3 *db, sp_error *err)
{
    long long version = 0, tables = 0;
    sp_store_rc rc = read_int(db, "PRAGMA user_version", &version, err);
    if (rc || version != 0)
        return rc ? rc : sp_db_check_schema_version(version, err);
    rc = read_int(db, "SELECT count(*) FROM sqlite_master", &tables, err);
    if (rc)
        return rc;
    if (tables != 0) {
        sp_fail(err, "schema.unknown", "the database is not empty and is not a spore store");
        return SP_STORE_INCOMPATIBLE;
    }
    int src = sqlite3_exec(db, DDL, NULL, NULL, NULL);
    return src == SQLITE_OK ? SP_STORE_OK : sp_sqlite_map(db, src, "creating the schema", err);
}

sp_store_rc sp_sqlite_schema_check(sqlite3 *db, bool *empty, sp_error *err)
{
    long long version = 0, tables = 0, spore_tables = 0;
    /* one read transaction: a process creating the store commits its schema
     * and user_version together, and this sees both or neither */
    int src = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    if (src != SQLITE_OK)
        return sp_sqlite_map(db, src, "reading the schema", err);
    sp_store_rc rc = read_int(db, "PRAGMA user_version", &version, err);
    if (rc == SP_STORE_OK)
        rc = read_int(db, "SELECT count(*) FROM sqlite_master", &tables, err);
    if (rc == SP_STORE_OK)
        rc = read_int(db,
                      "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                      " AND name IN ('meta', 'runs', 'events')",
                      &spore_tables, err);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc)
        return rc;
    *empty = version == 0 && tables == 0;
    if (*empty)
        return SP_STORE_OK;
    if (version != 0 && (rc = sp_db_check_schema_version(version, err)))
        return rc;
    if (version == 0 || spore_tables != 3) {
        sp_fail(err, "schema.unknown", "the database is not empty and is not a spore store");
        return SP_STORE_INCOMPATIBLE;
    }
    return SP_STORE_OK;
}

sp_store_rc sp_sqlite_schema_ensure(sqlite3 *db, sp_error *err)
{
    long long version = 0;
    sp_store_rc rc = read_int(db, "PRAGMA user_version", &version, err);
    if (rc || version != 0)
        return rc ? rc : sp_db_check_schema_version(version, err);
    int src = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (src != SQLITE_OK)
        return sp_sqlite_map(db, src, "initializing the store", err);
    rc = initialize_locked(db, err);
    src = sqlite3_exec(db, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
    if (rc == SP_STORE_OK && src != SQLITE_OK) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        rc = sp_sqlite_map(db, src, "initializing the store", err);
    }
    return rc;
}

sp_store_rc sp_sqlite_schema_add(sqlite3 *db, sp_error *err)
{
    long long present = 0;
    sp_store_rc rc = read_int(
        db,
        "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
        " AND name IN ('timers', 'attempt_logs')",
        &present, err);
    if (rc || present == 2)
        return rc;
    int src = sqlite3_exec(db, "BEGIN IMMEDIATE;" TIMERS_DDL LOGS_DDL "COMMIT;", NULL, NULL, NULL);
    if (src != SQLITE_OK) {
        rc = sp_sqlite_map(db, src, "adding the timers and attempt_logs tables", err);
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    }
    return rc;
}
