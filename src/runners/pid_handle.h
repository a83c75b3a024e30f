/*
 * pid_handle.h - the reference holder handle for a detached background
 * process (engine.md §9): {"pid": n, "started": "<start time>", "session":
 * "<id>"}, where `started` is the process start time from /proc/<pid>/stat
 * (clock ticks since boot) and `session` its session ID (the job runs in a
 * new session, so it outlives the worker and its process group).
 *
 * Probe: no such PID -> dead; same PID and start time -> alive (a zombie is
 * dead); same PID with another start time -> dead (the PID was reused);
 * /proc unreadable -> unknown. Stop: SIGTERM to the session's process
 * group, then SIGKILL after a grace period - only while the start time
 * still matches, so a reused PID is never signalled.
 *
 * What it must never do: signal a process whose start time does not match
 * the handle, or leave the detached job attached to the caller (its own
 * session, stdin from /dev/null, no inherited descriptors).
 */
#ifndef SPORE_RUNNERS_PID_HANDLE_H
#define SPORE_RUNNERS_PID_HANDLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "runners/runner.h" /* sp_holder_state */

/* Start argv detached: new session, stdin /dev/null, stdout and stderr
 * appended to `log_path` (or /dev/null when NULL), the current environment.
 * Returns the reference handle, or NULL with process.spawn. */
json_t *sp_pid_handle_detach(const char *const *argv, const char *log_path, sp_error *err);

/* True when `handle` has the reference shape. */
bool sp_pid_handle_is(const json_t *handle);

sp_holder_state sp_pid_handle_probe(const json_t *handle);

/* SIGTERM, wait up to grace_ms, then SIGKILL. True when the process is gone
 * (or was already gone) afterwards. */
bool sp_pid_handle_stop(const json_t *handle, uint64_t grace_ms);

#endif
