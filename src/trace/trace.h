/*
 * trace.h - replaying golden kernel traces `runspore.trace/0.1`
 * (conformance/README.md) against the built-in kernel.
 *
 * What it is for: `spore trace`, the conformance tests and the kernel
 * benchmark. A trace is loaded once (every expected value canonicalized up
 * front), then replayed any number of times, from snapshot bytes or keeping
 * the decoded state as an engine does.
 *
 * What it must never do: change a trace's meaning (no defaults beyond the
 * documented runner-supplied ones), or report a pass without comparing every
 * member the format names.
 */
#ifndef SPORE_TRACE_TRACE_H
#define SPORE_TRACE_TRACE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

typedef struct sp_trace sp_trace;

/* Load and prepare a trace file (trace.invalid / file.unreadable on error). */
sp_trace *sp_trace_load(const char *path, sp_error *err);
void sp_trace_free(sp_trace *t);

const char *sp_trace_name(const sp_trace *t);
size_t sp_trace_step_count(const sp_trace *t);

typedef struct sp_trace_mismatch {
    size_t step;       /* index of the first failing step */
    char member[96];   /* e.g. "snapshot", "commands[0].payload", "failure.code" */
    char *expected;    /* canonical bytes (owned) */
    char *actual;      /* canonical bytes (owned) */
} sp_trace_mismatch;

/* Replay every step. Returns true when all match; otherwise fills `m` (free
 * with sp_trace_mismatch_clear). When `steps` is an array, one object per
 * step is appended to it ({step, outcome, ...}) for `--json`. Returns false
 * with m->member "runtime" when memory ran out. */
bool sp_trace_replay(const sp_trace *t, sp_trace_mismatch *m, json_t *steps);

struct sp_kernel_decision;
struct sp_kernel_failure;

typedef struct sp_trace_options {
    /* Replay as a host that keeps the decoded run state (kernel.h,
     * sp_kernel_state): every step asks for the new state, and a step that
     * follows a decision gets that state and no snapshot bytes (a step with
     * snapshotRaw gets its raw bytes and no state; after a failure the next
     * step decodes the threaded bytes again). The expected bytes are the
     * same. */
    bool keep_state;
    /* Called after each step with the kernel's return value and result
     * (`d` valid for SP_KERNEL_DECISION, `f` otherwise), before it is
     * compared; NULL = none. */
    void (*on_step)(void *ctx, size_t step, int rc, const struct sp_kernel_decision *d,
                    const struct sp_kernel_failure *f);
    void *ctx;
} sp_trace_options;

/* sp_trace_replay() with options (NULL = the defaults, all off). */
bool sp_trace_replay_with(const sp_trace *t, const sp_trace_options *opts, sp_trace_mismatch *m,
                          json_t *steps);

void sp_trace_mismatch_clear(sp_trace_mismatch *m);

#endif
