/*
 * hints.h - what a person does next with a run: the signal a waiting run
 * waits for, who may claim a parked external step, and the one command that
 * moves the run on (status, run, resume). Shared so every answer that
 * shows a run gives the same advice.
 *
 * Must never change the run, or suggest a command that would print a
 * postgres:// password.
 */
#ifndef SPORE_CLI_HINTS_H
#define SPORE_CLI_HINTS_H

#include <jansson.h>
#include <stdio.h>

#include "cli/session.h"

/* Add `waitingFor` ({signal, nodeId, outcomes} or null) and `next` (a
 * command line or null) to a status object (`status_json`, may be NULL),
 * and/or print them as text lines on `text` (may be NULL). `step` is the
 * run's step view (borrowed, may be NULL). */
void hints_add(session *s, const sp_run_view *v, const json_t *step, json_t *status_json,
               FILE *text);

#endif
