/*
 * breaker.h - the per-provider circuit breaker of agent steps
 * (agent-step.md §5).
 *
 * What it is for: one breaker per worker process per `provider` (default:
 * stepCli[0]). Outcomes feed it: +F (a failure that says the provider or
 * its infrastructure is unwell), +S (a success), or nothing. Five
 * consecutive +F open it; it closes 60 s after the last failure (one more
 * +F then reopens it at once: the count stays at or above five); +S resets
 * it. While it is open, steps of that provider fail with agent.breaker-open
 * without running.
 *
 * What it must never do: share state between processes, block, or grow
 * without bound (at most SP_BREAKER_PROVIDERS providers are tracked; the
 * least recently used closed one makes room).
 */
#ifndef SPORE_AGENT_BREAKER_H
#define SPORE_AGENT_BREAKER_H

#include <stdbool.h>
#include <stdint.h>

#define SP_BREAKER_THRESHOLD 5
#define SP_BREAKER_COOLDOWN_MS 60000u
#define SP_BREAKER_PROVIDERS 64
#define SP_BREAKER_NAME_MAX 128

typedef enum sp_breaker_effect {
    SP_BREAKER_NONE,
    SP_BREAKER_FAILURE, /* +F */
    SP_BREAKER_SUCCESS, /* +S */
} sp_breaker_effect;

const char *sp_breaker_effect_name(sp_breaker_effect e); /* "none" | "failure" | "success" */

typedef struct sp_breaker_table sp_breaker_table;

/* The process-wide table the agent runner uses. */
sp_breaker_table *sp_breaker_global(void);

/* A private table (tests). */
sp_breaker_table *sp_breaker_table_new(void);
void sp_breaker_table_free(sp_breaker_table *t);

/* True while the breaker of `provider` is open at `now_ms` (monotonic). */
bool sp_breaker_is_open(sp_breaker_table *t, const char *provider, uint64_t now_ms);

void sp_breaker_record(sp_breaker_table *t, const char *provider, sp_breaker_effect e,
                       uint64_t now_ms);

#endif
