/*
 * browse.h - the runs list as `spore list` prints it and spore_list_runs()
 * returns it, built in one place (browse.c) so the command line and the C
 * API (and the web view on it) can never disagree: newest first, filtered
 * by status, workflow and a search over run ID and start key, one page;
 * one event as `spore events` and spore_events() show it; an attempt's
 * outcome and kept streams as `spore logs` and spore_attempts() show them.
 *
 * What it must never do: print, change a run, or read more than one run
 * view per run shown.
 */
#ifndef SPORE_API_BROWSE_H
#define SPORE_API_BROWSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "engine/engine.h"
#include "store/store.h"

typedef struct sp_runs_query {
    const char *status;   /* NULL/"": any; a status, or "quarantined" */
    const char *workflow; /* NULL/"": any */
    const char *search;   /* NULL/"": any; a substring of the run ID or start key */
    size_t offset;        /* runs skipped after filtering */
    size_t limit;         /* runs in the page; 0: all */
} sp_runs_query;

/* {runs: [{runId, startKey, status, revision, quarantined, workflow,
 * createdAtMs, updatedAtMs, position}], matched, offset, limit} (counters
 * as decimal strings). NULL with err on a store failure or out of memory. */
json_t *sp_browse_runs(sp_store *s, sp_engine *e, const sp_runs_query *q, sp_error *err);

/* One event as `spore events --json` shows it: {sequence, id, kind,
 * acceptedAtMs, consumedRevision, diagnostics, payload}. NULL when out of
 * memory. */
json_t *sp_event_json(const sp_event *e);

/* What became of an attempt, as `spore logs` and spore_attempts() show it:
 * {state, status, outcome, code, expireReason}; with `details` also
 * {summary (sp_attempt_outcome_text), message, output}. NULL when out of
 * memory. */
json_t *sp_attempt_outcome_json(const sp_attempt_log *a, bool details);
/* "succeeded (ok)", "failed (command.exit)", "unknown (...)",
 * "expired (lease)", "running": one line of such an outcome object. */
#define SP_OUTCOME_TEXT_MAX 200
void sp_attempt_outcome_text(const json_t *outcome, char *out, size_t n);
/* {text, droppedBytes} of one kept stream of an attempt. */
json_t *sp_attempt_stream_json(const char *text, size_t len, uint64_t dropped);

#endif
