/*
 * admission.h - checks of a signal or a resolve against the run before the
 * engine records it (admission.c), used by sp_engine_signal and
 * sp_engine_resolve only.
 *
 * What it must never do: be included outside src/engine/, or write.
 */
#ifndef SPORE_ENGINE_ADMISSION_H
#define SPORE_ENGINE_ADMISSION_H

#include <stdbool.h>

#include "engine/engine.h"

/* At most this many unconsumed events are looked at (queued signals and
 * resolves); past it the kernel's own diagnostics decide. */
#define ADMISSION_PENDING_MAX 256

/* 0 when the signal may be recorded: its request ID has a receipt already
 * (the append answers duplicate or a conflict), or `answer` says where it
 * goes. -1 with run.not-found, run.terminal,
 * signal.unknown-name, signal.outcome-unrouted, output.invalid (format 0.2:
 * `data` breaks the waiting node's schema for the outcome) or a store error. */
int engine_admit_signal(sp_engine *e, const sp_run_key *key, const char *request_id,
                        const char *name, const char *outcome, const json_t *data,
                        sp_signal_answer *answer, sp_error *err);

/* 0 when the resolve may be recorded (or repeats a recorded request); -1 with
 * run.not-found, run.terminal, resolve.not-applicable (details {invocationId,
 * reason}) or a store error. */
int engine_admit_resolve(sp_engine *e, const sp_run_key *key, const char *request_id,
                         const char *invocation_id, sp_resolution r, const char *outcome,
                         sp_error *err);

#endif
