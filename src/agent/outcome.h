/*
 * outcome.h - what an agent step's ending means (agent-step.md §5): the
 * outcome table, in one place, for the agent runner and for
 * `spore agent classify` alike.
 *
 * What it is for: from how the transport ended (exit code, signal, our
 * deadline, the engine's stop, a lost stream, a failed start), what the
 * protocol reader saw, the stderr log and - only after exit 4 or a lost
 * stream - the result.json diagnostic, decide: status (success, failure,
 * unknown), a stable agent.* code, retryable, taint (the sandbox must not be
 * reused), the circuit-breaker effect, a redacted error message, the
 * structured output of a success, and JSON details (rule and line of a
 * violation, never content; the redacted stderr tail for exits 1-3; the
 * fixed-vocabulary result.json diagnostic).
 *
 * The order (first match wins): sandbox could not be built; exec could not
 * start; the engine stopped the attempt; a protocol violation in the
 * stream; a lost stream; exit 0 (end-of-stream rules, then the result: 200
 * success -> Success `ok`, 200 failure -> agent.failed, 502 ->
 * agent.infra-transient); a result record with any other ending; our own
 * deadline; exits 1, 2, 3, 4, 124, 129-159 (or a signal N as 128+N); any
 * other exit.
 *
 * What it must never do: read result.json when the ending does not call for
 * it, let result.json complete a step, copy a byte of stdout into details,
 * or return an error text, tail or output that was not redacted.
 */
#ifndef SPORE_AGENT_OUTCOME_H
#define SPORE_AGENT_OUTCOME_H

#include <jansson.h>
#include <stdbool.h>

#include "agent/breaker.h"
#include "agent/reader.h"
#include "agent/redact.h"
#include "agent/result_file.h"
#include "agent/stderr_log.h"

#define SP_AGENT_OUTPUT_MAX (60u * 1024) /* canonical output; the activity result is <= 64 KiB */
#define SP_AGENT_MESSAGE_MAX 900

/* Rules for violations that are not in the stream itself. */
#define SP_RULE_RESULT_WITH_EXIT "stream.result-with-exit"

typedef enum sp_agent_end_kind {
    SP_AGENT_EXITED,         /* exit_code */
    SP_AGENT_SIGNALED,       /* the transport was killed by `signal` (not by us) */
    SP_AGENT_TIMED_OUT,      /* our hard deadline killed it */
    SP_AGENT_STOPPED,        /* the engine's stop signal (lease lost, shutdown) */
    SP_AGENT_LOST,           /* the transport lost the stream (no exit status) */
    SP_AGENT_SPAWN_FAILED,   /* the transport could not start the exec */
    SP_AGENT_SANDBOX_FAILED, /* the sandbox could not be built (nothing ran) */
    SP_AGENT_VIOLATION_KILL, /* we killed it at a protocol violation */
} sp_agent_end_kind;

typedef struct sp_agent_end {
    sp_agent_end_kind kind;
    int exit_code;
    int signal;
    char message[256]; /* spawn / sandbox failures: the runner's own words */
} sp_agent_end;

typedef enum sp_agent_status {
    SP_AGENT_SUCCESS,
    SP_AGENT_FAILURE,
    SP_AGENT_UNKNOWN,
} sp_agent_status;

typedef struct sp_agent_outcome {
    sp_agent_status status;
    char code[64]; /* "" on success */
    bool retryable;
    bool taint;
    sp_breaker_effect breaker;
    char *error;     /* redacted message, NULL on success; owned */
    json_t *output;  /* success: the structured output; owned */
    json_t *details; /* always an object; owned */
} sp_agent_outcome;

void sp_agent_outcome_free(sp_agent_outcome *o);

/* A failure decided before or around the exec (breaker open, bad input,
 * sizes, secrets, sandbox): never touches a stream. `details` ownership is
 * taken (NULL = {}). */
void sp_agent_outcome_fail(sp_agent_outcome *o, const char *code, bool retryable, bool taint,
                           sp_breaker_effect breaker, json_t *details, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* True when the ending calls for the result.json diagnostic (exit 4 or a
 * lost stream). */
bool sp_agent_end_needs_result_file(const sp_agent_end *end);

/* Classify a finished exchange. `file` is the diagnostic when
 * sp_agent_end_needs_result_file() said so (else ignored; NULL = absent). */
void sp_agent_classify(const sp_agent_reader *reader, const sp_agent_stderr *err,
                       const sp_redactor *redactor, const sp_agent_end *end,
                       const sp_agent_result_file *file, const char *step_id,
                       sp_agent_outcome *o);

/* The outcome object of `spore agent classify --json` (cli.md §7):
 * {status, code, retryable, taint, breaker, error, output, details}. */
json_t *sp_agent_outcome_json(const sp_agent_outcome *o);

/* "success" | "failure" | "unknown" */
const char *sp_agent_status_name(sp_agent_status s);

#endif
