/*
 * ledger.h - the engine's bottom layer: every store mutation the engine
 * makes, one named function each, with its request ID and its retry.
 *
 * What it is for: no other engine file calls the store (the build's
 * layering test checks it). The request IDs are the idempotency contract (store.md §2:
 * the same request ID with the same body is a duplicate, never a second
 * effect), so their formats live in one table (ledger.c) where they can be
 * reviewed together; every mutation is retried the same way (ENGINE_RETRY:
 * the identical request while the store answers a transient kind; in the
 * tick's batch not at all, the pass is abandoned instead).
 *
 * What it must never do: decide anything (callers interpret the answers),
 * build a request ID outside its table, or retry with a different request.
 */
#ifndef SPORE_ENGINE_LEDGER_H
#define SPORE_ENGINE_LEDGER_H

#include "store/store.h"

struct sp_engine;

/* A content-addressed blob (a sealed runner's bytes): no request ID, put
 * is idempotent by its digest. */
sp_store_rc ledger_put_blob(struct sp_engine *e, const char *digest, const void *bytes,
                            size_t len, sp_error *err);
/* Create the run of a start key: request start/<startKey> (a repeated start
 * of the same key is a duplicate that names the same run). */
sp_store_rc ledger_create_run(struct sp_engine *e, sp_create_run_req *req, sp_create_run_res *res,
                              sp_error *err);
/* The request ID of a signal with message ID m: signal/<m> (the admission
 * checks look it up before the signal is appended). */
void ledger_signal_id(const char *message_id, char out[SP_STORE_REQUEST_ID_MAX]);
/* Append an event under req->request_id: a signal's (ledger_signal_id) or
 * the one a resolve was given (--id). */
sp_store_rc ledger_append(struct sp_engine *e, sp_append_event_req *req, sp_append_event_res *res,
                          sp_error *err);
/* Fire a due timer (format 0.2): request timer/<timerId>, so two workers
 * that fire it at once make one firing. */
sp_store_rc ledger_fire_timer(struct sp_engine *e, const sp_timer_item *t,
                              sp_append_event_res *res, sp_error *err);
sp_store_rc ledger_scan_timers(struct sp_engine *e, size_t limit, sp_timer_page *out,
                               sp_error *err);
/* The earliest due time of every stored timer (0: none). */
sp_store_rc ledger_next_timer(struct sp_engine *e, uint64_t *due_at_ms, sp_error *err);
/* Wake-ups from the store (PostgreSQL LISTEN/NOTIFY): NULL when it has none. */
sp_store_listener *ledger_listen(struct sp_engine *e, sp_wake_fn fn, void *ctx);
/* Stop the engine's listener (NULL is fine) and forget it. */
void ledger_listen_stop(struct sp_engine *e);
/* Lift a quarantine: request release/<revision>/<quarantineAtMs>. */
sp_store_rc ledger_release(struct sp_engine *e, const sp_run_key *key, uint64_t revision,
                           uint64_t quarantine_at_ms, sp_flag_res *res, sp_error *err);

/* Commit the kernel's decision on the event of a turn: request
 * commit/<revision+1>/<eventId> (two coordinators deciding the same turn
 * send the same request: the second is a duplicate). */
sp_store_rc ledger_commit_turn(struct sp_engine *e, sp_commit_turn_req *req,
                               sp_commit_turn_res *res, sp_error *err);
/* Quarantine a run at revision: request quarantine/<runId>/<nonce>/<n>. */
sp_store_rc ledger_quarantine(struct sp_engine *e, sp_quarantine_req *req, sp_flag_res *res,
                              sp_error *err);

/* A worker's claim: request claim/<invocationId>/<nonce>/<n>. */
sp_store_rc ledger_claim(struct sp_engine *e, sp_claim_req *req, sp_claim *res, sp_error *err);
/* An actor's claim of an external step (owner ext-<random>): request
 * claim/<invocationId>/<owner>. */
sp_store_rc ledger_claim_actor(struct sp_engine *e, sp_claim_req *req, sp_claim *res,
                               sp_error *err);
/* Renew a lease: heartbeat/<attemptId>/<nonce>/<n> (a worker) or
 * renew/<attemptId>/<nonce>/<n> (an actor: renew = true). */
sp_store_rc ledger_heartbeat(struct sp_engine *e, const sp_attempt_ref *ref, uint64_t extend_ms,
                             bool renew, sp_heartbeat_res *res, sp_error *err);
/* Record an async start's handle: request hold/<attemptId>. */
sp_store_rc ledger_hold(struct sp_engine *e, sp_hold_req *req, sp_heartbeat_res *res,
                        sp_error *err);
/* Finish an attempt with a result body: request finish/<attemptId>; when
 * its lease is gone (stale) the body is kept as late evidence of late_kind. */
sp_store_rc ledger_finish_or_keep(struct sp_engine *e, const sp_attempt_ref *ref, const char *body,
                                  size_t len, const char *late_kind, sp_error *err);
/* settle/<attemptId>: the result, the decision `decider` makes on it and the
 * claims it asks for, in one request (store.h settle_attempt). */
sp_store_rc ledger_settle(struct sp_engine *e, const sp_attempt_ref *ref, const char *body, size_t len,
                          const sp_decider *decider, sp_settle_res *res, sp_error *err);
/* In the tick's batch, before the settles of these `n` attempts: their
 * runs locked and their first reads made in one exchange where the store
 * can (sp_store_batch_lock_ahead); a failure fails the batch. */
void ledger_lock_ahead_settles(struct sp_engine *e, const sp_attempt_ref *const *refs, size_t n);
/* Expire an attempt: request expire/<attemptId>. */
sp_store_rc ledger_expire(struct sp_engine *e, const sp_attempt_ref *ref, sp_expire_reason reason,
                          sp_finish_res *res, sp_error *err);

/* Evidence beside an attempt, best effort (a lost one changes nothing):
 * late/<attemptId>/<kind>/<nonce> (what came after the lease), agent
 * events agent-event/<attemptId>/<n>, and a component runner's audit rows
 * audit/<attemptId>/<kind>/<random>. */
void ledger_keep_late(struct sp_engine *e, const sp_attempt_ref *ref, const char *kind,
                      const char *body, size_t len);
void ledger_agent_event(struct sp_engine *e, const sp_attempt_ref *ref, uint32_t n,
                        const char *body, size_t len);
void ledger_audit(struct sp_engine *e, const sp_attempt_ref *ref, const char *kind,
                  const char *body, size_t len);

/* What an attempt kept of its stdout and stderr (a runner's logs), beside
 * its result, best effort: no request ID (put_attempt_log is idempotent by
 * the attempt). In the tick's batch it rides on the batch's commit and is
 * not retried (the batch's own requests notice a failing store); outside
 * one it is retried like the evidence above. A lost log changes nothing. */
struct sp_attempt_logs;
void ledger_put_log(struct sp_engine *e, const sp_attempt_ref *ref,
                    const struct sp_attempt_logs *logs);

/* ---- the tick's batch (store.h: one transaction, one durable commit) ---- */
sp_store_rc ledger_batch_begin(struct sp_engine *e, sp_error *err);
/* The batch's commit, its flush left to the store's own thread where it has
 * one (sp_store_batch_commit_deferred): committed when it returns, on disk
 * once ledger_wait_flushed returned. A COMMIT whose answer was lost is
 * read back (sp_store_commit_outcome, retried while the store fails): OK
 * when it happened, unavailable when it did not, unknown-commit only where
 * the store cannot tell. */
sp_store_rc ledger_batch_commit(struct sp_engine *e, sp_error *err);
/* The same, but the COMMIT's answer may be left for later
 * (sp_store_batch_send): *later, and then ledger_batch_answer tells, in
 * the order sent, whether it committed (a lost answer read back there). */
sp_store_rc ledger_batch_send(struct sp_engine *e, bool *later, sp_error *err);
sp_store_rc ledger_batch_answer(struct sp_engine *e, sp_error *err);
/* Wait until every batch this engine committed is on disk; a failed flush
 * (corrupt/store.io) is final. */
sp_store_rc ledger_wait_flushed(struct sp_engine *e, sp_error *err);
/* A committed batch may not be on disk yet. */
bool ledger_unflushed(const struct sp_engine *e);
void ledger_batch_abort(struct sp_engine *e);
bool ledger_in_batch(struct sp_engine *e);
bool ledger_batch_writes(struct sp_engine *e);
/* The store's answer: the batch ran on predicted first reads the database
 * did not hold; nothing of it applied, and it is made again at once. */
bool ledger_prediction_missed(const sp_error *err);

/* ---- about a store (also before an engine exists) ---- */
const char *ledger_location(const sp_store *s);
/* "sqlite" | "postgres" */
const char *ledger_adapter(const sp_store *s);
/* The store's writers commit one after another (sp_store_capabilities). */
bool ledger_one_writer(const sp_store *s);

/* ---- reads: the store's, unchanged, through the engine (the caller
 * decides whether to retry: ENGINE_RETRY_READ) ---- */
sp_store_rc ledger_get_run(struct sp_engine *e, const sp_run_key *key, sp_run_view *out, bool *found, sp_error *err);
sp_store_rc ledger_list_invocations(struct sp_engine *e, const sp_run_key *key, sp_invocation_list *out, sp_error *err);
sp_store_rc ledger_list_events(struct sp_engine *e, const sp_run_key *key, uint64_t after_sequence, size_t limit, sp_event_list *out, sp_error *err);
sp_store_rc ledger_get_receipt(struct sp_engine *e, const sp_run_key *key, const char *request_id, sp_receipt *out, bool *found, sp_error *err);
sp_store_rc ledger_get_blob(struct sp_engine *e, const char *digest, void **bytes, size_t *len, bool *found, sp_error *err);
sp_store_rc ledger_secret(struct sp_engine *e, unsigned char out[32], sp_error *err);
sp_store_rc ledger_load_turn(struct sp_engine *e, const sp_run_key *key, sp_turn *out, bool *found, sp_error *err);
sp_store_rc ledger_scan_ready(struct sp_engine *e, const char *cursor, size_t limit, sp_key_page *out, sp_error *err);
sp_store_rc ledger_scan_outbox(struct sp_engine *e, const sp_run_key *only, const char *cursor, size_t limit, sp_due_page *out, sp_error *err);
sp_store_rc ledger_scan_expiring(struct sp_engine *e, const char *cursor, size_t limit, sp_due_page *out, sp_error *err);
sp_store_rc ledger_scan_running(struct sp_engine *e, const char *host_id, const char *cursor, size_t limit, sp_due_page *out, sp_error *err);
sp_store_rc ledger_scan_held(struct sp_engine *e, const char *cursor, size_t limit, sp_held_page *out, sp_error *err);
sp_store_rc ledger_get_package(struct sp_engine *e, const char *digest, char **bytes, size_t *len, bool *found, sp_error *err);
sp_store_rc ledger_find_run(struct sp_engine *e, const char *tenant, const char *start_key, sp_run_key *out, bool *found, sp_error *err);

#endif
