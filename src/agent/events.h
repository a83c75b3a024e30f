/*
 * events.h - what is kept of a step's events (agent-step.md §3): the first
 * 25 and the last 25 events of an attempt, each text field at most 256
 * bytes, redacted, for `spore status` and `spore events`.
 *
 * What it is for: the reader hands every valid event here. The first 25 are
 * rendered at once; later ones are kept as raw lines in a ring of 25 and
 * rendered when the attempt ends (flush), so only the last 25 survive. A
 * rendered event is canonical JSON
 *   {"nodeId", "attempt", "stepId", "seq", "ts", "kind", "data"}
 * whose data has the kind's members with every string redacted (exact
 * secrets and pattern rules) and then cut to 256 bytes at a character
 * boundary; tool inputs and outputs become compact JSON text treated the
 * same way; token counts stay integers; cost_usd becomes its number text.
 * Flush ends with a summary {"nodeId", "attempt", "stepId", "events": N,
 * "kept": K}.
 *
 * What it must never do: render text that was not redacted first, cut
 * before redacting, hold more than 25 raw lines, or decide an outcome.
 */
#ifndef SPORE_AGENT_EVENTS_H
#define SPORE_AGENT_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/jsontape.h"
#include "agent/redact.h"

#define SP_AGENT_EVENTS_HEAD 25
#define SP_AGENT_EVENTS_TAIL 25
#define SP_AGENT_EVENT_TEXT_MAX 256

/* Where rendered events go. `json` NULL (len 0) means "an event arrived
 * that is not kept" (the lease is renewed all the same). */
typedef void (*sp_agent_event_sink)(void *ctx, const char *json, size_t len);

typedef struct sp_agent_events {
    const sp_redactor *redactor;
    char node_id[129];
    uint32_t attempt;
    char step_id[41];
    sp_agent_event_sink sink;
    void *ctx;
    uint64_t count; /* events seen */
    uint64_t kept;
    char *ring[SP_AGENT_EVENTS_TAIL];
    size_t ring_len[SP_AGENT_EVENTS_TAIL];
    size_t ring_used;
    sp_jt tape; /* for re-reading ring lines */
} sp_agent_events;

void sp_agent_events_init(sp_agent_events *e, const sp_redactor *r, const char *node_id,
                          uint32_t attempt, const char *step_id, sp_agent_event_sink sink,
                          void *ctx);
void sp_agent_events_free(sp_agent_events *e);

/* One valid event record (as the reader hands it). */
void sp_agent_events_add(sp_agent_events *e, const sp_jt *tape, size_t record, const char *line,
                         size_t len);

/* Render the kept tail and the summary (once, when the attempt ends). */
void sp_agent_events_flush(sp_agent_events *e);

/* The rendered form of the event record at `record` (NULL when out of
 * memory). */
char *sp_agent_event_render(const sp_agent_events *e, const sp_jt *tape, size_t record,
                            size_t *len);

#endif
