/*
 * steplog.h - what an attempt keeps of its output for `spore logs`
 * (authoring.md §5, docs/authoring.md "Step logs"): the runners' one way
 * from the last bytes of a stream to an sp_log_stream.
 *
 * What it is for: a command's stdout and stderr, an agent step CLI's
 * stderr, a component attempt's log file all end the same way: the window
 * of their last bytes (a ring of sp_steplog_ring() bytes, or the end of a
 * file) loses any piece of a secret the window's edge cut (the longest
 * secret form's length minus one, when earlier bytes were dropped), is
 * redacted whole (the action's secrets and the pattern rules, agent/redact.h)
 * and only then made valid UTF-8 (every ill-formed byte sequence becomes
 * U+FFFD) and cut to its last SP_STEPLOG_KEEP bytes at a character
 * boundary. `dropped` counts the bytes before what is kept.
 *
 * What it must never do: keep more than SP_STEPLOG_KEEP bytes, keep text
 * that was not redacted, or hold more than one window per stream.
 */
#ifndef SPORE_RUNNERS_STEPLOG_H
#define SPORE_RUNNERS_STEPLOG_H

#include <stddef.h>
#include <stdint.h>

#include "agent/redact.h"
#include "runners/runner.h"

#define SP_STEPLOG_KEEP (64u * 1024) /* bytes kept of one stream (the store's bound) */

/* The ring a stream needs so that SP_STEPLOG_KEEP bytes are left after the
 * cut for secrets: SP_STEPLOG_KEEP plus the longest secret form (at most
 * another SP_STEPLOG_KEEP). `r` may be NULL. */
size_t sp_steplog_ring(const sp_redactor *r);

/* The kept stream of `window` (the last len of `total` bytes a stream
 * carried). 0, or -1 when out of memory (*out empty). */
int sp_steplog_stream(const char *window, size_t len, uint64_t total, const sp_redactor *r,
                      sp_log_stream *out);

/* The kept stream of a ring (base/tail.h). 0 or -1. */
struct sp_tail;
int sp_steplog_tail(const struct sp_tail *t, const sp_redactor *r, sp_log_stream *out);

/* The kept stream of the file at `path` (its last sp_steplog_ring(r)
 * bytes); an absent or unreadable file is an empty stream. 0 or -1. */
int sp_steplog_file(const char *path, const sp_redactor *r, sp_log_stream *out);

/* New logs from two kept streams (taken; a stream without text - none, or
 * one that ran out of memory - is empty: an attempt that printed nothing
 * says so), or NULL when out of memory (the streams are freed then). */
sp_attempt_logs *sp_steplog_pair(sp_log_stream *out, sp_log_stream *err);

#endif
