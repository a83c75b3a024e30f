/*
 * views.h - how runs, events and invocations are shown: the stable JSON of
 * cli.md §2 and the text for people. Shared by status, run, worker, list and
 * events so one run always looks the same.
 *
 * Must never print a counter or timestamp as a JSON number (they are decimal
 * strings), or omit a member the JSON interface names.
 */
#ifndef SPORE_CLI_VIEWS_H
#define SPORE_CLI_VIEWS_H

#include <jansson.h>
#include <stdio.h>

#include "store/store.h"

/* {runId, startKey, status, revision, position, invocation, result, nodes,
 *  quarantine, packageDigest} from a run view (snapshot members are null
 *  before the first commit); built by sp_status_json (src/api/status.c), the
 *  same object spore_status() of the C API returns. */
json_t *view_status_json(const sp_run_view *v, json_t *step /* borrowed, may be NULL */);

/* The text status of cli.md §2. */
/* A cancelled 0.2 run's unsafe steps cancelled in flight
 * (sp_engine_cancelled_in_flight), one text line each. */
void view_in_flight_text(FILE *out, const json_t *in_flight);
void view_status_text(FILE *out, const sp_run_view *v, const json_t *step);

json_t *view_event_json(const sp_event *e);
void view_event_text(FILE *out, const sp_event *e);

json_t *view_decimal(uint64_t v);

#endif
