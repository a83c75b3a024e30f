/*
 * run02.h - the modules of semantics 0.2 (workflows-0.2.md), private to the
 * kernel: run02.c (events, enter, route, strands, stuck steps, loop limits,
 * terminal states), parallel.c (branches and joins), map.c (map items) and
 * timers.c (sleep, await-signal timeouts). docs/kernel.md §8 documents the
 * state `spore.state/0.2` they share.
 *
 * A *strand* is one line of work with at most one position: the run's own
 * ("" - the state's `position`) or a branch of a parallel activation
 * (`<parallelActivation>:<branch>` - `branches[<id>].position`).
 *
 * A *hop* is "the result of `node` (visit, outcome, output) routes next in
 * strand `sid`": procedures return one instead of entering the next node
 * themselves, and r02_drive() follows hops in a loop, so a long chain of
 * immediate routes never deepens the C stack.
 */
#ifndef SPORE_KERNEL_RUN02_H
#define SPORE_KERNEL_RUN02_H

#include "kernel/internal.h"

#define SID_MAX 160

typedef struct khop {
    bool route;        /* false: nothing to follow */
    char sid[SID_MAX]; /* the strand */
    const char *enter; /* non-NULL: enter this node (a branch start) instead */
    const sp_node *node;
    uint32_t visit;
    json_t *outcome, *output; /* owned */
} khop;

/* Fill a hop (outcome/output ownership taken; NULL marks t->oom). */
void khop_set(kt *t, khop *h, const char *sid, const sp_node *node, uint32_t visit,
              json_t *outcome, json_t *output);
void khop_clear(khop *h);

/* ---- strands (run02.c) ---- */

json_t *s02_pos(kt *t, const char *sid); /* the position object, or NULL */
void s02_set_pos(kt *t, const char *sid, const sp_node *node, const char *activation,
                 uint32_t visit);
void s02_clear_pos(kt *t, const char *sid);
/* The strand positioned at `activation`; false when none. */
bool s02_find(kt *t, const char *activation, char sid[SID_MAX]);
const sp_node *s02_pos_node(kt *t, const json_t *pos);
uint32_t s02_pos_visit(const json_t *pos);
const char *s02_pos_activation(const json_t *pos);

/* ---- run02.c ---- */

/* Enter `node_id` in strand `sid`; *next is the hop to follow, if any. */
int r02_enter(kt *t, const char *sid, const char *node_id, khop *next);
/* Follow hops until none is left (takes the hop's references). */
int r02_drive(kt *t, khop *hop);
/* Queue a branch start: enter `node_id` in `sid` once the hops queued
 * after it are done (p02_enter queues them in reverse name order). */
int r02_push_enter(kt *t, const char *sid, const char *node_id);
/* End the run: everything in flight cancelled, status and result set. */
int r02_terminate(kt *t, const char *status, json_t *result);
int r02_terminate_failed(kt *t, json_t *error);
/* A strand failed with `error` (taken): the run ends (root) or its
 * parallel's join is entered failed (*next). */
int r02_strand_failed(kt *t, const char *sid, json_t *error, khop *next);
/* A wait ends (taken, timed out, cancelled): gone from waits and waitOrder. */
void r02_wait_drop(kt *t, const char *activation);
/* An invocation by ID, or NULL. */
json_t *r02_invocation(kt *t, const char *invocation_id);
void r02_invocation_drop(kt *t, const char *invocation_id);
/* activity.cancel for one invocation, and its removal. */
int r02_cancel_invocation(kt *t, const char *invocation_id);
/* The 0.2 stuck rule: state stuck, the error kept, invocation.stuck. */
int r02_stuck(kt *t, const sp_node *node, json_t *inv, json_t *error);

/* ---- parallel.c ---- */

int p02_enter(kt *t, const char *sid, const sp_node *node, const char *activation,
              uint32_t visit, khop *next);
/* Is `target` the join of strand `sid`'s parallel? */
bool p02_is_own_join(kt *t, const char *sid, const char *target);
/* The branch `sid` arrives with the result of `from`; *next = the join's
 * hop when it was the last. */
int p02_arrive(kt *t, const char *sid, const sp_node *from, const json_t *outcome,
               const json_t *output, khop *next);
/* The branch `sid` failed: the others are cancelled, the join entered
 * failed. *next = its failed hop, or *propagate = the join does not route
 * failed (the parent strand *parent fails with the error). */
int p02_branch_failed(kt *t, const char *sid, json_t *error, khop *next, json_t **propagate,
                      char parent[SID_MAX]);
/* May the queued start of branch `sid` still run (its parallel alive, the
 * branch not started)? */
bool p02_branch_waiting(kt *t, const char *sid);
/* Cancel everything in flight in strand `sid` and below it. */
int p02_cancel_strand(kt *t, const char *sid);

/* ---- map.c ---- */

int m02_enter(kt *t, const char *sid, const sp_node *node, const char *activation,
              uint32_t visit, khop *next);
/* Is the invocation's activation a map item ("<map>/<visit>#<index>")? */
bool m02_is_item(const char *activation);
int m02_item_succeeded(kt *t, json_t *inv, const json_t *outcome, const json_t *output,
                       khop *next);
/* A failed item: the map's failed route (others cancelled), or stuck;
 * `terminal` (an operator's fail without a route) ends the run instead. */
int m02_item_failed(kt *t, json_t *inv, json_t *error, bool terminal, khop *next);
int m02_cancel(kt *t, const char *activation);

/* ---- timers.c ---- */

void t02_timer_id(kt *t, const char *activation, char out[SP_ID_LEN + 1]);
int t02_start(kt *t, const char *activation, uint64_t due_at_ms);
/* timer.cancel for a live timer and its removal (none: nothing). */
int t02_cancel(kt *t, const char *timer_id);
int t02_enter_sleep(kt *t, const char *sid, const sp_node *node, const char *activation,
                    uint32_t visit);
int t02_on_fired(kt *t, khop *next);

#endif
