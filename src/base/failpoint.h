/*
 * failpoint.h - crash injection (engine.md §8).
 *
 * SPORE_FAILPOINTS = comma-separated `name` or `name:n`. When execution
 * reaches a named point for the n-th time (default the 1st), the process
 * aborts on the spot: no unwinding, no flush, like a power cut. Used by the
 * crash suite to prove that every commit point is safe.
 *
 * What it must never do: do anything at all when the variable is unset
 * (beyond one getenv), or slow down a point that is not armed.
 */
#ifndef SPORE_BASE_FAILPOINT_H
#define SPORE_BASE_FAILPOINT_H

#include <stdbool.h>

/* Count a hit of `name` and abort if it is armed for this hit. */
void sp_failpoint(const char *name);

/* The registered names, NULL-terminated (the crash suite iterates them). */
const char *const *sp_failpoint_names(void);

/* True when `name` is a registered failpoint. */
bool sp_failpoint_known(const char *name);

#endif
