/*
 * request.h - the step request (agent-step.md §2) and the exec message
 * sizes of §7.
 *
 * What it is for: building the one compact JSON object the step CLI reads
 * on stdin, with exactly the members query, context (only if given),
 * systemPrompt, outputSchema, timeout_ms, stepId, runDir and traceparent
 * (only a valid W3C value); allowedTools and deniedTools are dropped with
 * one warning naming the keys (never values); tracestate is dropped. The
 * serialized request is at most 983,040 bytes (agent.request-too-large);
 * the node's input must be {query: string, context?: object}
 * (agent.input-invalid).
 *
 * stepId = slug + "-" + the first 12 lowercase hex of SHA-256 of
 * "<runId>:<nodeId>:<attempt>"; the slug is the node ID lowercased, every
 * run of characters outside [a-z0-9] replaced by one "-", trimmed of "-",
 * cut to 27 characters, trimmed again, "step" if empty.
 *
 * Exec message sizes: the local transport counts like the kernel's
 * ARG_MAX (every argv and environment string plus its NUL) plus stdin; a
 * remote (exec) transport counts the protobuf encoding of an exec request:
 * each argv entry, each environment pair (a map entry message) and stdin
 * as length-delimited fields.
 *
 * What it must never do: send a member outside that list, put a tool list
 * or a tracestate value into a warning, or allocate without a bound.
 */
#ifndef SPORE_AGENT_REQUEST_H
#define SPORE_AGENT_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/action.h"
#include "base/error.h"

#define SP_AGENT_REQUEST_MAX 983040u /* 1 MiB - 64 KiB */

typedef struct sp_agent_request {
    char step_id[41];
    char *run_dir;   /* absolute */
    char *json;      /* the serialized request */
    size_t len;
    char warning[256]; /* "" or the dropped-keys warning */
} sp_agent_request;

typedef struct sp_agent_request_in {
    const sp_agent_action *action;
    const json_t *input; /* the node's evaluated input */
    const char *run_id;
    const char *node_id;
    uint32_t attempt;
    const char *work_root;   /* the sandbox work root, absolute */
    const char *traceparent; /* may be NULL or invalid (then not sent) */
    const char *tracestate;  /* always dropped */
    const char *step_id;     /* tests replaying a captured exchange: this stepId
                                instead of the derived one (NULL = derived) */
} sp_agent_request_in;

/* Errors: agent.input-invalid, agent.request-too-large,
 * runtime.out-of-memory. */
int sp_agent_request_build(const sp_agent_request_in *in, sp_agent_request *out, sp_error *err);
void sp_agent_request_free(sp_agent_request *r);

/* stepId of one attempt (out: 41 bytes). */
void sp_agent_step_id(const char *run_id, const char *node_id, uint32_t attempt, char out[41]);

/* A W3C traceparent: "00-<32 hex, not all 0>-<16 hex, not all 0>-<2 hex>"
 * in lowercase. */
bool sp_agent_traceparent_valid(const char *tp);

/* Message sizes (see above). `envp` entries are "NAME=value". */
uint64_t sp_agent_message_size_local(const char *const *argv, const char *const *envp,
                                     size_t stdin_len);
uint64_t sp_agent_message_size_protobuf(const char *const *argv, const char *const *envp,
                                        size_t stdin_len);

#endif
