/*
 * agent_views.h - the kept events of agent steps in `spore status` and
 * `spore events` (agent-step.md §3): the first 25 and last 25 events of each
 * attempt, redacted and capped by the runner, stored as audit rows of kind
 * "agent.event".
 *
 * Must never fail the view it adds to: when the rows cannot be read, the
 * view shows what it has and leaves this part out.
 */
#ifndef SPORE_CLI_AGENT_VIEWS_H
#define SPORE_CLI_AGENT_VIEWS_H

#include <jansson.h>
#include <stdio.h>

#include "store/store.h"

/* With `obj`: add "agentEvents": [...] to it when the run has any, and
 * return it. With `text`: print one line per kept event and per attempt
 * summary. */
json_t *view_agent_events(sp_store *store, const sp_run_key *key, json_t *obj, FILE *text);

#endif
