/*
 * schema.c - the PostgreSQL schema of the store, version 1: the same logical
 * schema as SQLite's (src/store/sqlite/schema.c) - same tables, columns,
 * keys and constraints, but no foreign keys (below) and no CHECKs on the
 * tables a step writes (CHECKS_DDL), plus the driver's own
 * commit_marks (outcome.c), which no operation reads - in PostgreSQL types:
 * BIGINT counters and times, BYTEA blobs, TEXT canonical JSON, an identity
 * column for the audit trail; identifiers in the "C" collation so that ordering and cursors compare
 * bytes exactly as SQLite does, whatever the database's locale. Partial
 * indexes serve work selection: runs with a pending event, pending
 * invocations, running attempts (by lease, deadline, host, holder).
 *
 * The version lives in the table schema_version (one row). The store lives
 * in the connection's current schema (the first existing schema of
 * search_path), so several stores can share one database under different
 * schemas (`?options=-csearch_path%3D<schema>` in the URL).
 *
 * What it is for: creating that schema on first connect - inside one
 * transaction that holds an advisory lock, so concurrent first connects of
 * many workers do not race - and refusing a schema this code does not
 * understand.
 *
 * What it must never do: touch a schema whose version is newer, or create
 * tables in a non-empty schema that is not a spore store.
 *
 * No foreign keys: PostgreSQL checks each one with a query of its own per
 * inserted row (SELECT ... FOR KEY SHARE on the parent, through SPI), five
 * a sequential step, a fifth of the backend's CPU (docs/postgres.md §3c). Every
 * row is written by the store's own operations, under the run row's lock,
 * after the predicates that name its parent, and the same logic keeps them
 * enforced on SQLite (store.md: foreign_keys=ON), where the conformance
 * suite runs too. A store created by an older spore keeps the foreign keys
 * it was created with.
 *
 * Constraint names matter to the driver: a unique violation on runs_pkey,
 * runs_start_key or receipts_pkey is a racing create_run (retry it; see
 * driver.c), any other is conflict/store.constraint.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/postgres/postgres.h"

_Static_assert(SP_DB_SCHEMA_VERSION == 1, "the DDL below writes version 1");

#define ID "TEXT COLLATE \"C\""

/* Durable timers of format 0.2 (docs/format-0.2.md): added to schema
 * version 1 without a version change; a store an older spore created gets
 * them from the first writer that opens it (add_missing). */
#define TIMERS_DDL                                                                                 \
    "CREATE TABLE IF NOT EXISTS timers ("                                                          \
    " tenant " ID " NOT NULL, run_id " ID " NOT NULL, timer_id " ID " NOT NULL,"                   \
    " activation_id " ID " NOT NULL, due_at_ms BIGINT NOT NULL,"                                   \
    " CONSTRAINT timers_pkey PRIMARY KEY (tenant, run_id, timer_id));"                             \
    "CREATE INDEX IF NOT EXISTS timers_due ON timers (due_at_ms, timer_id, tenant, run_id);"

/* Step logs (authoring.md §5, src/store/ops_logs.c): added to version 1
 * like the timers. */
#define LOGS_DDL                                                                                   \
    "CREATE TABLE IF NOT EXISTS attempt_logs ("                                                    \
    " tenant " ID " NOT NULL, run_id " ID " NOT NULL, attempt_id " ID " NOT NULL,"                 \
    " invocation_id " ID " NOT NULL, node_id " ID " NOT NULL, attempt_number BIGINT NOT NULL,"     \
    " stdout BYTEA NOT NULL, stdout_dropped BIGINT NOT NULL,"                                      \
    " stderr BYTEA NOT NULL, stderr_dropped BIGINT NOT NULL, at_ms BIGINT NOT NULL,"               \
    " CONSTRAINT attempt_logs_pkey PRIMARY KEY (tenant, run_id, attempt_id));"

/* Wake-ups (listen.c): a transaction that commits new work - an event
 * left for a later turn, an invocation left pending, a timer - notifies the
 * schema's channel (NOTIFY is delivered at commit, once per transaction and
 * payload). The store's own writes send it (lg_announce_work, tx.c), not
 * triggers: an event stored already consumed (a step's result the same
 * transaction decided on) and an invocation claimed as it is made are no
 * work for anyone, so a step that also claims its next invocation sends no
 * NOTIFY. That matters beyond the wake-up: a transaction that notifies takes
 * PostgreSQL's database-wide notify lock at commit and holds it through its
 * WAL flush, so notifying commits of several workers are flushed one after
 * the other, never together.
 *
 * The triggers of before (events_notify, invocations_notify, timers_notify)
 * decided the same per row, but PostgreSQL builds a trigger's WHEN clause
 * again in every statement that fires it: every INSERT into events and
 * invocations and every UPDATE of an invocation's status, three a step,
 * cost about 15 of the ~230 us of the statements of a step
 * (pg_stat_statements, docs/postgres.md §3b). A store an older spore made
 * loses them when a writer opens it (add_missing). Their function
 * spore_notify_work stays: it is unused, and dropping it by name could
 * reach another schema of the search_path. An older spore that opens the
 * store again puts the triggers back; its workers and these then both
 * notify, and PostgreSQL folds equal notifications of one transaction. */
#define WAKE_TRIGGERS "'events_notify', 'invocations_notify', 'timers_notify'"
#define WAKE_TRIGGERS_PRESENT                                                                      \
    "EXISTS (SELECT 1 FROM pg_catalog.pg_trigger WHERE tgname IN (" WAKE_TRIGGERS ")"             \
    " AND tgrelid IN (to_regclass('events'), to_regclass('invocations'),"                         \
    " to_regclass('timers')))"
#define WAKE_TRIGGERS_DROP                                                                         \
    "DROP TRIGGER IF EXISTS events_notify ON events;"                                              \
    "DROP TRIGGER IF EXISTS invocations_notify ON invocations;"                                    \
    "DROP TRIGGER IF EXISTS timers_notify ON timers;"

/* A step's update of its run row in place (HOT: a new row version on the
 * same page, no new index entries). PostgreSQL updates a row in place only
 * when no indexed column changes - a column a partial index's predicate
 * names counts - and when the row's page has room. Every step changes the
 * run's counters, which runs_ready's predicate was made of, so each step
 * wrote an entry into each of the three indexes of runs (and the run's
 * primary key lookups walked the dead versions' entries until a vacuum).
 * The predicate now names a stored generated column, runs.ready, which a
 * step that decides its own result leaves false, and the table leaves half
 * of each page for new versions (a run row carries its snapshot; a run is
 * one row against a step's rows in the other tables). scan_ready names the
 * column through the dialect (db.h: run_ready).
 *
 * Not done for invocations.status (in invocations_due's predicate), which
 * a settle changes: with a boolean column in the outbox's predicate, the
 * generic plan of a new, unanalyzed table took half of the invocations for
 * pending and joined them the other way round, 0.4 ms a scan.
 *
 * Added to version 1 like the timers: a store an older spore made gets the
 * column and the rebuilt index from the first writer that opens it
 * (add_missing; ADD COLUMN rewrites the table under an exclusive lock,
 * once). */
#define HOT_DDL                                                                                    \
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS ready BOOLEAN"                                      \
    " GENERATED ALWAYS AS (" SP_DB_RUN_READY ") STORED;"                                           \
    "ALTER TABLE runs SET (fillfactor = 50);"                                                      \
    "DROP INDEX IF EXISTS runs_ready;"                                                             \
    "CREATE INDEX runs_ready ON runs (tenant, run_id) WHERE quarantine_code IS NULL AND ready;"

/* No CHECK constraints on the tables a step writes (runs, invocations,
 * attempts). PostgreSQL reads each CHECK's stored expression back from its
 * text form and plans it again in every statement that inserts or updates
 * the table (ExecRelCheck: stringToNode, then expression_planner): seven
 * expressions a sequential step, 7 % of the backend's CPU (docs/postgres.md
 * §3c). What they said holds as the foreign keys' relations do (the header
 * above): the statuses are written by the store's own operations from its
 * enums, the run's counters only by lg_run_flush, a holder larger than
 * SP_STORE_HOLDER_MAX is refused by claim_attempt and hold_attempt before
 * any write (lg_check_holder), and the SQLite schema keeps the same
 * constraints, where the conformance suite runs too. Added to version 1
 * like the timers: a store an older spore made loses them when a writer
 * opens it (add_missing; dropping a CHECK takes its table's exclusive lock
 * for a moment, never a scan). They are dropped by the names PostgreSQL
 * gave them in the DDL of before (STEP_CHECKS): a check someone else added
 * stays. */
#define STEP_CHECKS                                                                                \
    "'runs_check', 'invocations_status_check', 'attempts_status_check', 'attempts_holder_check'"
#define CHECKS_PRESENT                                                                             \
    "EXISTS (SELECT 1 FROM pg_catalog.pg_constraint WHERE contype = 'c' AND conname IN ("          \
    STEP_CHECKS ") AND conrelid IN (to_regclass('runs'), to_regclass('invocations'),"              \
    " to_regclass('attempts')))"
#define CHECKS_DDL                                                                                 \
    "ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_check;"                                       \
    "ALTER TABLE invocations DROP CONSTRAINT IF EXISTS invocations_status_check;"                  \
    "ALTER TABLE attempts DROP CONSTRAINT IF EXISTS attempts_status_check,"                        \
    " DROP CONSTRAINT IF EXISTS attempts_holder_check;"

/* Commit marks (outcome.c): one row per connection that writes, its last
 * write transaction's mark, upserted just before each COMMIT (in place: the
 * key never changes), read back when a COMMIT's answer was lost. Added to
 * version 1 like the timers. */
#define MARKS_DDL                                                                                  \
    "CREATE TABLE IF NOT EXISTS commit_marks (session " ID " NOT NULL, mark BIGINT NOT NULL,"      \
    " at_ms BIGINT NOT NULL, CONSTRAINT commit_marks_pkey PRIMARY KEY (session))"                  \
    " WITH (fillfactor = 50);"

/* The column HOT_DDL adds is there (a condition over the catalog). */
#define HOT_PRESENT                                                                                \
    "EXISTS (SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass('runs')"           \
    " AND attname = 'ready' AND attgenerated = 's' AND NOT attisdropped)"

/* The secondary unique keys lead with the column that tells rows apart, not
 * with (tenant, run_id): the store's statements are prepared once and run
 * with generic plans, and a key whose first columns are the primary key's
 * ties with the primary key in cost on a new, empty table. PostgreSQL then
 * may choose it and read every row of the run (or of the tenant) through
 * its prefix, filtering on the rest: a sequential step read the run row
 * through runs_start_key and its attempt through attempts_fence, so a step
 * cost grew with the runs of the tenant and the steps of the run
 * (docs/postgres.md §3d). The uniqueness is the same in any column order. */
#define RUNS_START_KEY "start_key, tenant"
#define EVENTS_EVENT_ID "event_id, tenant, run_id"
#define TRANSITIONS_CONSUMED "consumed_sequence, tenant, run_id"
#define ATTEMPTS_NUMBER "invocation_id, attempt_number, tenant, run_id"
#define ATTEMPTS_FENCE "fence, tenant, run_id"

/* The keys above that a store an older spore created still leads with
 * (tenant, ...): their names and tables (a subquery over the catalog). */
#define OLD_KEYS                                                                                   \
    "SELECT k.conname, k.conrelid::regclass AS tbl FROM pg_catalog.pg_constraint k"                \
    " JOIN pg_catalog.pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1]"        \
    " WHERE k.connamespace = (SELECT oid FROM pg_catalog.pg_namespace"                             \
    " WHERE nspname = current_schema()) AND k.contype = 'u' AND a.attname = 'tenant'"              \
    " AND k.conname IN ('runs_start_key', 'events_event_id', 'transitions_consumed',"              \
    " 'attempts_number', 'attempts_fence')"

/* Rebuild each of those keys in the order above, under the schema lock (an
 * ACCESS EXCLUSIVE lock on its table while its index is built: once). */
#define REORDER_DDL                                                                                \
    "DO $$DECLARE old record; BEGIN FOR old IN " OLD_KEYS " LOOP"                                 \
    " EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I, ADD CONSTRAINT %I UNIQUE (%s)',"          \
    " old.tbl, old.conname, old.conname, CASE old.conname"                                         \
    " WHEN 'runs_start_key' THEN '" RUNS_START_KEY "'"                                             \
    " WHEN 'events_event_id' THEN '" EVENTS_EVENT_ID "'"                                           \
    " WHEN 'transitions_consumed' THEN '" TRANSITIONS_CONSUMED "'"                                 \
    " WHEN 'attempts_number' THEN '" ATTEMPTS_NUMBER "' ELSE '" ATTEMPTS_FENCE "' END);"           \
    " END LOOP; END$$;"

static const char DDL[] =
    "CREATE TABLE meta (key " ID " PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE packages (digest " ID " PRIMARY KEY, body TEXT NOT NULL);"
    "CREATE TABLE blobs (digest " ID " PRIMARY KEY, body BYTEA NOT NULL);"
    "CREATE TABLE runs ("
    " tenant " ID " NOT NULL, run_id " ID " NOT NULL, start_key " ID " NOT NULL,"
    " package_digest " ID " NOT NULL, artifact_digest " ID ","
    " started_digest " ID " NOT NULL, status " ID " NOT NULL,"
    " revision BIGINT NOT NULL, applied_sequence BIGINT NOT NULL,"
    " next_sequence BIGINT NOT NULL, last_accepted_ms BIGINT NOT NULL,"
    " snapshot TEXT, snapshot_digest " ID ", fence BIGINT NOT NULL,"
    " quarantine_code " ID ", quarantine_details TEXT, quarantine_at_ms BIGINT,"
    " created_at_ms BIGINT NOT NULL, updated_at_ms BIGINT NOT NULL,"
    " CONSTRAINT runs_pkey PRIMARY KEY (tenant, run_id),"
    " CONSTRAINT runs_start_key UNIQUE (" RUNS_START_KEY "));"
    "CREATE TABLE events ("
    " tenant " ID " NOT NULL, run_id " ID " NOT NULL, sequence BIGINT NOT NULL,"
    " event_id " ID " NOT NULL, kind " ID " NOT NULL, body TEXT NOT NULL,"
    " body_digest " ID " NOT NULL, accepted_at_ms BIGINT NOT NULL, consumed_revision BIGINT,"
    " CONSTRAINT events_pkey PRIMARY KEY (tenant, run_id, sequence),"
    " CONSTRAINT events_event_id UNIQUE (" EVENTS_EVENT_ID "));"
    "CREATE TABLE transitions ("
    " tenant " ID " NOT NULL, run_id " ID " NOT NULL, revision BIGINT NOT NULL,"
    " consumed_sequence BIGINT NOT NULL, decision_digest " ID " NOT NULL,"
    " snapshot_digest " ID " NOT NULL, diagnostics TEXT NOT NULL, committed_at_ms BIGINT NOT NULL,"
    " CONSTRAINT transitions_pkey PRIMARY KEY (tenant, run_id, revision),"
    " CONSTRAINT transitions_consumed UNIQUE (" TRANSITIONS_CONSUMED "));"
    "CREATE TABLE commands ("
    " tenant " ID " NOT NULL, run_id " ID " NOT NULL, command_id " ID " NOT NULL,"
    " revision BIGINT NOT NULL, ordinal BIGINT NOT NULL, activation_id " ID " NOT NULL,"
    " kind " ID " NOT NULL, payload TEXT NOT NULL,"
    " CONSTRAINT commands_pkey PRIMARY KEY (tenant, run_id, command_id));"
    "CREATE TABLE invocations ("
    " tenant " ID " NOT NULL, run_id " ID " NOT NULL, invocation_id " ID " NOT NULL,"
    " node_id " ID " NOT NULL, action_id " ID " NOT NULL, effect_key " ID " NOT NULL,"
    " input TEXT NOT NULL, input_digest " ID " NOT NULL,"
    " status " ID " NOT NULL,"
    " attempt_number BIGINT NOT NULL, not_before_ms BIGINT NOT NULL,"
    " CONSTRAINT invocations_pkey PRIMARY KEY (tenant, run_id, invocation_id));"
    "CREATE INDEX invocations_due ON invocations (not_before_ms, invocation_id, tenant, run_id)"
    " WHERE status = 'pending';"
    "CREATE TABLE attempts ("
    " tenant " ID " NOT NULL, run_id " ID " NOT NULL, attempt_id " ID " NOT NULL,"
    " invocation_id " ID " NOT NULL, attempt_number BIGINT NOT NULL, owner " ID " NOT NULL,"
    " fence BIGINT NOT NULL, lease_until_ms BIGINT NOT NULL, deadline_ms BIGINT NOT NULL,"
    " status " ID " NOT NULL, result TEXT, holder TEXT,"
    " owner_host " ID " NOT NULL, owner_pid BIGINT NOT NULL, owner_started BIGINT NOT NULL,"
    " expire_reason " ID ", started_at_ms BIGINT NOT NULL, ended_at_ms BIGINT,"
    " CONSTRAINT attempts_pkey PRIMARY KEY (tenant, run_id, attempt_id),"
    " CONSTRAINT attempts_number UNIQUE (" ATTEMPTS_NUMBER "),"
    " CONSTRAINT attempts_fence UNIQUE (" ATTEMPTS_FENCE "));"
    "CREATE INDEX attempts_lease ON attempts (lease_until_ms, attempt_id, tenant, run_id)"
    " WHERE status = 'running';"
    "CREATE INDEX attempts_deadline ON attempts (deadline_ms, attempt_id, tenant, run_id)"
    " WHERE status = 'running' AND deadline_ms <> 0;"
    "CREATE INDEX attempts_host ON attempts (owner_host, attempt_id)"
    " WHERE status = 'running' AND holder IS NULL;"
    "CREATE INDEX attempts_held ON attempts (attempt_id, tenant, run_id)"
    " WHERE status = 'running' AND holder IS NOT NULL;"
    "CREATE TABLE receipts ("
    " tenant " ID " NOT NULL, run_id " ID " NOT NULL, request_id " ID " NOT NULL,"
    " request_digest " ID " NOT NULL, operation " ID " NOT NULL, value TEXT NOT NULL,"
    " CONSTRAINT receipts_pkey PRIMARY KEY (tenant, run_id, request_id));"
    "CREATE TABLE audit ("
    " audit_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, tenant " ID " NOT NULL,"
    " run_id " ID " NOT NULL, attempt_id " ID " NOT NULL, kind " ID " NOT NULL, reason " ID ","
    " evidence_digest " ID " NOT NULL, evidence TEXT NOT NULL, at_ms BIGINT NOT NULL);"
    TIMERS_DDL
    LOGS_DDL
    HOT_DDL
    MARKS_DDL
    "CREATE TABLE schema_version (version BIGINT NOT NULL);"
    "INSERT INTO schema_version (version) VALUES (1);";

/* What the current schema holds: its name (NULL when search_path names no
 * existing schema), its number of tables, and whether schema_version is one. */
#define STATE_SQL                                                                                  \
    "SELECT current_schema(),"                                                                     \
    " (SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n"                  \
    "  ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"                               \
    "  AND c.relkind IN ('r', 'p', 'v', 'm', 'f')),"                                               \
    " (SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n"                  \
    "  ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"                               \
    "  AND c.relname = 'schema_version')"

typedef struct schema_state {
    bool has_schema;
    long long tables;
    bool versioned;
} schema_state;

static sp_store_rc read_state(pg_conn *c, schema_state *st, sp_error *err)
{
    PGresult *res = PQexec(c->db, STATE_SQL);
    sp_store_rc rc = SP_STORE_OK;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        rc = sp_pg_fail(c, res, "reading the schema", err);
    else
        *st = (schema_state){!PQgetisnull(res, 0, 0), atoll(PQgetvalue(res, 0, 1)),
                             atoll(PQgetvalue(res, 0, 2)) > 0};
    PQclear(res);
    return rc;
}

static sp_store_rc read_version(pg_conn *c, sp_error *err)
{
    PGresult *res = PQexec(c->db, "SELECT max(version) FROM schema_version");
    sp_store_rc rc;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        rc = sp_pg_fail(c, res, "reading the schema version", err);
    else if (PQgetisnull(res, 0, 0)) {
        sp_fail(err, "schema.unknown", "the store's schema_version table is empty");
        rc = SP_STORE_INCOMPATIBLE;
    } else
        rc = sp_db_check_schema_version(atoll(PQgetvalue(res, 0, 0)), err);
    PQclear(res);
    return rc;
}

static sp_store_rc exec(pg_conn *c, const char *sql, const char *what, sp_error *err)
{
    PGresult *res = PQexec(c->db, sql);
    ExecStatusType status = PQresultStatus(res);
    sp_store_rc rc = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK
                         ? SP_STORE_OK
                         : sp_pg_fail(c, res, what, err);
    PQclear(res);
    return rc;
}

/* Inside the locked transaction: create the schema if nobody did meanwhile. */
static sp_store_rc initialize_locked(pg_conn *c, sp_error *err)
{
    schema_state st = {0};
    sp_store_rc rc = read_state(c, &st, err);
    if (rc)
        return rc;
    if (st.versioned)
        return read_version(c, err);
    if (!st.has_schema)
        return sp_fail(err, "store.io",
                       "postgres: the search_path names no existing schema to create the store in"),
               SP_STORE_UNAVAILABLE;
    if (st.tables != 0)
        return sp_fail(err, "schema.unknown",
                       "the database schema is not empty and is not a spore store"),
               SP_STORE_INCOMPATIBLE;
    return exec(c, DDL, "creating the schema", err);
}

#define LOCK_SCHEMA                                                                                \
    "BEGIN ISOLATION LEVEL READ COMMITTED;"                                                        \
    " SELECT pg_advisory_xact_lock(1936748402, hashtext(current_schema()))"

/* Whether what later spores changed in schema version 1 is there already
 * (*current): the timers table, the attempt_logs table, no wake-up
 * triggers, the order of the unique keys, the run's HOT updates, the commit
 * marks, no checks on the tables a step writes. */
static sp_store_rc read_current(pg_conn *c, bool *current, sp_error *err)
{
    PGresult *res = PQexec(c->db, "SELECT to_regclass('timers') IS NOT NULL"
                                  " AND to_regclass('attempt_logs') IS NOT NULL"
                                  " AND NOT " WAKE_TRIGGERS_PRESENT
                                  " AND NOT EXISTS (" OLD_KEYS ")"
                                  " AND " HOT_PRESENT
                                  " AND to_regclass('commit_marks') IS NOT NULL"
                                  " AND NOT " CHECKS_PRESENT);
    sp_store_rc rc = SP_STORE_OK;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        rc = sp_pg_fail(c, res, "reading the schema", err);
    else
        *current = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    return rc;
}

/* Those changes, made under the schema lock when missing - and read again
 * once the lock is held: workers that open an older store together all
 * find it old, and each one after the first would otherwise make every
 * change again, rebuilding runs_ready under an exclusive lock while the
 * first already serves. */
static sp_store_rc add_missing(pg_conn *c, sp_error *err)
{
    bool current = false;
    sp_store_rc rc = read_current(c, &current, err);
    if (rc || current)
        return rc;
    rc = exec(c, LOCK_SCHEMA, "locking the schema", err);
    if (rc == SP_STORE_OK)
        rc = read_current(c, &current, err);
    if (rc == SP_STORE_OK && !current)
        rc = exec(c,
                  TIMERS_DDL LOGS_DDL WAKE_TRIGGERS_DROP REORDER_DDL HOT_DDL MARKS_DDL CHECKS_DDL,
                  "adding the timers and attempt_logs tables, dropping the wake-up triggers,"
                  " reordering the unique keys, making a run's updates HOT, adding commit marks,"
                  " dropping the checks of the tables a step writes",
                  err);
    if (rc) {
        PQclear(PQexec(c->db, "ROLLBACK"));
        return rc;
    }
    return exec(c, "COMMIT", "adding the timers and attempt_logs tables", err);
}

sp_store_rc sp_pg_schema_ensure(pg_conn *c, bool create, bool writes, sp_error *err)
{
    schema_state st = {0};
    sp_store_rc rc = read_state(c, &st, err);
    if (rc == SP_STORE_OK && st.versioned) {
        rc = read_version(c, err);
        return rc == SP_STORE_OK && (create || writes) ? add_missing(c, err) : rc;
    }
    if (rc)
        return rc;
    if (!create)
        return sp_fail(err, "store.not-found",
                       "postgres: the database's current schema holds no spore store yet"),
               SP_STORE_UNAVAILABLE;
    /* The lock is per schema (classid 'spor' + a hash of the schema name),
     * held until the transaction ends. */
    rc = exec(c, LOCK_SCHEMA, "locking the schema", err);
    if (rc)
        return rc;
    rc = initialize_locked(c, err);
    if (rc) {
        PQclear(PQexec(c->db, "ROLLBACK"));
        return rc;
    }
    return exec(c, "COMMIT", "creating the schema", err);
}
