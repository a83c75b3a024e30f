/*
 * stateview.h - a run's snapshot as the engine reads it, for both state
 * formats (runspore.state/0.1 and spore.state/0.2; docs/format-0.2.md "What
 * the engine reads"): its status, every invocation in flight or needing a
 * person, every await-signal activation that waits, and every live timer.
 *
 * What it is for: the one place that knows the snapshots' member names, so
 * parking, admission and the status views never parse a snapshot
 * themselves and work unchanged on runs with several invocations.
 *
 * What it must never do: interpret a rule of the kernel (it reads what the
 * kernel wrote), or change anything.
 */
#ifndef SPORE_ENGINE_STATEVIEW_H
#define SPORE_ENGINE_STATEVIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef enum sv_invocation_state {
    SV_SCHEDULED, /* an attempt is authorized */
    SV_UNKNOWN,   /* an unsafe attempt's outcome is unknown: resolve */
    SV_STUCK,     /* failed without a route (0.2): resolve --retry, spore retry */
} sv_invocation_state;

typedef struct sv_invocation {
    const char *invocation_id, *activation_id, *node_id, *action_id;
    uint32_t attempt;
    sv_invocation_state state;
    const json_t *error; /* SV_STUCK: the kept error; else NULL */
} sv_invocation;

typedef struct sv_wait {
    const char *activation_id, *node_id;
    const char *signal;   /* NULL in 0.1 snapshots (the node names it) */
    const char *timer_id; /* its timeout's timer, or NULL */
} sv_wait;

typedef struct sv_timer {
    const char *timer_id, *activation_id;
    uint64_t due_at_ms;
} sv_timer;

/* Where a strand of the run stands: the run's own (`branch` NULL) or a
 * branch of a parallel (0.2). */
typedef struct sv_position {
    const char *node_id, *activation_id;
    const char *branch;   /* the branch entry's key "<parallelActivation>:<name>", or NULL */
    const char *parallel; /* the branch's parallel activation, or NULL */
} sv_position;

typedef struct sv_state {
    json_t *doc; /* the parsed snapshot; every pointer below borrows from it */
    bool v02;    /* spore.state/0.2 */
    const char *status;
    sv_invocation *invocations;
    size_t ninvocations;
    sv_wait *waits;
    size_t nwaits;
    sv_timer *timers;
    size_t ntimers;
    const json_t *result;   /* null, {output} or {error} */
    const json_t *branches; /* 0.2: as the kernel wrote them (docs/kernel.md), else NULL */
    const json_t *maps;     /* 0.2, else NULL */
    sv_position *positions; /* the run's position first (when it has one), then every
                               branch with a position, in key order */
    size_t npositions;
    const json_t *nodes;  /* node -> {visit, outcome, output}: the latest results */
    const json_t *visits; /* node -> admitted entries */
} sv_state;

/* Parse snapshot bytes; store.corrupt when they are not a state this spore
 * reads. */
int sv_parse(const char *snapshot, size_t len, sv_state *out, sp_error *err);
void sv_free(sv_state *s);

/* The invocation with this ID, or NULL. */
const sv_invocation *sv_invocation_of(const sv_state *s, const char *invocation_id);

/* The earliest live timer, or NULL. */
const sv_timer *sv_next_timer(const sv_state *s);

bool sv_status_is(const sv_state *s, const char *status);

const char *sv_invocation_state_name(sv_invocation_state st);

#endif
