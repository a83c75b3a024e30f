/*
 * store.h - the store interface (store.md, protocol 0.1): the only durable
 * state of spore. One interface, several adapters (SQLite, PostgreSQL); the
 * conformance suite (tests/store/) runs unchanged against each.
 *
 * What it is for: every mutation is one atomic, idempotent request. A
 * request carries a request ID; the first thing an adapter does is look up
 * the receipt `(tenant, run, requestId)`: same digest -> the stored value
 * with disposition `duplicate`, without evaluating any other predicate;
 * different digest -> conflict/request.digest-mismatch. Otherwise the
 * predicates are checked in the documented order, the writes and the receipt
 * are committed together, and "now" is the injected clock sampled after the
 * write lock is held. A failure leaves no trace, not even a receipt.
 *
 * What it must never do: keep state outside its database, use a client
 * timestamp, resurrect an expired lease, reuse a fence, or let a failed
 * request write anything.
 *
 * Conventions: functions return an sp_store_rc (SP_STORE_OK = 0) and fill
 * `err` with the stable code (store.md §3, e.g. "revision.mismatch") on
 * failure. Result structs are filled only on SP_STORE_OK and are released
 * with the matching *_free function when they own memory. All strings passed
 * in are borrowed for the duration of the call. Times are milliseconds since
 * the Unix epoch (u63); counters are u63.
 */
#ifndef SPORE_STORE_STORE_H
#define SPORE_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "digest/digest.h"

/* ---- failure kinds (store.md §2) ---- */

typedef enum sp_store_rc {
    SP_STORE_OK = 0,
    SP_STORE_CONFLICT,       /* never succeeds as written */
    SP_STORE_STALE,          /* revision / fence / lease no longer current */
    SP_STORE_UNAVAILABLE,    /* transient; retry the identical request */
    SP_STORE_UNKNOWN_COMMIT, /* outcome unknown; retry identical or read the receipt */
    SP_STORE_QUOTA,
    SP_STORE_INCOMPATIBLE,
    SP_STORE_CORRUPT,
    SP_STORE_UNAUTHORIZED,
    SP_STORE_NOT_FOUND,
} sp_store_rc;

/* "conflict", "stale", ... */
const char *sp_store_rc_name(sp_store_rc rc);

/* True for the kinds the engine retries with the identical request. */
bool sp_store_rc_transient(sp_store_rc rc);

/* The code of a batch (or request) that ran on predicted first reads the
 * database did not hold (unavailable): nothing of it applied, and it is to
 * be made again at once - not a fault to back off from. */
#define SP_STORE_PREDICTION_MISSED "store.prediction-missed"
bool sp_store_prediction_missed(const sp_error *err);

/* ---- bounds (store.md §3, kernel.md §7.12) ---- */

#define SP_STORE_EVENT_MAX (64u * 1024)     /* event body: event.too-large */
#define SP_STORE_SNAPSHOT_MAX (256u * 1024) /* snapshot: snapshot.too-large */
/* A spore.state/0.2 snapshot (format 0.2 keeps a map's results in it:
 * kernel.md §8.9): snapshot.too-large above this. */
#define SP_STORE_SNAPSHOT_MAX_02 (8u * 1024 * 1024)
#define SP_STORE_HOLDER_MAX (4u * 1024)     /* attempt holder handle */
#define SP_STORE_ID_MAX 128                 /* tenant, run ID, request ID parts */
#define SP_STORE_REQUEST_ID_MAX 512
#define SP_STORE_PAGE_MAX 256               /* larger limits are clamped; 0 = the max */
#define SP_STORE_PACKAGE_MAX (8u << 20)     /* package bytes: quota/package.too-large */
#define SP_STORE_BLOB_MAX (64u << 20)       /* blob bytes: quota/blob.too-large */
#define SP_STORE_COMMANDS_MAX 128           /* commands per commit (the kernel's budget) */
#define SP_STORE_DIAGNOSTICS_MAX 1024       /* diagnostics per commit */

/* ---- the injectable clock ---- */

typedef struct sp_clock {
    uint64_t (*now_ms)(void *ctx);
    void *ctx;
} sp_clock;

/* The system clock (CLOCK_REALTIME in ms). */
sp_clock sp_clock_system(void);

/* ---- shared value types ---- */

typedef struct sp_run_key {
    char tenant[SP_STORE_ID_MAX + 1];
    char run_id[SP_STORE_ID_MAX + 1];
} sp_run_key;

typedef enum sp_disposition { SP_APPLIED = 0, SP_DUPLICATE = 1 } sp_disposition;

/* Canonical JSON bytes with their body digest ("sha256:…"); the store
 * verifies digest == digest::body(body) (conflict/evidence.digest-mismatch). */
typedef struct sp_evidence {
    const char *body;
    size_t len;
    const char *digest;
} sp_evidence;

/* The identity of one attempt, carried by every attempt mutation. */
typedef struct sp_attempt_ref {
    sp_run_key key;
    char invocation_id[SP_ID_LEN + 1];
    char attempt_id[SP_ID_LEN + 16];
    char owner[SP_STORE_ID_MAX + 1];
    uint64_t fence;
} sp_attempt_ref;

/* Where the owner of a claim lives (engine.md §11, fast takeover). */
typedef struct sp_owner_host {
    char host_id[64]; /* /etc/machine-id or boot ID; "" = unknown */
    int64_t pid;
    uint64_t pid_started; /* process start time in clock ticks since boot */
} sp_owner_host;

/* ---- requests and results ---- */

typedef struct sp_create_run_req {
    sp_run_key key;
    const char *request_id;
    const char *start_key;
    const char *package_digest;
    const char *package; /* canonical package bytes */
    size_t package_len;
    const char *artifact_digest; /* provenance, NULL when none */
    sp_evidence started;         /* the run.started payload */
} sp_create_run_req;

typedef struct sp_create_run_res {
    sp_disposition disposition;
    sp_run_key key;
    uint64_t started_sequence; /* 1 */
} sp_create_run_res;

typedef struct sp_append_event_req {
    sp_run_key key;
    const char *request_id;
    const char *event_id;
    const char *kind; /* never run.started / activity.result (event.reserved-kind) */
    sp_evidence body;
} sp_append_event_req;

typedef struct sp_append_event_res {
    sp_disposition disposition;
    uint64_t sequence;
    uint64_t accepted_at_ms;
} sp_append_event_res;

typedef struct sp_event {
    uint64_t sequence;
    char *event_id;
    char *kind;
    char *body; /* canonical JSON */
    size_t body_len;
    char body_digest[SP_DIGEST_TEXT_LEN + 1];
    uint64_t accepted_at_ms;
    bool consumed;
    uint64_t consumed_revision;
    char *diagnostics; /* canonical JSON array of the consuming commit, NULL if pending */
    /* In a decider's turn only: the value `body` parses to, when the store
     * parsed it already (borrowed for the call; NULL otherwise). */
    const struct json_t *body_value;
} sp_event;

void sp_event_free(sp_event *e);

typedef struct sp_turn {
    sp_run_key key;
    uint64_t revision;
    uint64_t applied_sequence;
    char package_digest[SP_DIGEST_TEXT_LEN + 1];
    char *snapshot; /* NULL before the first commit */
    size_t snapshot_len;
    char snapshot_digest[SP_DIGEST_TEXT_LEN + 1];
    sp_event event; /* the event at applied_sequence + 1 */
    uint64_t next_sequence; /* the sequence the next accepted event gets */
} sp_turn;

void sp_turn_free(sp_turn *t);

typedef struct sp_command_rec {
    const char *command_id;
    const char *activation_id;
    const char *kind; /* activity.schedule | activity.retry */
    const char *payload;
    size_t payload_len;
    /* Optional: the value `payload` encodes, when the caller has it (a
     * decision of the engine's kernel): the store reads it instead of
     * parsing the bytes. NULL: the bytes are parsed and must be canonical. */
    const struct json_t *payload_value;
} sp_command_rec;

typedef struct sp_diagnostic_rec {
    const char *code;
    const char *node_id; /* NULL = none */
    const char *details;
    size_t details_len;
} sp_diagnostic_rec;

typedef struct sp_commit_turn_req {
    sp_run_key key;
    const char *request_id; /* commit/<revision+1>/<eventId> */
    uint64_t expected_revision;
    const char *event_id;
    uint64_t event_sequence;
    const char *decision_digest;
    const char *snapshot;
    size_t snapshot_len;
    const char *snapshot_digest;
    const char *status; /* the snapshot's status */
    const sp_command_rec *commands;
    size_t ncommands;
    const sp_diagnostic_rec *diagnostics;
    size_t ndiagnostics;
    /* The caller computed snapshot_digest from these very bytes (the
     * engine's kernel does, in this process): the store does not compute it
     * again (a 250-node run's snapshot is ~14 KiB). Otherwise the store
     * checks it (snapshot.digest-mismatch). */
    bool snapshot_digest_computed;
    /* A run another transaction holds right now is skipped, not waited
     * for: conflict/run.busy at once, nothing changed (a coordinator's
     * turn: the holder is another worker, which has the run in hand). Not
     * part of the request's body. */
    bool skip_busy;
} sp_commit_turn_req;

typedef struct sp_commit_turn_res {
    sp_disposition disposition;
    uint64_t revision;
    uint64_t applied_sequence;
    char decision_digest[SP_DIGEST_TEXT_LEN + 1];
} sp_commit_turn_res;

typedef struct sp_claim_req {
    sp_run_key key;
    const char *request_id;
    const char *invocation_id;
    const char *worker;
    uint64_t lease_duration_ms;
    const char *holder; /* canonical JSON <= 4 KiB, NULL = none */
    uint64_t deadline_ms; /* 0 = none */
    sp_owner_host host;
    /* Relative alternative to deadline_ms, measured on the store's clock at
     * the claim: deadline = now + deadline_in_ms (0 = use deadline_ms). */
    uint64_t deadline_in_ms;
    /* Not waited for: a run another transaction holds right now (PostgreSQL:
     * its row locked) answers conflict/run.busy at once and changes nothing.
     * A worker's dispatch sets it (another worker is at that run: the step
     * is its, or the next scan's); not part of the request's identity. */
    bool skip_busy;
} sp_claim_req;

typedef struct sp_claim {
    sp_disposition disposition;
    sp_attempt_ref attempt;
    uint32_t attempt_number;
    uint64_t lease_until_ms;
    uint64_t deadline_ms; /* 0 = none */
    char *node_id, *action_id, *effect_key;
    char input_digest[SP_DIGEST_TEXT_LEN + 1];
    char *input; /* canonical JSON */
    size_t input_len;
} sp_claim;

void sp_claim_free(sp_claim *c);

typedef struct sp_heartbeat_req {
    sp_attempt_ref attempt;
    const char *request_id;
    uint64_t extend_ms;
} sp_heartbeat_req;

typedef struct sp_heartbeat_res {
    sp_disposition disposition;
    uint64_t lease_until_ms;
} sp_heartbeat_res;

typedef struct sp_hold_req {
    sp_attempt_ref attempt;
    const char *request_id;
    const char *holder; /* canonical JSON <= 4 KiB */
    uint64_t lease_until_ms; /* the async bound; capped at the deadline */
    uint64_t deadline_ms;    /* the new deadline; 0 = keep the attempt's current one */
    /* Relative alternatives on the store's clock (0 = use the absolute field):
     * lease = now + lease_in_ms, deadline = now + deadline_in_ms. */
    uint64_t lease_in_ms;
    uint64_t deadline_in_ms;
} sp_hold_req;

typedef struct sp_finish_req {
    sp_attempt_ref attempt;
    const char *request_id; /* finish/<attemptId> */
    sp_evidence result;     /* an activity.result payload, status != expired */
} sp_finish_req;

typedef struct sp_finish_res {
    sp_disposition disposition;
    uint64_t result_sequence;
} sp_finish_res;

typedef enum sp_expire_reason {
    SP_EXPIRE_LEASE = 0, /* requires now >= leaseUntilMs */
    SP_EXPIRE_DEADLINE,
    SP_EXPIRE_PROBE_DEAD,
    SP_EXPIRE_ABANDONED,
    SP_EXPIRE_OWNER_DEAD,
} sp_expire_reason;

const char *sp_expire_reason_name(sp_expire_reason r);

typedef struct sp_expire_req {
    sp_attempt_ref attempt;
    const char *request_id; /* expire/<attemptId> */
    sp_expire_reason reason;
} sp_expire_req;

typedef struct sp_late_evidence_req {
    sp_attempt_ref attempt;
    const char *request_id; /* late/<attemptId>/<nonce> */
    const char *kind;       /* e.g. "result-after-lease", "watch-result" */
    sp_evidence evidence;
} sp_late_evidence_req;

typedef struct sp_late_evidence_res {
    sp_disposition disposition;
    uint64_t audit_id;
} sp_late_evidence_res;

typedef struct sp_quarantine_req {
    sp_run_key key;
    const char *request_id;
    uint64_t expected_revision;
    const char *code;
    const char *details;
} sp_quarantine_req;

typedef struct sp_release_req {
    sp_run_key key;
    const char *request_id; /* release/<revision>/<quarantine atMs> */
} sp_release_req;

typedef struct sp_flag_res {
    sp_disposition disposition;
    bool value; /* quarantined after the call */
} sp_flag_res;

/* ---- scans and views ---- */

typedef struct sp_key_page {
    sp_run_key *keys;
    size_t n;
    char *next_cursor; /* NULL at the end */
} sp_key_page;

void sp_key_page_free(sp_key_page *p);

typedef enum sp_due_kind { SP_DUE_LEASE, SP_DUE_DEADLINE, SP_DUE_OUTBOX } sp_due_kind;

typedef struct sp_due_item {
    sp_due_kind kind;
    uint64_t at_ms; /* lease end, deadline or notBeforeMs */
    sp_run_key key;
    char id[SP_ID_LEN + 16]; /* attempt ID (lease/deadline) or invocation ID (outbox) */
    sp_attempt_ref attempt;  /* lease/deadline items */
    sp_owner_host host;      /* lease/deadline items: the owner's host */
    bool held;               /* lease/deadline items: the attempt has a holder */
    uint64_t deadline_ms;    /* lease/deadline items: the hard deadline, 0 = none */
    char action_id[SP_STORE_ID_MAX + 1];             /* outbox items */
    char package_digest[SP_DIGEST_TEXT_LEN + 1];     /* outbox items: the run's package */
} sp_due_item;

typedef struct sp_due_page {
    sp_due_item *items;
    size_t n;
    char *next_cursor;
} sp_due_page;

void sp_due_page_free(sp_due_page *p);

typedef struct sp_run_view {
    sp_run_key key;
    char *start_key;
    char package_digest[SP_DIGEST_TEXT_LEN + 1];
    char *artifact_digest; /* NULL when none */
    char status[24];       /* "created" before the first commit */
    uint64_t revision;
    uint64_t applied_sequence;
    uint64_t next_sequence; /* sequence the next accepted event gets */
    char *snapshot;
    size_t snapshot_len;
    char snapshot_digest[SP_DIGEST_TEXT_LEN + 1];
    bool quarantined;
    char *quarantine_code, *quarantine_details;
    uint64_t quarantine_at_ms;
    uint64_t created_at_ms, updated_at_ms;
} sp_run_view;

void sp_run_view_free(sp_run_view *v);

typedef struct sp_run_summary {
    sp_run_key key;
    char *start_key;
    char package_digest[SP_DIGEST_TEXT_LEN + 1];
    char status[24];
    uint64_t revision;
    bool quarantined;
    uint64_t created_at_ms, updated_at_ms;
} sp_run_summary;

typedef struct sp_run_list {
    sp_run_summary *runs;
    size_t n;
    char *next_cursor;
} sp_run_list;

void sp_run_list_free(sp_run_list *l);

typedef struct sp_event_list {
    sp_event *events;
    size_t n;
} sp_event_list;

void sp_event_list_free(sp_event_list *l);

typedef struct sp_invocation_view {
    char invocation_id[SP_ID_LEN + 1];
    char *node_id, *action_id, *effect_key;
    char status[16]; /* pending | running | settled */
    uint32_t attempt_number;
    uint64_t not_before_ms;
    /* the latest attempt, when there is one */
    bool has_attempt;
    char attempt_id[SP_ID_LEN + 16];
    char attempt_status[16]; /* running | finished | expired */
    char *owner;
    uint64_t fence;
    uint64_t lease_until_ms, deadline_ms;
    char *holder; /* NULL when none */
    char *input;
    size_t input_len;
} sp_invocation_view;

typedef struct sp_invocation_list {
    sp_invocation_view *items;
    size_t n;
} sp_invocation_list;

void sp_invocation_list_free(sp_invocation_list *l);

typedef struct sp_receipt {
    char *request_id;
    char request_digest[SP_DIGEST_TEXT_LEN + 1];
    char *operation;
    char *value; /* canonical JSON of the typed value */
} sp_receipt;

void sp_receipt_free(sp_receipt *r);

typedef struct sp_store_capabilities {
    const char *protocol; /* "0.1" */
    bool atomic_run_mutation, conditional_writes, unique_insert, authoritative_readback,
        ordered_recovery_scan, multiworker_claims, persistent_wakeup;
    const char *failure_model;     /* e.g. "crash-stop" */
    const char *transaction_scope; /* "database" */
    uint64_t max_record_bytes;
    const char *adapter; /* "sqlite" | "postgres" */
    /* Not in store.md: all writers of the store commit one after another
     * (SQLite's single write lock), so several workers add no commit
     * throughput and one worker may take every ready step in one batch. */
    bool one_writer;
} sp_store_capabilities;

/* ---- the store ---- */

typedef struct sp_store sp_store;

/* How a store is opened. */
typedef enum sp_store_open_mode {
    SP_STORE_OPEN_OR_CREATE = 0, /* create and initialize a new or empty store */
    SP_STORE_OPEN_EXISTING,      /* never create: store.not-found instead */
} sp_store_open_mode;

typedef struct sp_store_open_opts {
    sp_store_open_mode mode;
    /* SQLite: also open a store file (or its -wal/-shm) that users other
     * than the owner may read, or that another user owns; refused with
     * store.not-private otherwise (the file holds the token secret). */
    bool allow_shared;
    /* The caller only reads: a store file it may not write will do (else
     * store.io at open, never a write retried until it gives up). */
    bool reads_only;
    const sp_clock *clock; /* NULL: the system clock */
} sp_store_open_opts;

/* Open a store from a location: a SQLite file path, or a postgres:// /
 * postgresql:// URL (libpq's URI form). In OR_CREATE mode a new SQLite file
 * is created 0600 (and so are its -wal and -shm files) and an empty file or
 * an empty PostgreSQL schema is initialized. A file that is not a spore
 * store is never changed (store.corrupt / schema.unknown, read before any
 * pragma that writes). sp_store_location() never shows the URL's password.
 * store.io / store.not-found / store.not-private / store.corrupt /
 * schema.unknown / schema.too-new / store.unsupported on error. */
sp_store *sp_store_open_with(const char *location, const sp_store_open_opts *opts, sp_error *err);

/* sp_store_open_with() in OR_CREATE mode, private stores only. */
sp_store *sp_store_open(const char *location, const sp_clock *clock, sp_error *err);
void sp_store_close(sp_store *s);

/* Mutations (store.md §3). */
sp_store_rc sp_store_create_run(sp_store *s, const sp_create_run_req *req, sp_create_run_res *res,
                                sp_error *err);
sp_store_rc sp_store_append_event(sp_store *s, const sp_append_event_req *req,
                                  sp_append_event_res *res, sp_error *err);
sp_store_rc sp_store_commit_turn(sp_store *s, const sp_commit_turn_req *req,
                                 sp_commit_turn_res *res, sp_error *err);
sp_store_rc sp_store_claim_attempt(sp_store *s, const sp_claim_req *req, sp_claim *res,
                                   sp_error *err);
sp_store_rc sp_store_heartbeat(sp_store *s, const sp_heartbeat_req *req, sp_heartbeat_res *res,
                               sp_error *err);
sp_store_rc sp_store_hold_attempt(sp_store *s, const sp_hold_req *req, sp_heartbeat_res *res,
                                  sp_error *err);
sp_store_rc sp_store_finish_attempt(sp_store *s, const sp_finish_req *req, sp_finish_res *res,
                                    sp_error *err);
sp_store_rc sp_store_expire_attempt(sp_store *s, const sp_expire_req *req, sp_finish_res *res,
                                    sp_error *err);
sp_store_rc sp_store_record_late_evidence(sp_store *s, const sp_late_evidence_req *req,
                                          sp_late_evidence_res *res, sp_error *err);
sp_store_rc sp_store_quarantine_run(sp_store *s, const sp_quarantine_req *req, sp_flag_res *res,
                                    sp_error *err);
sp_store_rc sp_store_release_run(sp_store *s, const sp_release_req *req, sp_flag_res *res,
                                 sp_error *err);

/* ---- settle_attempt: a step in one request (step-path.md §1) ----
 *
 * finish_attempt, the commit_turn of the result it appends, and the claims
 * of the invocations that turn schedules, as ONE request with one receipt
 * (request ID settle/<attemptId>): a sequential step's result, event,
 * decision and next claim are one set of writes. The store asks its caller
 * for the decision inside the request (sp_decider), after the result event
 * was appended under the lock and "now" was sampled, so the kernel decides
 * on exactly the turn the store will commit. */

/* The kernel's decision on a turn, as commit_turn stores it, and which of
 * the invocations it schedules (activity.schedule) or retries
 * (activity.retry) the caller wants claimed at once: each is claimed in the
 * same request when it is due by then, like claim_attempt with the
 * request's claim terms; the others stay pending for any worker. */
typedef struct sp_decision {
    const char *decision_digest;
    const char *snapshot;
    size_t snapshot_len;
    const char *snapshot_digest;
    const char *status;
    const sp_command_rec *commands;
    size_t ncommands;
    const sp_diagnostic_rec *diagnostics;
    size_t ndiagnostics;
    const char *const *claim; /* invocation IDs, at most SP_SETTLE_CLAIMS_MAX */
    size_t nclaim;
    bool snapshot_digest_computed; /* as sp_commit_turn_req's */
} sp_decision;

#define SP_SETTLE_CLAIMS_MAX 1024

typedef enum sp_decide_rc {
    SP_DECIDE_COMMIT,        /* *d is the decision: commit it */
    SP_DECIDE_PASS,          /* leave the event pending (a later commit_turn decides) */
    SP_DECIDE_NEED_SNAPSHOT, /* call again with t->snapshot read */
} sp_decide_rc;

typedef struct sp_decider {
    /* The turn the result became: t->event is the result at applied+1,
     * t->snapshot NULL on the first call (t->snapshot_digest names it).
     * Called inside the request's transaction: it must not call the store.
     * *d (and what it points to) must stay valid until settle_attempt
     * returns; the decision was committed iff it returns SP_STORE_OK with
     * `turned` and disposition applied. */
    sp_decide_rc (*decide)(void *ctx, const sp_turn *t, sp_decision *d);
    void *ctx;
} sp_decider;

typedef struct sp_settle_req {
    sp_attempt_ref attempt;
    const char *request_id; /* settle/<attemptId> */
    sp_evidence result;     /* as finish_attempt's */
    const sp_decider *decider; /* NULL: finish only */
    /* the claim terms of what the decision asks to claim (claim_attempt's) */
    const char *worker;
    uint64_t lease_duration_ms;
    sp_owner_host host;
} sp_settle_req;

typedef struct sp_settle_res {
    sp_disposition disposition;
    uint64_t result_sequence;
    bool turned; /* the result's turn was committed by this request */
    uint64_t revision;
    char decision_digest[SP_DIGEST_TEXT_LEN + 1];
    sp_claim *claims; /* owned: sp_settle_res_free */
    size_t nclaims;
} sp_settle_res;

void sp_settle_res_free(sp_settle_res *r);

/* finish_attempt's predicates and writes; then, when the run is not
 * quarantined, the result is the next event to apply and a decider is
 * given: the decision it answers, with commit_turn's predicates and writes
 * (the event is stored consumed); then the claims. A decision predicate
 * that fails fails the whole request (nothing written): finish_attempt is
 * the fallback. Failpoints store.settle-attempt.{before,after}-commit. */
sp_store_rc sp_store_settle_attempt(sp_store *s, const sp_settle_req *req, sp_settle_res *res,
                                    sp_error *err);

/* Reads. A missing item is SP_STORE_OK with *found = false. */
sp_store_rc sp_store_load_turn(sp_store *s, const sp_run_key *key, sp_turn *out, bool *found,
                               sp_error *err);
sp_store_rc sp_store_get_package(sp_store *s, const char *digest, char **bytes, size_t *len,
                                 bool *found, sp_error *err);
sp_store_rc sp_store_get_receipt(sp_store *s, const sp_run_key *key, const char *request_id,
                                 sp_receipt *out, bool *found, sp_error *err);
sp_store_rc sp_store_find_run(sp_store *s, const char *tenant, const char *start_key,
                              sp_run_key *out, bool *found, sp_error *err);
sp_store_rc sp_store_scan_ready(sp_store *s, const char *cursor, size_t limit, sp_key_page *out,
                                sp_error *err);
sp_store_rc sp_store_scan_due(sp_store *s, const char *cursor, size_t limit, sp_due_page *out,
                              sp_error *err);
/* The lease and deadline items of scan_due alone (same order and cursor):
 * what a sweep reads - never the outbox, whose rows it would lock for
 * nothing. */
sp_store_rc sp_store_scan_expiring(sp_store *s, const char *cursor, size_t limit,
                                   sp_due_page *out, sp_error *err);
/* The outbox items of scan_due alone (pending invocations due now in
 * non-quarantined runs, same order and cursor), of run `only` when given:
 * what dispatch reads, at most `limit` (its free slots) at a time. */
sp_store_rc sp_store_scan_outbox(sp_store *s, const sp_run_key *only, const char *cursor,
                                 size_t limit, sp_due_page *out, sp_error *err);
/* A held attempt (engine.md §9): running with a holder handle. */
typedef struct sp_held_item {
    sp_attempt_ref attempt;
    char *holder; /* canonical JSON, owned */
    uint32_t attempt_number;
    uint64_t lease_until_ms, deadline_ms;
    char node_id[SP_STORE_ID_MAX + 1];
    char action_id[SP_STORE_ID_MAX + 1];
    char package_digest[SP_DIGEST_TEXT_LEN + 1];
} sp_held_item;

typedef struct sp_held_page {
    sp_held_item *items;
    size_t n;
    char *next_cursor;
} sp_held_page;

void sp_held_page_free(sp_held_page *p);

/* Running attempts that have a holder, by attempt ID then key; cursor
 * `[attemptId, tenant, runId]`. */
sp_store_rc sp_store_scan_held(sp_store *s, const char *cursor, size_t limit, sp_held_page *out,
                               sp_error *err);

/* Running attempts without a holder whose claim recorded `host_id` as the owner's host
 * (engine.md §11: a sweep looks for dead owners on its own host), ascending
 * by attempt ID then key. Items are SP_DUE_LEASE with at_ms = leaseUntilMs,
 * whatever the time; cursor `[attemptId, tenant, runId]`. */
sp_store_rc sp_store_scan_running(sp_store *s, const char *host_id, const char *cursor,
                                  size_t limit, sp_due_page *out, sp_error *err);
sp_store_rc sp_store_get_run(sp_store *s, const sp_run_key *key, sp_run_view *out, bool *found,
                             sp_error *err);
sp_store_rc sp_store_list_runs(sp_store *s, const char *tenant, const char *cursor, size_t limit,
                               sp_run_list *out, sp_error *err);
sp_store_rc sp_store_list_events(sp_store *s, const sp_run_key *key, uint64_t after_sequence,
                                 size_t limit, sp_event_list *out, sp_error *err);
sp_store_rc sp_store_list_invocations(sp_store *s, const sp_run_key *key,
                                      sp_invocation_list *out, sp_error *err);
void sp_store_capabilities_get(sp_store *s, sp_store_capabilities *out);

/* ---- wake-ups (PostgreSQL LISTEN/NOTIFY) ---- */

typedef struct sp_store_listener sp_store_listener;

/* What a wake-up says was committed (bits). */
enum {
    SP_WAKE_EVENTS = 1,      /* an event: a run became ready */
    SP_WAKE_INVOCATIONS = 2, /* an invocation became pending */
    SP_WAKE_TIMERS = 4,      /* a timer was stored */
    SP_WAKE_ALL = 7,         /* after a (re)connection: anything may have happened */
};

typedef void (*sp_wake_fn)(void *ctx, unsigned what);

/* Call fn(ctx, what) - from a thread of the store's own, never while a
 * store call of the caller waits on it - whenever a process commits new
 * work to this store (`what`: SP_WAKE_* bits); also with SP_WAKE_ALL after
 * the listener (re)connects, for what it may have missed. NULL (and err
 * unset) when the adapter has no wake-ups (SQLite: poll). The listener
 * reconnects by itself; fn must be quick and thread-safe. */
sp_store_listener *sp_store_listen(sp_store *s, sp_wake_fn fn, void *ctx, sp_error *err);
void sp_store_listener_stop(sp_store_listener *l);

/* ---- durable timers (format 0.2, docs/format-0.2.md) ---- */

typedef struct sp_timer_item {
    sp_run_key key;
    char timer_id[SP_ID_LEN + 1]; /* "tmr_" + 32 hex */
    uint64_t due_at_ms;
} sp_timer_item;

typedef struct sp_timer_page {
    sp_timer_item *items;
    size_t n;
} sp_timer_page;

void sp_timer_page_free(sp_timer_page *p);

/* Stored timers due by the store's clock in runs not quarantined, earliest
 * first, at most `limit` (what a sweep fires). */
sp_store_rc sp_store_scan_timers(sp_store *s, size_t limit, sp_timer_page *out, sp_error *err);

/* The earliest due time of the run's stored timers (of every run's when
 * `key` is NULL); 0 when there is none. */
sp_store_rc sp_store_next_timer(sp_store *s, const sp_run_key *key, uint64_t *due_at_ms,
                                sp_error *err);

typedef struct sp_fire_timer_req {
    sp_run_key key;
    const char *request_id;
    const char *timer_id;
} sp_fire_timer_req;

/* Fire a stored, due timer: append `timer.fired` {timerId} (event ID
 * tmr:<timerId>) and delete the timer, atomically. stale/timer.not-found
 * when it is not stored (fired or cancelled), stale/timer.not-due before
 * its due time. */
sp_store_rc sp_store_fire_timer(sp_store *s, const sp_fire_timer_req *req,
                                sp_append_event_res *res, sp_error *err);

/* Content-addressed blobs (sealed runner modules and assets, runners.md §2):
 * digest = "sha256:" + hex SHA-256 of the raw bytes; put is idempotent. */
sp_store_rc sp_store_put_blob(sp_store *s, const char *digest, const void *bytes, size_t len,
                              sp_error *err);
sp_store_rc sp_store_get_blob(sp_store *s, const char *digest, void **bytes, size_t *len,
                              bool *found, sp_error *err);

/* A per-store secret shared by all workers of the store (created on first
 * use; 32 random bytes), for sealed handles (runners.md §5). */
sp_store_rc sp_store_secret(sp_store *s, unsigned char out[32], sp_error *err);

/* ---- step logs (authoring.md §5, docs/authoring.md "Step logs"; ops_logs.c) ----
 *
 * What an attempt kept of its stdout and stderr: the last bytes of each,
 * already redacted and made valid UTF-8 by its runner, and how many earlier
 * bytes were not kept. One row per attempt, written in the tick's batch just
 * before the attempt's result, read by `spore logs`. */

#define SP_STORE_LOG_MAX (64u * 1024) /* bytes of one stream: quota/log.too-large */
#define SP_STORE_LOG_PAGE_MAX 16      /* entries one list answers at most */

typedef struct sp_log_tail {
    const char *bytes; /* valid UTF-8 (conflict/log.invalid), NULL when len is 0 */
    size_t len;        /* at most SP_STORE_LOG_MAX */
    uint64_t dropped;  /* earlier bytes not kept (u63) */
} sp_log_tail;

/* Keep `out` and `err_tail` as the logs of the attempt `ref` names (key,
 * invocation and attempt IDs; owner and fence are not checked, so a result
 * that came after the lease keeps its logs too). The node and attempt
 * number are the store's own. Idempotent without a receipt: a later put of
 * the same attempt replaces the earlier one (a held attempt's log grows).
 * not-found/attempt.not-found, quota/log.too-large, conflict/log.invalid,
 * conflict/request.invalid. */
sp_store_rc sp_store_put_attempt_log(sp_store *s, const sp_attempt_ref *ref,
                                     const sp_log_tail *out, const sp_log_tail *err_tail,
                                     sp_error *err);

typedef struct sp_attempt_log {
    char attempt_id[SP_ID_LEN + 16];
    char invocation_id[SP_ID_LEN + 1];
    char node_id[SP_STORE_ID_MAX + 1];
    uint32_t attempt_number;
    char status[16];      /* the attempt's: running | finished | expired */
    char expire_reason[24]; /* expired: lease, deadline, ...; "" otherwise */
    char *result;         /* its activity.result (canonical JSON), NULL without one */
    uint64_t result_sequence; /* its result event's sequence, 0 while it has none */
    uint64_t started_at_ms, ended_at_ms, logged_at_ms; /* ended 0: not ended */
    char *out, *err;      /* owned, NUL-terminated */
    size_t out_len, err_len;
    uint64_t out_dropped, err_dropped;
} sp_attempt_log;

typedef struct sp_attempt_log_list {
    sp_attempt_log *items;
    size_t n;
    char *next_cursor; /* the position after the last item; NULL when n is 0 */
} sp_attempt_log_list;

void sp_attempt_log_list_free(sp_attempt_log_list *l);

typedef struct sp_attempt_log_query {
    const char *node_id;      /* NULL: every node */
    uint32_t attempt_number;  /* 0: every attempt number */
    bool ended_only;          /* only attempts whose result event is stored */
    const char *cursor;       /* a next_cursor, NULL: from the first */
    size_t limit;             /* 0 or more than SP_STORE_LOG_PAGE_MAX: the max */
} sp_attempt_log_query;

/* The run's attempt logs in the order their attempts ended (their result
 * events' sequence), then those of attempts without a result yet, by
 * attempt ID. A store whose schema predates the logs answers none.
 * conflict/cursor.invalid, conflict/request.invalid. */
sp_store_rc sp_store_list_attempt_logs(sp_store *s, const sp_run_key *key,
                                       const sp_attempt_log_query *q, sp_attempt_log_list *out,
                                       sp_error *err);

/* ---- group commit (step-path.md §2) ----
 *
 * The mutations this thread makes between sp_store_batch_begin and
 * sp_store_batch_commit share one write transaction: one durable commit for
 * all of them. Each request keeps its own semantics (receipt first,
 * predicates, writes, receipt): a request that fails leaves nothing and the
 * others stay - or, where the adapter answers writes later (PostgreSQL), a
 * failure it cannot undo alone fails the batch: that request answers its
 * own error, every later one and the commit unavailable/store.busy, and the
 * caller aborts and makes the batch again (the next batches then undo each
 * request alone). A request's answer is final only once the batch commits.
 * The batch's transaction (and SQLite's write lock) begins with its first
 * write: reads before it run on their own, reads after it see the batch's
 * writes. If the commit fails, none
 * of the batch's requests happened (or, with unknown-commit, all may have:
 * retry them identically). Other threads' store calls wait until the batch
 * ends. A batch holds the write lock (SQLite) from begin to commit: keep it
 * short. store.batch-open when this thread already holds one. */
sp_store_rc sp_store_batch_begin(sp_store *s, sp_error *err);
sp_store_rc sp_store_batch_commit(sp_store *s, sp_error *err);
/* The same, but the commit's flush may still run when it returns (SQLite:
 * a thread of the store's own syncs the WAL, and one sync answers every
 * commit made while the one before it ran). When it returns OK the batch
 * is committed: other connections see it and a crash of this process keeps
 * it; a power loss keeps it only once sp_store_wait_flushed(*ticket)
 * returned OK. So nothing of the batch may leave the process (a claim
 * started whose effect is not repeatable, an answer, an exit) before that.
 * *ticket is 0 when the commit flushed itself (no flusher thread; SQLite:
 * the sync after a new WAL header; PostgreSQL: a batch that wrote nothing). */
sp_store_rc sp_store_batch_commit_deferred(sp_store *s, uint64_t *ticket, sp_error *err);
/* The same, but where the store can (PostgreSQL, docs/postgres.md §3i)
 * the COMMIT is sent and its answer left unread: *later true, and the
 * batch is neither committed nor failed until sp_store_batch_answer
 * answers it, so the caller makes its next batch meanwhile. Until then
 * nothing of it may leave the process except what a deferred commit's
 * rules allow before the flush. The next batch (begun by this thread) is
 * queued behind it, runs on its predictions, and commits only if it did;
 * the store's after-commit failpoints of a sent batch fire with its
 * answer. At most two batches are sent and unanswered; *later false (and
 * *ticket as sp_store_batch_commit_deferred's) when the store answered at
 * once. */
sp_store_rc sp_store_batch_send(sp_store *s, uint64_t *ticket, bool *later, sp_error *err);
/* The answer of the oldest batch sent and unanswered (OK at once when
 * there is none): OK and its *ticket, or why it did not commit (then
 * every prediction is dropped, and a batch sent behind it fails too;
 * unknown-commit: sp_store_commit_outcome tells, then ask this again for
 * the one behind). Only the thread that sent it asks. */
sp_store_rc sp_store_batch_answer(sp_store *s, uint64_t *ticket, sp_error *err);
/* A batch of this handle was sent and is unanswered. */
bool sp_store_batch_sent(const sp_store *s);
/* Wait until every deferred commit up to `ticket` is on disk (0: at once).
 * A failed flush is corrupt/store.io, now and for every later deferred
 * commit (a batch): the process must start again from what is on disk. A
 * commit that flushes itself still commits (it is durable on its own). */
sp_store_rc sp_store_wait_flushed(sp_store *s, uint64_t ticket, sp_error *err);
/* Roll the whole batch back (nothing of it happened). No-op without one. */
void sp_store_batch_abort(sp_store *s);

/* What became of a commit whose answer was lost. */
typedef enum sp_commit_outcome {
    SP_COMMIT_UNKNOWABLE,      /* the store cannot tell (SQLite; or a later commit came since) */
    SP_COMMIT_HAPPENED,        /* it committed: everything of it is durable */
    SP_COMMIT_DID_NOT_HAPPEN,  /* nothing of it happened */
} sp_commit_outcome;

/* After a commit (a batch's or a request's) answered unknown-commit on this
 * store: whether it happened. PostgreSQL reconnects and reads the commit
 * mark its transaction carried (src/store/postgres/outcome.c); a transient
 * failure (the server still unreachable, or the lost transaction still
 * holding its locks) is answered unavailable: ask again. */
sp_store_rc sp_store_commit_outcome(sp_store *s, sp_commit_outcome *out, sp_error *err);

/* A request about to be made in the open batch (sp_store_batch_lock_ahead):
 * its request ID and the attempt it is about (its key names the run). */
typedef struct sp_lock_ahead {
    const sp_attempt_ref *attempt;
    const char *request_id;
} sp_lock_ahead;

/* At most this many requests are locked ahead in one call (more lock on
 * their own). */
#define SP_LOCK_AHEAD_MAX 64

/* Inside the batch this thread holds, between its requests: lock the runs
 * of requests about to be made and read what each one reads first (its
 * receipt, its attempt) in ONE exchange, where the driver sends reads
 * together (PostgreSQL); elsewhere, for fewer than two requests, and while
 * the batch answers each request alone, nothing happens. The next request
 * of the batch on such a run takes those reads instead of an exchange of
 * its own when it has the same request ID and attempt; any other request
 * on that run reads it again. The runs stay locked until the batch ends.
 * A failure fails the batch: it returns the failure, every later request
 * fails with unavailable/store.busy, and the batch does not commit. */
sp_store_rc sp_store_batch_lock_ahead(sp_store *s, const sp_lock_ahead *reqs, size_t n,
                                      sp_error *err);
/* The calling thread holds a batch of `s`. */
bool sp_store_in_batch(const sp_store *s);
/* ... and some request wrote in it (its commit will be a durable one). */
bool sp_store_batch_writes(const sp_store *s);

/* What this store handle has done since it was opened: durable commits
 * (write transactions committed, a batch counting once) and statements
 * sent (queries, BEGINs, COMMITs and savepoint statements, and what the
 * driver adds to a transaction - PostgreSQL's commit mark; rollbacks and
 * the flusher's own transactions not counted). For tests that count, and
 * for benchmarks. */
typedef struct sp_store_counters {
    uint64_t commits;
    uint64_t statements;
    uint64_t round_trips; /* PostgreSQL: requests sent and waited for; SQLite: 0 */
    uint64_t flushes;     /* syncs the store's flusher made for deferred commits */
    uint64_t unflushed;   /* deferred commits not on disk yet (now) */
    uint64_t predicted;   /* requests that ran on predicted first reads */
    uint64_t missed;      /* ... of them that the database did not hold (made again) */
    uint64_t sent;        /* batches sent with their answers read later (PostgreSQL) */
} sp_store_counters;

void sp_store_counters_get(sp_store *s, sp_store_counters *out);

/* The adapters this build contains ("sqlite", ...), NULL-terminated. */
const char *const *sp_store_adapters(void);

/* The location string the store was opened with, with any password removed. */
const char *sp_store_location(const sp_store *s);

#endif
