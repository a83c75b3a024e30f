/*
 * stderr_log.h - what the agent runner keeps of a step's stderr
 * (agent-step.md §4).
 *
 * What it is for: the first line (written by the wrapper that starts the
 * step CLI: `step-pid=<decimal>`), a ring buffer of the last 64 KiB and a
 * byte count. For an error message the window is decoded as UTF-8 with
 * replacement, redacted (exact secrets and pattern rules) and only then cut
 * to its last 4 KiB at a character boundary, so a secret that straddles the
 * cut is redacted as a whole (the runner refuses secrets over 60 KiB, so any
 * secret ending in the last 4 KiB starts inside the window).
 *
 * What it must never do: grow past the ring, keep more of the first line
 * than SP_AGENT_FIRST_LINE_MAX bytes, or hand out text that was not
 * redacted.
 */
#ifndef SPORE_AGENT_STDERR_LOG_H
#define SPORE_AGENT_STDERR_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/redact.h"
#include "base/tail.h"

#define SP_AGENT_STDERR_RING (64u * 1024)
#define SP_AGENT_STDERR_TAIL 4096u
#define SP_AGENT_FIRST_LINE_MAX 256u

typedef struct sp_agent_stderr {
    char first[SP_AGENT_FIRST_LINE_MAX + 1];
    size_t first_len;
    bool first_done; /* the first LF was seen */
    bool first_cut;  /* the first line was longer than kept */
    sp_tail tail;    /* the last SP_AGENT_STDERR_RING bytes, and the count of all */
} sp_agent_stderr;

/* 0, or -1 when out of memory. */
int sp_agent_stderr_init(sp_agent_stderr *s);
void sp_agent_stderr_free(sp_agent_stderr *s);
void sp_agent_stderr_feed(sp_agent_stderr *s, const char *data, size_t len);

/* The PID from a well-formed first line `step-pid=<1..10 digits>`; false
 * when the line is missing or malformed (the PID is then unknown). */
bool sp_agent_stderr_pid(const sp_agent_stderr *s, long long *pid);

/* The redacted tail (at most SP_AGENT_STDERR_TAIL bytes of valid UTF-8,
 * NUL-terminated; "" when stderr was empty). NULL when out of memory. */
char *sp_agent_stderr_tail(const sp_agent_stderr *s, const sp_redactor *r, size_t *len);

/* The bytes stderr carried so far. */
static inline uint64_t sp_agent_stderr_total(const sp_agent_stderr *s) { return s->tail.total; }

/* The first line, lossily made UTF-8, redacted, at most 200 bytes (for a
 * sandbox tool's own message). NULL when out of memory. */
char *sp_agent_stderr_first_line(const sp_agent_stderr *s, const sp_redactor *r);

#endif
