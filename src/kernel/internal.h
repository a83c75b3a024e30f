/*
 * internal.h - types shared by the kernel's own modules (events, state,
 * snapshot, transition). Not part of the kernel's interface: only
 * src/kernel/ includes it.
 */
#ifndef SPORE_KERNEL_INTERNAL_H
#define SPORE_KERNEL_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "kernel/kernel.h"
#include "kernel/workflow.h"

/* ---- failures ---- */

typedef struct kfail {
    sp_kernel_failure *out;
    bool oom;
} kfail;

int kfail_set(kfail *f, const char *kind, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int kfail_oom(kfail *f);

/* ---- JSON helpers ---- */

bool kjson_str_is(const json_t *s, const char *lit); /* length-aware */
bool kjson_members_exactly(const json_t *obj, const char *const *names);
bool kjson_members_within(const json_t *obj, const char *const *names);
bool kjson_u32(const json_t *v, uint32_t *out);
/* {code, message, nodeId?, details?} -> a new object with all four keys, or
 * NULL when malformed (*oom tells an allocation failure apart). */
json_t *kjson_error_info(const json_t *v, bool *oom);

/* ---- events (kernel.md §7.5) ---- */

typedef enum kev_kind {
    EV_RUN_STARTED,
    EV_ACTIVITY_RESULT,
    EV_SIGNAL,
    EV_RESOLVED,
    EV_TIMER_FIRED, /* 0.2 only */
    EV_RUN_CANCEL,  /* 0.2 only */
} kev_kind;
typedef enum kresult_status { RS_SUCCESS, RS_FAILURE, RS_UNKNOWN, RS_EXPIRED } kresult_status;
typedef enum kresolution { RES_COMPLETE, RES_RETRY, RES_FAIL } kresolution;

typedef struct kevent {
    kev_kind kind;
    const char *kind_name;
    json_t *payload; /* owned; every pointer below is borrowed from it */
    /* run.started */
    const json_t *tenant, *run_id, *input;
    /* activity.result and invocation.resolved */
    const json_t *invocation_id;
    uint32_t attempt;
    kresult_status status;
    const json_t *outcome; /* NULL when absent or null */
    const json_t *output;  /* JSON null when absent */
    json_t *error;         /* owned, normalized ErrorInfo, NULL when absent */
    bool retryable;
    kresolution resolution;
    /* signal.received */
    const json_t *name, *data;
    /* timer.fired (0.2) */
    const json_t *timer_id;
    /* run.cancel (0.2) */
    const json_t *reason, *requested_by;
} kevent;

/* Check 4: kind known under the semantics (event.unknown-kind), payload
 * canonical and of the kind's type (event.invalid). */
int kevent_decode(sp_semantics sem, const sp_kernel_event *e, kevent *ev, kfail *f);
void kevent_free(kevent *ev);

/* ---- state (kernel.md §7.4) ---- */

/* Check 5 for a present snapshot: version, typed decode, consistency.
 * Returns a new state object or NULL with `f` filled. Dispatches on the
 * workflow's semantics (0.2: state02.c). */
json_t *kstate_decode(const sp_workflow *wf, const char *bytes, size_t len, kfail *f);

/* The initial state of run.started (before entering the start node). */
json_t *kstate_initial(const json_t *tenant, const json_t *run_id, const json_t *input);

/* Typed checks of the members 0.1 and 0.2 share (state.c). */
bool ks_is_decimal(const json_t *v);
bool ks_node_records_ok(const json_t *nodes);
bool ks_visits_ok(const json_t *visits);
bool ks_position_ok(const json_t *p);
bool ks_signals_ok(const json_t *signals);
bool ks_error_info_exact(const json_t *e);
bool ks_result_ok(const json_t *r);

/* spore.state/0.2 (state02.c): consistency checks of a parsed document whose
 * format and semantics were read, and the initial state. */
int kstate02_check(const sp_workflow *wf, const json_t *s, kfail *f);
json_t *kstate02_initial(const json_t *tenant, const json_t *run_id, const json_t *input);

/* ---- snapshot bytes (snapshot.c) ---- */

typedef struct kmemo_member {
    char *key;
    size_t klen;
    json_t *value; /* the value encoded (a reference held) */
    char *bytes;   /* `"key":value`, canonical */
    size_t len;
} kmemo_member;

typedef struct kmemo_map {
    kmemo_member *m; /* in the map's walk order */
    size_t n, cap;
    size_t *order; /* indices into m, in canonical key order */
} kmemo_map;

/* The remembered members of a state's `nodes` and `visits` maps. */
typedef struct kmemo {
    kmemo_map nodes, visits;
    size_t last_len; /* bytes of the last snapshot encoded (a size hint) */
} kmemo;

/* Canonical bytes of `state`, identical to sp_json_encode_alloc(); with a
 * memo, unchanged members of nodes and visits are copied from it and the
 * memo is brought up to date. NULL with `err` on failure (the caller clears
 * the memo and uses the plain encoder for the exact error). */
char *ksnapshot_encode(const json_t *state, kmemo *memo, size_t *len, sp_error *err);
void kmemo_clear(kmemo *memo);

/* The decoded state a host keeps between transitions (kernel.h). `doc` is
 * exactly what kstate_decode() of the snapshot bytes (digest
 * `snapshot_digest`) against the package `package_digest` would return:
 * every check of check 5 holds for it. Only the transition that takes it
 * mutates `doc`, and nothing outside this struct holds a reference into it
 * (`memo` does: it remembers the encoding of the large maps' members for the
 * next transition). */
struct sp_kernel_state {
    json_t *doc; /* owned; NULL while a transition holds it */
    char package_digest[SP_DIGEST_TEXT_LEN + 1];
    char snapshot_digest[SP_DIGEST_TEXT_LEN + 1];
    kmemo memo;
};

/* ---- states as enums (the JSON carries their names) ---- */

typedef enum kinv_state { INV_SCHEDULED, INV_UNKNOWN, INV_STUCK, INV_INVALID } kinv_state;
typedef enum krun_status {
    RUN_RUNNING,
    RUN_WAITING,
    RUN_NEEDS_INTERVENTION,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_CANCELLED, /* 0.2 */
    RUN_INVALID,
} krun_status;

kinv_state k_inv_state(const json_t *inv); /* of an invocation record */
krun_status k_run_status(const json_t *status);
const char *k_run_status_name(krun_status s);
bool k_run_terminal(krun_status s);
/* The status a live 0.2 state's invocations, waits and timers give, by
 * precedence (workflows-0.2.md §7); RUN_INVALID when it waits for nothing. */
krun_status k02_derived_status(const json_t *state);

/* ---- one transition in progress (core.c: what both semantics share) ---- */

typedef struct kt {
    const sp_workflow *wf;
    const sp_kernel_request *req;
    const kevent *ev;
    kfail *f;
    json_t *state;
    kmemo *memo; /* of the kept state, NULL = encode the snapshot plainly */
    uint64_t now;
    uint32_t microsteps;
    uint64_t ops;
    bool oom;
    sp_kernel_command *cmds;
    size_t ncmds, cmds_cap;
    sp_kernel_diagnostic *diags;
    size_t ndiags, diags_cap;
    void *work; /* 0.2: the pending hops (run02.c), NULL outside a drive */
} kt;

/* state accessors; a NULL value or a failed set marks t->oom */
json_t *kt_st(kt *t, const char *member);
const char *kt_str(kt *t, const char *member);
void kt_set(kt *t, const char *member, json_t *value);
void kt_obj_set(kt *t, json_t *obj, const char *key, json_t *value);
uint32_t k_u32(const json_t *v);
int k_oom(kt *t);

int k_fail(kt *t, const char *kind, const char *code, const char *what);
int k_budget(kt *t, const char *code, const char *what);
int k_invariant(kt *t, const char *what);

/* Canonical bytes of an emitted value (ownership of `v` taken); nesting
 * over 32 is budget.value-depth. */
char *k_emit_bytes(kt *t, json_t *v, size_t *len);
int k_diagnose(kt *t, const char *code, const char *node_id, json_t *details);
/* A command; its ID is cmd_ + hash("command", [tenant, runId, activation,
 * ordinal]) where `ordinal` is the decimal attempt of schedule/retry, or a
 * fixed word for the 0.2 commands ("cancel", "timer.start", ...). */
int k_command(kt *t, const char *kind, const char *activation_id, const char *ordinal,
              json_t *payload);
int k_command_n(kt *t, const char *kind, const char *activation_id, uint32_t ordinal,
                json_t *payload);

int k_microstep(kt *t);
json_t *k_error_info(const char *code, const char *message, const char *node_id, json_t *details);
json_t *k_node_error(const sp_node *node); /* a fail node's error, nodeId = the node */
void k_record(kt *t, const sp_node *node, uint32_t visit, const json_t *outcome,
              const json_t *output);

/* Admission of one node entry (kernel.md §7.9 steps 1-3): one microstep,
 * then the visit and activation limits. Returns 0 (admitted: *visit and
 * `activation` "<node>/<visit>" set, counters bumped), 1 (a limit: *limit
 * is the terminal error, counters untouched) or -1 (a failure). */
int k_admit(kt *t, const sp_node *node, uint32_t *visit, char activation[160], json_t **limit);

/* Evaluate a mapping of `node` (item/index: the map roots, or NULL/-1).
 * 0 = *out set; 1 = a path did not resolve (*error is the terminal
 * mapping.missing-path error); -1 = a failure. */
int k_evaluate(kt *t, const sp_node *node, const json_t *mapping, const json_t *item,
               int64_t index, json_t **out, json_t **error);

/* Emit activity.schedule for `activation` of `node` (action `action`) with
 * `input`, and return the new invocation record in *inv (0.1 shape). */
int k_schedule(kt *t, const sp_node *node, const char *activation, const json_t *input,
               json_t **inv);

/* What a result or resolution does to a scheduled invocation (§7.8). */
typedef enum kverdict { KV_SUCCEED, KV_RETRY, KV_FAIL, KV_UNKNOWN } kverdict;
typedef struct kjudgement {
    kverdict verdict;
    json_t *outcome;    /* KV_SUCCEED (owned) */
    uint64_t delay;     /* KV_RETRY */
    json_t *error;      /* KV_FAIL (owned; nodeId not yet set) */
    const char *status; /* KV_UNKNOWN: "unknown" | "expired" */
} kjudgement;
int k_judge(kt *t, const sp_action *action, const kevent *ev, kjudgement *j);
void k_judgement_free(kjudgement *j);

/* Authorize the next attempt of `inv` (attempt+1, scheduled) after
 * `delay` ms: activity.retry then activity.retry-scheduled. */
int k_retry(kt *t, const sp_node *node, json_t *inv, uint64_t delay);
/* An unsafe invocation's unknown outcome: state unknown, diagnostic. */
int k_unknown(kt *t, const sp_node *node, json_t *inv, const kevent *ev, const char *status);

/* Take one signal at an await node: one microstep; the route target, or
 * NULL (unrouted: diagnosed, *rc 0; or a failure, *rc -1). */
const char *k_take_signal(kt *t, const sp_node *node, const json_t *event_id,
                          const json_t *outcome, int *rc);

/* Consume buffered signals at an await node (kernel.md §7.9): the earliest
 * with the node's name is taken, an unrouted one diagnosed and the next
 * tried. Returns the route target with the taken *outcome and *data (new
 * references; the caller records them), or NULL to wait (*rc -1: failure). */
const char *k_consume(kt *t, const sp_node *node, int *rc, json_t **outcome, json_t **data);

/* Dispatch of one event under each semantics (run01.c, run02.c). */
int k01_dispatch(kt *t);
int k02_dispatch(kt *t);
/* The 0.2 status of a non-terminal state, by precedence (§7). */
int k02_finish(kt *t);

#endif
