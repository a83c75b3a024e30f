/*
 * logic.h - private helpers shared by the store operations (src/store/ops_*.c).
 *
 * What it is for: the operations are written once over sp_db_driver. This
 * header offers what they share: failure helpers with stable codes, request
 * validation (bounds), transactions and row access (tx.c), the mutation
 * runner that implements store.md §2 - begin, lock the run row, receipt
 * first, "now" after the lock, predicates + writes, receipt, failpoints,
 * commit (request.c) - and the typed receipt values (values.c).
 *
 * What it must never do: be included outside src/store/, talk to a database
 * except through sp_db_driver, or let an operation skip the mutation runner.
 */
#ifndef SPORE_STORE_LOGIC_H
#define SPORE_STORE_LOGIC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "store/db.h"
#include "store/store.h"

/* ---- failures ---- */

/* Fill `err` with `code` and return `rc`. */
sp_store_rc lg_fail(sp_error *err, sp_store_rc rc, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* conflict/request.invalid: a malformed request (never succeeds as written). */
#define lg_invalid(err, ...) lg_fail((err), SP_STORE_CONFLICT, "request.invalid", __VA_ARGS__)

/* A JSON encode/pack failure: out-of-memory -> unavailable, else store.encode. */
sp_store_rc lg_encode_fail(sp_error *err, bool oom, const char *what);

/* Canonical bytes of `v` into *out (caller frees); failures as lg_encode_fail. */
sp_store_rc lg_encode(const json_t *v, char **out, size_t *len, const char *what, sp_error *err);

/* ---- request validation (request.c): conflict/request.invalid ---- */

sp_store_rc lg_check_key(const sp_run_key *key, sp_error *err);
sp_store_rc lg_check_text(const char *what, const char *s, size_t max, sp_error *err);
sp_store_rc lg_check_digest(const char *what, const char *digest, sp_error *err);
sp_store_rc lg_check_ref(const sp_attempt_ref *ref, sp_error *err);
sp_store_rc lg_check_evidence(const char *what, const sp_evidence *ev, sp_error *err);
/* Counters and times must be u63 (SQL integers are signed 64-bit). */
sp_store_rc lg_check_u63(const char *what, uint64_t v, sp_error *err);
/* The attempt number n of "<invocationId>.<n>" (0 when malformed). */
uint32_t lg_attempt_number(const char *invocation_id, const char *attempt_id);

/* Predicates on evidence, evaluated inside the transaction:
 * conflict/evidence.digest-mismatch and conflict/evidence.not-canonical.
 * `parsed` (may be NULL) receives the parsed body. */
sp_store_rc lg_verify_evidence(const sp_evidence *ev, json_t **parsed, sp_error *err);

/* json_pack a request body: invalid UTF-8 -> request.invalid. */
sp_store_rc lg_pack(json_t **out, sp_error *err, const char *fmt, ...);

/* The REF prefix of attempt request bodies (see the table in request.c). */
#define LG_REF_FMT "s s s s s o"
#define LG_REF_ARGS(r)                                                                             \
    (r)->key.tenant, (r)->key.run_id, (r)->invocation_id, (r)->attempt_id, (r)->owner,             \
        lg_u63_json((r)->fence)

/* A run status fits sp_run_view.status. */
#define LG_STATUS_MAX 23

/* The same run. */
static inline bool lg_same_run(const sp_run_key *a, const sp_run_key *b)
{
    return strcmp(a->tenant, b->tenant) == 0 && strcmp(a->run_id, b->run_id) == 0;
}

/* ---- u63 values ---- */

static inline uint64_t lg_sat_add(uint64_t a, uint64_t b)
{
    const uint64_t max = UINT64_C(9223372036854775807);
    return (a > max || b > max - a) ? max : a + b;
}

/* ---- transactions and rows (tx.c) ---- */

/* This thread holds a batch of `s` (batch.c). */
bool lg_in_batch(const sp_store *s);
/* Begin the batch's write transaction if it has not begun (its first write). */
sp_store_rc lg_batch_open(sp_store *s, sp_error *err);
/* Fire failpoint `name` now, or - inside a batch - when the batch commits
 * (before its COMMIT, or after it for an after-commit point). */
void lg_failpoint(sp_store *s, const char *name, bool after_commit);

sp_store_rc lg_begin(sp_store *s, bool write, sp_error *err);
/* A work-selection transaction (SP_DB_SCAN): its SELECTs may end with
 * s->driver->dialect.skip_locked. */
sp_store_rc lg_begin_scan(sp_store *s, sp_error *err);
void lg_rollback(sp_store *s);
sp_store_rc lg_commit(sp_store *s, sp_error *err);
/* A request of the batch failed with `rc` where it could not fail alone
 * (after it wrote without a savepoint, or in deferred writes answered after
 * it returned: batch.c, tx.c): after a failure that is not transient, the
 * next batches on this handle keep each request in its own savepoint. */
void lg_batch_request_failed(sp_store *s, sp_store_rc rc);
/* OK, or - the batch failed when deferred writes were answered (tx.c) -
 * unavailable/store.busy naming the failure: no request of it runs any
 * more, and it does not commit. */
sp_store_rc lg_batch_usable(sp_store *s, sp_error *err);
/* Fail the batch this thread holds with `rc` (*err: why; then replaced by
 * lg_batch_usable's answer, which it returns): its transaction can only be
 * rolled back. */
sp_store_rc lg_batch_fail(sp_store *s, sp_store_rc rc, sp_error *err);
uint64_t lg_now(sp_store *s);

sp_store_rc lg_query(sp_store *s, const char *sql, const sp_db_val *params, size_t nparams,
                     sp_db_rows *out, int64_t *changes, sp_error *err);
/* `n` reads in order in one exchange where the driver can (query_all). */
sp_store_rc lg_query_all(sp_store *s, const sp_db_read *reads, size_t n, sp_db_rows *outs,
                         sp_error *err);

#define LG_PARAMS(...) ((const sp_db_val[]){__VA_ARGS__})
#define LG_NPARAMS(...) (sizeof((const sp_db_val[]){__VA_ARGS__}) / sizeof(sp_db_val))
/* Run `sql` with the listed parameters; `out` NULL: a write whose answer
 * the driver may defer (lg_write). */
#define LG_Q(s, out, err, sql, ...)                                                                \
    lg_query_or_write((s), (sql), LG_PARAMS(__VA_ARGS__), LG_NPARAMS(__VA_ARGS__), (out), (err))
sp_store_rc lg_query_or_write(sp_store *s, const char *sql, const sp_db_val *params,
                              size_t nparams, sp_db_rows *out, sp_error *err);
/* A write that reads no rows: the driver may send it without waiting
 * (sp_db_driver.write); its failure then answers the next call, at the
 * latest the request's commit. expect_rows >= 0: exactly that many rows
 * change (else store.invariant). */
sp_store_rc lg_write(sp_store *s, const char *sql, const sp_db_val *params, size_t nparams,
                     int64_t expect_rows, sp_error *err);
/* Like LG_Q for writes that must touch exactly one row (else store.invariant). */
sp_store_rc lg_write1(sp_store *s, const char *sql, const sp_db_val *params, size_t nparams,
                      sp_error *err);
#define LG_W1(s, err, sql, ...)                                                                    \
    lg_write1((s), (sql), LG_PARAMS(__VA_ARGS__), LG_NPARAMS(__VA_ARGS__), (err))
/* The request leaves new work for any worker - `what` is "events" (an
 * event left pending), "invocations" (one left pending) or "timers" - that
 * listening workers hear of when the transaction commits
 * (sp_db_dialect.notify_work; nothing where the database has no wake-ups). */
sp_store_rc lg_announce_work(sp_store *s, const char *what, sp_error *err);

/* One query in its own read transaction (a coherent single read). */
sp_store_rc lg_read(sp_store *s, const char *sql, const sp_db_val *params, size_t nparams,
                    sp_db_rows *out, sp_error *err);
#define LG_R(s, out, err, sql, ...)                                                                \
    lg_read((s), (sql), LG_PARAMS(__VA_ARGS__), LG_NPARAMS(__VA_ARGS__), (out), (err))

/* One work-selection query in its own scan transaction, with the dialect's
 * skip_locked appended: rows another transaction holds are skipped, not
 * waited for (they are left to the next poll). */
sp_store_rc lg_scan(sp_store *s, const char *sql, const sp_db_val *params, size_t nparams,
                    sp_db_rows *out, sp_error *err);
#define LG_S(s, out, err, sql, ...)                                                                \
    lg_scan((s), (sql), LG_PARAMS(__VA_ARGS__), LG_NPARAMS(__VA_ARGS__), (out), (err))

static inline uint64_t lg_u64(const sp_db_rows *r, size_t row, size_t col)
{
    const sp_db_val *v = sp_db_cell(r, row, col);
    return v->type == SP_DB_INT && v->i > 0 ? (uint64_t)v->i : 0;
}

/* TEXT/BLOB cell as a NUL-terminated string, NULL for SQL NULL. */
static inline const char *lg_text(const sp_db_rows *r, size_t row, size_t col)
{
    const sp_db_val *v = sp_db_cell(r, row, col);
    return v->type == SP_DB_TEXT || v->type == SP_DB_BLOB ? v->s : NULL;
}

static inline size_t lg_len(const sp_db_rows *r, size_t row, size_t col)
{
    return sp_db_cell(r, row, col)->len;
}

/* Copy a text cell into a fixed buffer (truncating; "" for NULL). */
void lg_copy(char *dst, size_t cap, const sp_db_rows *r, size_t row, size_t col);
/* A new copy of a text cell (NULL for SQL NULL); false on out-of-memory. */
bool lg_dup(char **dst, size_t *len, const sp_db_rows *r, size_t row, size_t col);

/* The run row as every mutation locks it (LG_RUN_COLS order). */
#define LG_RUN_COLS                                                                                \
    "start_key, package_digest, artifact_digest, started_digest, status, revision, "               \
    "applied_sequence, next_sequence, last_accepted_ms, fence, quarantine_code, "                  \
    "quarantine_details, quarantine_at_ms, created_at_ms, updated_at_ms, snapshot_digest"
enum {
    RUN_START_KEY,
    RUN_PACKAGE_DIGEST,
    RUN_ARTIFACT_DIGEST,
    RUN_STARTED_DIGEST,
    RUN_STATUS,
    RUN_REVISION,
    RUN_APPLIED,
    RUN_NEXT,
    RUN_LAST_ACCEPTED,
    RUN_FENCE,
    RUN_Q_CODE,
    RUN_Q_DETAILS,
    RUN_Q_AT,
    RUN_CREATED,
    RUN_UPDATED,
    RUN_SNAPSHOT_DIGEST,
    RUN_NCOLS
};

/* ---- the mutation runner (request.c) ---- */

/* What a request changed of the run row, written by ONE UPDATE when the
 * request's writes are done (lg_run_flush): the inbox counters of an
 * append, the turn of a commit, the fence of a claim. A request that
 * appends, commits and claims (settle_attempt) rewrites the row - and its
 * snapshot - once, not three times. Strings are borrowed from the request. */
typedef struct lg_run_delta {
    bool inbox, turn, fence;
    uint64_t next_sequence, last_accepted_ms;                     /* inbox */
    uint64_t revision, applied_sequence;                          /* turn */
    const char *snapshot, *snapshot_digest, *status;              /* turn */
    size_t snapshot_len;                                          /* turn */
    uint64_t fence_counter;                                       /* fence */
} lg_run_delta;

typedef struct lg_claimer lg_claimer; /* ops_attempts.c: claims made inside a commit */

typedef struct lg_mut {
    sp_store *s;
    const sp_run_key *key;
    sp_db_rows run;         /* the locked run row: 0 rows = no such run */
    lg_run_delta delta;     /* what the request changed of it (not yet written) */
    uint64_t now;           /* authority time, sampled after the lock */
    json_t *value;          /* set by `apply`: the typed result (owned) */
    bool natural_duplicate; /* `apply` found the identical request: no writes, no receipt */
    lg_claimer *claimer;    /* settle_attempt: invocations to claim as the decision makes them */
    sp_db_rows known;       /* the receipt (and the prefetched attempt) read after the lock */
    const sp_attempt_ref *prefetched; /* the attempt whose row `known` holds */
    sp_db_rows extra;       /* what op->extra_read read (no rows without one) */
    bool predicted;         /* run and known are predicted, checked by guards (predict.c) */
    bool skips_busy;        /* a run another transaction holds is skipped (op->skips_busy) */
} lg_mut;

/* A request's first two reads (request.c): the run row locked (with the
 * database's clock where the driver has one), then its receipt and - for a
 * request about an attempt - the attempt's row. `f` holds their SQL and
 * parameters (borrowing the strings given) and must stay where it is
 * until they have run. */
typedef struct lg_first_reads {
    char lock_sql[1024];
    sp_db_val lock_params[2], known_params[6];
    sp_db_read reads[2];
} lg_first_reads;
void lg_first_reads_make(sp_store *s, const sp_run_key *key, const char *request_id,
                         const sp_attempt_ref *attempt, bool skip_busy, lg_first_reads *f);
/* The first reads the batch made ahead for this request (lock_ahead.c):
 * true with *run and *known (the caller's to free) when it made them for
 * the same run, request ID and attempt, and no request of the batch
 * locked the run since; false otherwise, and then none are kept for that
 * run any more. */
bool lg_ahead_take(sp_store *s, const sp_run_key *key, const char *request_id,
                   const sp_attempt_ref *attempt, sp_db_rows *run, sp_db_rows *known);
/* Forget every read made ahead (the batch ended, or its transaction was
 * rolled back and released their locks). */
void lg_ahead_clear(sp_store *s);

/* ---- predicted first reads (predict.c) ---- */

/* A request on `key`'s run begins: the run's prediction leaves the table
 * (the request changes the run, or may); lg_predict_reads may use it, and
 * lg_predict_stage carries the attempts it names that the request leaves
 * running. */
void lg_predict_begin(sp_store *s, const sp_run_key *key);
/* The database's clock as a lock read saw it (the predicted "now" follows it). */
void lg_predict_clock(sp_store *s, uint64_t db_now_ms);
/* The request inserted this running attempt (its commit leaves it). */
void lg_predict_claimed(lg_mut *m, const sp_attempt_ref *ref, uint64_t number,
                        uint64_t lease_until_ms, uint64_t deadline_ms);
/* The request committed into the batch: what it left of the run (with its
 * attempts running but `settled`) is the prediction for the run's next
 * request once the batch commits. */
void lg_predict_stage(lg_mut *m, const sp_attempt_ref *settled);
/* The batch ended: its staged predictions are kept when it committed (and
 * a miss in it is counted). */
void lg_predict_batch_end(sp_store *s, bool committed);
void lg_predict_close(sp_store *s);
/* Every prediction dropped: a batch sent before, whose answer was unread
 * when its predictions were taken as committed, did not commit. */
void lg_predict_forget(sp_store *s);
/* The prediction lifted for m->key, if it names `attempt`. *used: m->run,
 * m->known and m->now hold it, and its guards are sent (their failure is
 * the answer of a later exchange, at the latest the batch's COMMIT). */
sp_store_rc lg_predict_reads(lg_mut *m, const sp_attempt_ref *attempt, const char *request_id,
                             bool *used, sp_error *err);
/* A prediction for `attempt`'s settle is kept (the batch need not lock its
 * run ahead: the settle's guard locks it). */
bool lg_predict_ready(sp_store *s, const sp_attempt_ref *attempt);
/* A request on a prediction failed with *err: that is a miss, never its
 * answer (unavailable/store.prediction-missed; the caller makes it again). */
sp_store_rc lg_predict_missed(sp_store *s, sp_error *err);

/* The run row was there when the request locked it. */
bool lg_run_exists(const lg_mut *m);
/* The row of `ref`'s attempt as the mutation runner fetched it with the
 * receipt (LG_ATTEMPT_COLS order; no rows when there is none): false when
 * it did not fetch that attempt (then read it). `rows` is the caller's to
 * free. */
bool lg_prefetched_attempt(const lg_mut *m, const sp_attempt_ref *ref, sp_db_rows *rows);
/* A counter of the run row as this request left it so far (its delta). */
uint64_t lg_run_u64(const lg_mut *m, int col);
static inline const char *lg_run_text(const lg_mut *m, int col) { return lg_text(&m->run, 0, col); }
/* Write the delta (one UPDATE; nothing when the request changed nothing). */
sp_store_rc lg_run_flush(lg_mut *m, sp_error *err);
static inline bool lg_run_quarantined(const lg_mut *m)
{
    return lg_run_text(m, RUN_Q_CODE) != NULL;
}

/* The shared run predicates: not-found/run.not-found, stale/run.quarantined,
 * stale/revision.mismatch. */
sp_store_rc lg_need_run(const lg_mut *m, sp_error *err);
sp_store_rc lg_need_unquarantined(const lg_mut *m, sp_error *err);
sp_store_rc lg_need_revision(const lg_mut *m, uint64_t expected, sp_error *err);

typedef enum lg_predicting {
    LG_PREDICT_NONE,   /* the run's prediction is gone after it */
    LG_PREDICT_LEAVES, /* it leaves one: the attempts it claims (claim_attempt) */
    LG_PREDICT_USES,   /* ... and runs on one (settle_attempt) */
} lg_predicting;

typedef struct lg_op {
    const char *name;      /* "create_run": the digest's operation and receipts.operation */
    const char *failpoint; /* "create-run" -> store.create-run.{before,after}-commit; or NULL */
    /* Predicates in order, then writes; sets m->value. */
    sp_store_rc (*apply)(lg_mut *m, const void *req, sp_error *err);
    /* Fill the typed result from a value (fresh or replayed). */
    sp_store_rc (*decode)(const json_t *value, void *res, sp_error *err);
    /* Optional: the attempt the request is about, fetched with the lock. */
    const sp_attempt_ref *(*attempt)(const void *req);
    /* Optional: one more read of what `apply` will read first, made in the
     * same exchange right after the lock and known reads, so that it sees
     * the run as locked (m->extra); its parameters, borrowing from `req`,
     * go to params[0..LG_EXTRA_PARAMS). A request whose operation has one
     * never takes reads a batch made ahead (lock_ahead.c). */
    void (*extra_read)(const void *req, sp_db_read *read, sp_db_val *params);
    /* Whether its commit leaves a prediction of the run's next request's
     * first reads, and whether it runs on one itself (predict.c). */
    lg_predicting predicts;
    /* Optional: whether this request skips a run another transaction holds
     * (the lock read with dialect.skip_locked) and answers conflict/run.busy. */
    bool (*skips_busy)(const void *req);
} lg_op;
#define LG_EXTRA_PARAMS 12

/* One mutation, store.md §2. `body` (taken) is the JSON array that defines
 * the request (the digest table in request.c). On success `res` is filled
 * by op->decode and `*disposition` says applied or duplicate. */
sp_store_rc lg_mutate(sp_store *s, const lg_op *op, const sp_run_key *key, const char *request_id,
                      json_t *body, const void *req, void *res, sp_disposition *disposition,
                      sp_error *err);

/* ---- attempts (ops_attempts.c) ---- */

#define LG_ATTEMPT_COLS                                                                            \
    "invocation_id, attempt_number, owner, fence, lease_until_ms, deadline_ms, status"
enum { AT_INVOCATION, AT_NUMBER, AT_OWNER, AT_FENCE, AT_LEASE, AT_DEADLINE, AT_STATUS };

/* The attempt row named by ref->attempt_id (0 rows when absent). */
sp_store_rc lg_attempt_row(lg_mut *m, const sp_attempt_ref *ref, sp_db_rows *rows, sp_error *err);
/* One row whose invocation, owner and fence equal the reference's. */
bool lg_attempt_matches(const sp_db_rows *rows, const sp_attempt_ref *ref);
bool lg_attempt_running(const sp_db_rows *rows);
/* Load the attempt and require running + matching tuple + now < lease
 * (stale/lease.lost). `rows` must be freed by the caller either way. */
sp_store_rc lg_check_lease(lg_mut *m, const sp_attempt_ref *ref, sp_db_rows *rows, sp_error *err);
/* Holder handle: canonical JSON (conflict/holder.invalid) <= 4 KiB
 * (quota/holder.too-large). */
sp_store_rc lg_check_holder(const char *holder, sp_error *err);

/* ---- how an attempt ends (ops_finish.c) ---- */

/* An attempt request's reference and request ID (conflict/request.invalid). */
sp_store_rc lg_attempt_args(const sp_attempt_ref *ref, const char *request_id, sp_error *err);
/* finish_attempt's predicates, in order: result size, evidence, shape, the
 * fenced lease. When `parsed` is given and they hold, *parsed is the result
 * body's value (the caller's reference). */
sp_store_rc lg_finish_predicates(lg_mut *m, const sp_attempt_ref *ref, const sp_evidence *result,
                                 json_t **parsed, sp_error *err);
/* The attempt ended (`status`, `reason`, `result`) and its invocation settled. */
sp_store_rc lg_attempt_ended(lg_mut *m, const sp_attempt_ref *ref, const char *status,
                             const char *reason, const char *result, sp_error *err);
/* The ID of an attempt's result event: att:<attemptId>. */
#define LG_EVENT_ID_MAX (SP_ID_LEN + 32)
void lg_result_event_id(const sp_attempt_ref *ref, char out[LG_EVENT_ID_MAX]);

/* What a claim answers about its invocation (borrowed strings). */
typedef struct lg_invocation {
    const char *invocation_id, *node_id, *action_id, *effect_key, *input;
    size_t input_len;
    const char *input_digest;
    uint32_t attempt_number;
} lg_invocation;

/* Claims made inside a decision (settle_attempt): the invocations its
 * caller wants, the claim terms (claim_attempt's: worker, lease, host), and
 * the claims made, as their typed values. */
struct lg_claimer {
    const char *const *wanted;
    size_t nwanted;
    const sp_claim_req *terms;
    json_t *made; /* array of lg_claim_value */
};

/* The decision being committed should claim `invocation_id` now: it is
 * wanted, due (not_before_ms <= now) and the run is not quarantined. */
bool lg_claim_wanted(const lg_mut *m, const char *invocation_id, uint64_t not_before_ms);
/* Claim an invocation the decision just inserted as running. */
sp_store_rc lg_claim_inserted(lg_mut *m, const lg_invocation *inv, sp_error *err);
/* Claim an invocation the decision just made pending again (a retry). */
sp_store_rc lg_claim_retried(lg_mut *m, const char *invocation_id, sp_error *err);

/* ---- shared writes ---- */

/* Append one event at the run's next gapless sequence with acceptedAtMs =
 * max(now, the previous event's) and advance the run (ops_events.c). Checks
 * the size (quota/event.too-large). */
sp_store_rc lg_append(lg_mut *m, const char *event_id, const char *kind, const char *body,
                      size_t len, const char *digest, uint64_t *sequence, uint64_t *accepted,
                      sp_error *err);
/* One event as the append rule places it. */
typedef struct lg_event_rec {
    const char *event_id, *kind, *body;
    size_t len;
    const char *digest;
    uint64_t sequence, accepted_at_ms;
    const json_t *value; /* the body's value when the request parsed it; may be NULL */
} lg_event_rec;

/* The next event's gapless sequence and its accepted time, max(now, the
 * previous event's). */
void lg_next_event(const lg_mut *m, uint64_t *sequence, uint64_t *accepted);
/* Insert it (consumed by `consumed_revision`, 0 = pending) and advance the
 * run's inbox counters; quota/event.too-large above 64 KiB. */
sp_store_rc lg_insert_event(lg_mut *m, const lg_event_rec *ev, uint64_t consumed_revision,
                            sp_error *err);
/* The run's inbox counters after an event at `sequence` (the run delta). */
void lg_run_appended(lg_mut *m, uint64_t sequence, uint64_t accepted);
/* The run after a committed turn (the run delta; the strings are borrowed
 * until the request ends). */
void lg_run_turned(lg_mut *m, uint64_t revision, uint64_t applied, const char *snapshot,
                   size_t snapshot_len, const char *snapshot_digest, const char *status);

/* ---- decisions (ops_commit.c) ---- */

/* A decision's own members (digests, status, snapshot, records within their
 * bounds): conflict/request.invalid. */
sp_store_rc lg_check_decision(const sp_commit_turn_req *req, sp_error *err);
/* commit_turn's decision predicates and writes, the run's own predicates
 * (revision, pending event) already checked: snapshot digest and size,
 * command IDs, each command's rules; the transition, the run's new state
 * (its delta), each command and what it authorizes (m->claimer: claimed at
 * once). own_decision: settle_attempt's, by the engine's kernel - its event
 * was inserted consumed already, and the commands that need no invocation's
 * state are not looked up first (the tables' keys refuse a repeat; see
 * check_command_ids in ops_commit.c). */
sp_store_rc lg_commit_decision(lg_mut *m, const sp_commit_turn_req *req, bool own_decision,
                               sp_error *err);

/* ---- format 0.2 commands of a decision (ops_timers.c) ---- */

/* timer.start / timer.cancel, payload already parsed (commit_turn). */
sp_store_rc lg_timer_start(lg_mut *m, const json_t *payload, sp_error *err);
sp_store_rc lg_timer_cancel(lg_mut *m, const json_t *payload, sp_error *err);

/* ---- typed values (values.c): canonical JSON of each result ---- */

json_t *lg_u63_json(uint64_t v);
bool lg_get_u63(const json_t *obj, const char *name, uint64_t *out);
const char *lg_get_str(const json_t *obj, const char *name);
json_t *lg_key_json(const sp_run_key *key);
bool lg_key_from(const json_t *v, sp_run_key *key);
/* A receipt value that does not decode: corrupt/store.corrupt. */
sp_store_rc lg_bad_value(sp_error *err, const char *op);

json_t *lg_created_value(const sp_run_key *key);
sp_store_rc lg_created_decode(const json_t *v, void *res, sp_error *err);
json_t *lg_appended_value(uint64_t sequence, uint64_t accepted_at_ms);
sp_store_rc lg_appended_decode(const json_t *v, void *res, sp_error *err);
json_t *lg_committed_value(const sp_run_key *key, uint64_t revision, uint64_t applied,
                           const char *decision_digest);
sp_store_rc lg_committed_decode(const json_t *v, void *res, sp_error *err);
json_t *lg_claim_value(const sp_claim *c); /* c->input is canonical text */
sp_store_rc lg_claim_decode(const json_t *v, void *res, sp_error *err);
/* settle_attempt; takes `claims` (an array of claim values); revision 0 =
 * no turn. */
json_t *lg_settled_value(uint64_t sequence, uint64_t revision, const char *decision_digest,
                         json_t *claims);
sp_store_rc lg_settled_decode(const json_t *v, void *res, sp_error *err);
json_t *lg_lease_value(uint64_t lease_until_ms);
sp_store_rc lg_lease_decode(const json_t *v, void *res, sp_error *err);
json_t *lg_result_value(uint64_t sequence);
sp_store_rc lg_result_decode(const json_t *v, void *res, sp_error *err);
json_t *lg_audit_value(uint64_t audit_id);
sp_store_rc lg_audit_decode(const json_t *v, void *res, sp_error *err);
json_t *lg_flag_value(bool quarantined);
sp_store_rc lg_flag_decode(const json_t *v, void *res, sp_error *err);

/* Attempt references in values and scans. */
json_t *lg_ref_json(const sp_attempt_ref *ref);
bool lg_ref_from(const json_t *v, sp_attempt_ref *ref);

/* ---- cursors (ops_scan.c, ops_views.c): JSON arrays of the last sort key ---- */

/* Parse a cursor of `n` string members (conflict/cursor.invalid). */
sp_store_rc lg_cursor_parse(const char *cursor, size_t n, const char **out, json_t **owner,
                            sp_error *err);
/* Encode the strings as a cursor (NULL on out-of-memory). */
char *lg_cursor_make(const char *const *parts, size_t n);
size_t lg_clamp_limit(size_t limit);

#endif
