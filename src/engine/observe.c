/*
 * observe.c - the engine's side of its observer (observer.h, docs/tracing.md):
 * the notes it copies out of committed work, kept while a store batch is
 * open and handed over once it committed (dropped when it did not), and the
 * trace identities every worker derives alike.
 *
 * What it must never do: run when no observer is set (every caller checks
 * e->cfg.observer first: one NULL check), fail or retry anything of the
 * step it observes, hand over a note of a batch that did not commit, or keep
 * more than OBSERVE_PENDING_MAX notes (the rest are counted as lost).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "digest/digest.h"
#include "engine/internal.h"
#include "engine/ledger.h"
#include "engine/observer.h"

/* Notes one batch may carry to its commit; more are counted as lost. */
#define OBSERVE_PENDING_MAX 4096u

typedef enum note_kind { NOTE_ACTIVATION, NOTE_ATTEMPT, NOTE_RUN } note_kind;

struct engine_note {
    note_kind kind;
    union {
        sp_obs_activation activation;
        sp_obs_attempt attempt;
        sp_obs_run run;
    } u;
};

/* ---- identities ---- */

static void hash_hex(const char *tag, const sp_part *parts, size_t n, size_t bytes, char *out)
{
    unsigned char raw[32];
    sp_hash_raw(tag, parts, n, raw);
    bool zero = true;
    for (size_t i = 0; i < bytes; i++)
        zero = zero && raw[i] == 0;
    if (zero) /* W3C: an all-zero ID is invalid (2^-64 at worst) */
        raw[bytes - 1] = 1;
    sp_hex(raw, bytes, out);
}

void sp_obs_trace_id(const char *tenant, const char *run_id, char out[SP_TRACE_ID_HEX + 1])
{
    sp_part parts[] = {{tenant, strlen(tenant)}, {run_id, strlen(run_id)}};
    hash_hex("trace", parts, 2, SP_TRACE_ID_HEX / 2, out);
}

void sp_obs_run_span(const char *tenant, const char *run_id, char out[SP_SPAN_ID_HEX + 1])
{
    sp_part parts[] = {{tenant, strlen(tenant)}, {run_id, strlen(run_id)}};
    hash_hex("span.run", parts, 2, SP_SPAN_ID_HEX / 2, out);
}

void sp_obs_turn_span(const char *tenant, const char *run_id, uint64_t sequence,
                      char out[SP_SPAN_ID_HEX + 1])
{
    char seq[24];
    snprintf(seq, sizeof seq, "%" PRIu64, sequence);
    sp_part parts[] = {{tenant, strlen(tenant)}, {run_id, strlen(run_id)}, {seq, strlen(seq)}};
    hash_hex("span.turn", parts, 3, SP_SPAN_ID_HEX / 2, out);
}

void sp_obs_attempt_span(const char *attempt_id, char out[SP_SPAN_ID_HEX + 1])
{
    sp_part part = {attempt_id, strlen(attempt_id)};
    hash_hex("span", &part, 1, SP_SPAN_ID_HEX / 2, out);
}

void sp_obs_traceparent(const char *tenant, const char *run_id, const char *attempt_id,
                        char *out, size_t n)
{
    char trace[SP_TRACE_ID_HEX + 1], span[SP_SPAN_ID_HEX + 1];
    sp_obs_trace_id(tenant, run_id, trace);
    sp_obs_attempt_span(attempt_id, span);
    snprintf(out, n, "00-%s-%s-01", trace, span);
}

/* ---- notes ---- */

uint64_t engine_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

static void deliver(sp_engine *e, engine_note *n)
{
    const sp_engine_observer *o = e->cfg.observer;
    switch (n->kind) {
    case NOTE_ACTIVATION:
        if (o->activation)
            o->activation(o->ctx, &n->u.activation);
        break;
    case NOTE_ATTEMPT:
        if (o->attempt)
            o->attempt(o->ctx, &n->u.attempt);
        break;
    case NOTE_RUN:
        if (o->run_ended)
            o->run_ended(o->ctx, &n->u.run);
        break;
    }
}

/* The run's start, read once from its record (outside any batch): the
 * run span begins there whichever worker saw it begin. */
static void run_started_at(sp_engine *e, sp_obs_run *r)
{
    sp_run_key key;
    copy(key.tenant, sizeof key.tenant, r->tenant);
    copy(key.run_id, sizeof key.run_id, r->run_id);
    sp_run_view v;
    bool found = false;
    sp_error err = {0};
    if (ledger_get_run(e, &key, &v, &found, &err) == SP_STORE_OK && found) {
        r->created_at_ms = v.created_at_ms;
        sp_run_view_free(&v);
    }
    sp_error_clear(&err);
}

static void hand_over(sp_engine *e, engine_note *n)
{
    if (n->kind == NOTE_RUN && !n->u.run.created_at_ms)
        run_started_at(e, &n->u.run);
    deliver(e, n);
}

static void lost(sp_engine *e, uint32_t n)
{
    const sp_engine_observer *o = e->cfg.observer;
    if (n && o->lost)
        o->lost(o->ctx, n);
}

/* A new note: handed over at once outside a batch, else kept for its
 * commit. NULL (counted as lost) when it cannot be kept. */
static engine_note *note_new(sp_engine *e, note_kind kind)
{
    if (e->nnotes == e->notes_cap) {
        size_t cap = e->notes_cap ? e->notes_cap * 2 : 16;
        engine_note *grown = cap <= OBSERVE_PENDING_MAX
                                 ? realloc(e->notes, cap * sizeof *grown)
                                 : NULL;
        if (!grown) {
            e->notes_lost++;
            return NULL;
        }
        e->notes = grown;
        e->notes_cap = cap;
    }
    engine_note *n = &e->notes[e->nnotes++];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    return n;
}

/* The note is complete: outside a batch it goes now. */
static void note_done(sp_engine *e)
{
    if (ledger_in_batch(e))
        return;
    engine_observe_after(e, true);
}

void engine_observe_after(sp_engine *e, bool committed)
{
    if (!e->cfg.observer)
        return;
    for (size_t i = 0; committed && i < e->nnotes; i++)
        hand_over(e, &e->notes[i]);
    lost(e, e->notes_lost);
    e->nnotes = 0;
    e->notes_lost = 0;
}

void engine_observe_free(sp_engine *e)
{
    free(e->notes);
    e->notes = NULL;
    e->nnotes = e->notes_cap = 0;
}

/* ---- what is noted ---- */

static bool terminal(const char *status)
{
    return strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
           strcmp(status, "cancelled") == 0;
}

static void note_scheduled(sp_obs_activation *a, const engine_decided *dc)
{
    for (size_t i = 0; i < dc->d.ncommands && a->nscheduled < SP_OBS_SCHEDULED_MAX; i++) {
        char id[SP_ID_LEN + 1], action[SP_STORE_ID_MAX + 1];
        if (engine_command_target(&dc->d.commands[i], id, action, sizeof action))
            copy(a->scheduled[a->nscheduled++], sizeof a->scheduled[0], id);
    }
}

/* In engine_decide: what the turn consumed, kept with the decision until
 * it commits (engine_observe_turn). Out of memory: the turn goes unseen. */
void engine_observe_decided(sp_engine *e, const sp_turn *t, engine_decided *dc)
{
    (void)e;
    sp_obs_activation *a = calloc(1, sizeof *a);
    if (!(dc->seen = a))
        return;
    copy(a->tenant, sizeof a->tenant, t->key.tenant);
    copy(a->run_id, sizeof a->run_id, t->key.run_id);
    a->sequence = t->event.sequence;
    copy(a->event_kind, sizeof a->event_kind, t->event.kind);
    a->accepted_at_ms = t->event.accepted_at_ms;
    if (t->event.body && t->event.body_len <= SP_OBS_BODY_MAX)
        memcpy(a->body, t->event.body, t->event.body_len);
}

/* The run ended with this turn (the note is built before note_new, which
 * may move the pending notes `a` lives in). */
static void note_run_end(sp_engine *e, const sp_obs_activation *a)
{
    sp_obs_run run = {.ended_ns = a->committed_ns};
    copy(run.tenant, sizeof run.tenant, a->tenant);
    copy(run.run_id, sizeof run.run_id, a->run_id);
    copy(run.status, sizeof run.status, a->status);
    engine_note *r = note_new(e, NOTE_RUN);
    if (r)
        r->u.run = run;
}

void engine_observe_turn(sp_engine *e, const engine_decided *dc)
{
    engine_note *n = note_new(e, NOTE_ACTIVATION);
    if (!n)
        return;
    sp_obs_activation *a = &n->u.activation;
    *a = *dc->seen;
    a->committed_ns = engine_wall_ns();
    copy(a->status, sizeof a->status, dc->d.status);
    note_scheduled(a, dc);
    if (terminal(a->status))
        note_run_end(e, a);
    note_done(e);
}

static const char *effect_name(sp_effect effect)
{
    switch (effect) {
    case SP_EFFECT_PURE:
        return "pure";
    case SP_EFFECT_READ_ONLY:
        return "read-only";
    case SP_EFFECT_IDEMPOTENT:
        return "idempotent";
    case SP_EFFECT_UNSAFE:
        return "unsafe";
    }
    return "";
}

static void note_ref(sp_obs_attempt *n, const sp_attempt_ref *ref)
{
    copy(n->tenant, sizeof n->tenant, ref->key.tenant);
    copy(n->run_id, sizeof n->run_id, ref->key.run_id);
    copy(n->invocation_id, sizeof n->invocation_id, ref->invocation_id);
    copy(n->attempt_id, sizeof n->attempt_id, ref->attempt_id);
}

/* What the runner reported: the outcome (or the result kind) and the code. */
static void note_output(sp_obs_attempt *n, const sp_activity_output *out)
{
    static const char *const kinds[] = {"success", "failure", "unknown", "held"};
    if (out->kind == SP_OUTPUT_SUCCESS)
        copy(n->outcome, sizeof n->outcome, out->outcome ? out->outcome : "ok");
    else
        copy(n->outcome, sizeof n->outcome,
             (size_t)out->kind < sizeof kinds / sizeof *kinds ? kinds[out->kind] : "");
    copy(n->error_code, sizeof n->error_code,
         json_string_value(json_object_get(out->error, "code")));
}

void engine_observe_attempt(sp_engine *e, const inflight *a)
{
    engine_note *note = note_new(e, NOTE_ATTEMPT);
    if (!note)
        return;
    sp_obs_attempt *n = &note->u.attempt;
    const sp_claim *c = &a->claim;
    note_ref(n, &c->attempt);
    copy(n->node_id, sizeof n->node_id, c->node_id);
    copy(n->action_id, sizeof n->action_id, c->action_id);
    if (a->ea) {
        copy(n->kind, sizeof n->kind, a->ea->runner ? a->ea->runner->kind : "");
        copy(n->effect, sizeof n->effect, effect_name(a->ea->action->effect));
    }
    n->attempt = c->attempt_number;
    note_output(n, &a->out);
    n->end = a->lost ? SP_OBS_LOST : a->out.kind == SP_OUTPUT_HELD ? SP_OBS_HELD : SP_OBS_SETTLED;
    if (a->lost)
        copy(n->outcome, sizeof n->outcome, a->cancelled ? "cancelled" : "lease-lost");
    n->start_ns = a->started_ns;
    n->end_ns = a->ended_ns ? a->ended_ns : engine_wall_ns();
    if (!n->start_ns)
        n->start_ns = n->end_ns;
    note_done(e);
}

/* Expiry happens outside any batch (the sweep, the held tick and its hook
 * threads): the note is handed over at once, from the calling thread. */
void engine_observe_expired(sp_engine *e, const sp_attempt_ref *ref, sp_expire_reason reason)
{
    engine_note note = {.kind = NOTE_ATTEMPT};
    sp_obs_attempt *n = &note.u.attempt;
    note_ref(n, ref);
    n->end = SP_OBS_EXPIRED;
    copy(n->outcome, sizeof n->outcome, "expired");
    copy(n->error_code, sizeof n->error_code, sp_expire_reason_name(reason));
    n->start_ns = n->end_ns = engine_wall_ns();
    deliver(e, &note);
}
