/*
 * status.h - the status object of one run: what `spore status --json`
 * prints (cli.md §2) and what spore_status() returns, built in one place so
 * the command line and the C API can never disagree.
 *
 * What it must never do: print, read the store, or show a counter or
 * timestamp as a JSON number (they are decimal strings).
 */
#ifndef SPORE_API_STATUS_H
#define SPORE_API_STATUS_H

#include <jansson.h>

#include "store/store.h"

/* {runId, startKey, status, revision, position, invocation, result, nodes,
 *  quarantine, packageDigest, invocations, interventions, timers, branches
 *  (each with the invocation at its position), maps, waits} from a run view (snapshot members are null before the first
 *  commit; the last five only for format 0.2 runs, docs/format-0.2.md). A new reference, NULL when out of memory. */
json_t *sp_status_json(const sp_run_view *v);

/* A cancelled 0.2 run: append its unsafe steps cancelled in flight
 * (sp_engine_cancelled_in_flight) to the status's interventions. */
void sp_status_add_in_flight(json_t *status, const json_t *in_flight);

#endif
