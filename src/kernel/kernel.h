/*
 * kernel.h - the pure transition function (kernel.md §1-3, §7).
 *
 * What it is for: `event + state -> new state + commands`, byte for byte the
 * runspore 0.1 wire format. The engine calls sp_kernel_transition() for every
 * pending event; `spore trace` replays the golden traces through it.
 *
 * A host that drives a run may keep the decoded state of the run between
 * transitions (sp_kernel_state, step-path.md §5): the kernel then skips the
 * decode of the snapshot bytes, and the result bytes are the same as without
 * it.
 *
 * What it must never do: I/O, read a clock, draw randomness, use floating
 * point or threads, iterate an unordered collection, or invent an ID. Same
 * request bytes give the same result bytes on every machine, with or without
 * a decoded state.
 */
#ifndef SPORE_KERNEL_KERNEL_H
#define SPORE_KERNEL_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "digest/digest.h"

#define SP_SEMANTICS_VERSION "0.1"
#define SP_CODEC_VERSION "jcs-int53/1"
#define SP_WORKFLOW_FORMAT "runspore.workflow/0.1"
#define SP_STATE_FORMAT "runspore.state/0.1"
#define SP_ABI_VERSION "runspore:machine@0.1.0"
/* Semantics 0.2 (workflows-0.2.md, docs/format-0.2.md): chosen by a
 * package whose format is spore.workflow/0.2. */
#define SP_SEMANTICS_VERSION_02 "0.2"
#define SP_WORKFLOW_FORMAT_02 "spore.workflow/0.2"
#define SP_STATE_FORMAT_02 "spore.state/0.2"

typedef struct sp_kernel_limits {
    uint32_t microsteps;
    uint32_t expression_operations;
    uint32_t max_state_bytes;
    uint32_t max_command_count;
} sp_kernel_limits;

/* The frozen default budget every host passes under 0.1. */
#define SP_KERNEL_DEFAULT_LIMITS ((sp_kernel_limits){1000, 10000, 262144, 128})
/* The default budget under 0.2: the state may be 8 MiB, so that a map of
 * 1,000 items (256 of 4 KiB outputs each with room to spare) stays in the
 * snapshot (docs/kernel.md §8.9); the other budgets are 0.1's. */
#define SP_KERNEL_DEFAULT_LIMITS_02 ((sp_kernel_limits){1000, 10000, 8388608, 128})

/* The default budget of a semantics version ("0.1", "0.2"; others: 0.1's). */
sp_kernel_limits sp_kernel_default_limits(const char *semantics_version);

typedef struct sp_kernel_identity {
    const char *package_digest; /* recorded by hosts, not checked */
    const char *kernel_digest;  /* recorded by hosts, not checked */
    const char *semantics_version;
    const char *codec_version;
} sp_kernel_identity;

struct json_t;

typedef struct sp_kernel_event {
    const char *event_id;
    uint64_t sequence;
    uint64_t accepted_at_ms;
    const char *kind;
    const char *payload; /* canonical JSON bytes */
    size_t payload_len;
    /* Optional: the value `payload` parses to, when the host parsed it
     * already (a store verifying a result does): the kernel takes a
     * reference to it instead of parsing the bytes again, and never changes
     * it. It must be sp_json_parse_canonical's value of exactly these bytes;
     * NULL: the kernel parses them. */
    const struct json_t *payload_value;
} sp_kernel_event;

struct sp_workflow;

/* The decoded run state `runspore.state/0.1` of one run, as the kernel keeps
 * it between transitions (opaque). A host gets one from a decision
 * (request.want_state), keeps it next to the run keyed by
 * sp_kernel_state_digest(), and hands it to the next transition of that run
 * instead of making the kernel decode the snapshot bytes again. */
typedef struct sp_kernel_state sp_kernel_state;

typedef struct sp_kernel_request {
    sp_kernel_identity identity;
    const char *graph; /* canonical package bytes */
    size_t graph_len;
    /* Optional: the graph already loaded by sp_workflow_load() from the same
     * bytes (a cache; the result is identical). NULL = load from `graph`. */
    const struct sp_workflow *loaded_graph;
    const char *snapshot; /* NULL = absent (unless `state` is given) */
    size_t snapshot_len;
    /* Optional: the decoded form of the snapshot, from the previous decision
     * of this run (sp_kernel_decision.state). The host guarantees it is the
     * snapshot by comparing sp_kernel_state_digest() with the digest of the
     * stored snapshot; on any mismatch it passes NULL (the kernel decodes
     * `snapshot`). When non-NULL the snapshot counts as present and the
     * kernel does not read `snapshot` bytes (they may be NULL), unless the
     * state was decoded for another package (then it falls back to them).
     *
     * Ownership: the call always takes the state, whatever it returns. On
     * SP_KERNEL_DECISION with `want_state` the same object comes back,
     * updated to the new state, as decision.state; in every other case
     * (a failure, SP_KERNEL_OOM, no `want_state`) the kernel frees it. The
     * caller's pointer is dead after the call: never reuse it. */
    sp_kernel_state *state;
    /* Return the decoded new state in decision.state (decoded from
     * `snapshot` or initial when `state` is NULL). */
    bool want_state;
    sp_kernel_event event;
    sp_kernel_limits limits;
} sp_kernel_request;

typedef struct sp_kernel_command {
    char command_id[SP_ID_LEN + 1];
    char *activation_id;
    const char *kind; /* "activity.schedule", "activity.retry"; 0.2 also
                         "activity.cancel", "timer.start", "timer.cancel" (static) */
    char *payload;    /* canonical JSON */
    size_t payload_len;
    /* What the payload names, so a host need not parse it: its invocationId
     * ("" when it has none: timers) and its actionId (NULL when it has none:
     * a retry or cancel names only the invocation). */
    char invocation_id[SP_ID_LEN + 1];
    char *action_id;
    /* The payload as the value its bytes encode (one reference, owned by
     * the decision), so a host that reads the payload need not parse it. */
    struct json_t *payload_value;
} sp_kernel_command;

typedef struct sp_kernel_diagnostic {
    const char *code; /* static */
    char *node_id;    /* NULL = none */
    char *details;    /* canonical JSON */
    size_t details_len;
} sp_kernel_diagnostic;

typedef struct sp_kernel_decision {
    char *snapshot; /* canonical state bytes */
    size_t snapshot_len;
    char snapshot_digest[SP_DIGEST_TEXT_LEN + 1];
    char status[24]; /* the new state's status, for hosts: running, waiting,
                        needs-intervention, completed, failed; 0.2 also cancelled */
    sp_kernel_command *commands;
    size_t ncommands;
    sp_kernel_diagnostic *diagnostics;
    size_t ndiagnostics;
    /* The decoded new state (the decode of `snapshot`), when the request set
     * `want_state`; else NULL. Owned by the decision: take it with
     * `s = d.state; d.state = NULL;` (then free it with sp_kernel_state_free
     * or pass it as the next request's `state`); sp_kernel_decision_free
     * frees it when it is still there. */
    sp_kernel_state *state;
} sp_kernel_decision;

typedef struct sp_kernel_failure {
    const char *kind; /* invalid-input | incompatible-version | resource-limit |
                         invariant-violation (static) */
    char code[64];
    char details[256]; /* explanatory text, not part of conformance */
} sp_kernel_failure;

typedef struct sp_kernel_descriptor {
    const char *abi_version;
    const char *semantics_version;
    const char *graph_format_version;
    const char *codec_version;
} sp_kernel_descriptor;

enum { SP_KERNEL_DECISION = 0, SP_KERNEL_FAILURE = 1, SP_KERNEL_OOM = -1 };

/* Run one transition. Returns SP_KERNEL_DECISION (fill `out`, free it with
 * sp_kernel_decision_free), SP_KERNEL_FAILURE (fill `fail`, nothing else), or
 * SP_KERNEL_OOM when the host ran out of memory (nothing decided; retry). */
int sp_kernel_transition(const sp_kernel_request *req, sp_kernel_decision *out,
                         sp_kernel_failure *fail);

void sp_kernel_decision_free(sp_kernel_decision *d);

/* digest::state of the snapshot bytes this state is the decoding of (the
 * decision's snapshot_digest): the key under which a host keeps it. */
const char *sp_kernel_state_digest(const sp_kernel_state *s);

/* Free a decoded state (NULL is fine). */
void sp_kernel_state_free(sp_kernel_state *s);

/* digest::decision of a decision (kernel.md §7.3). */
void sp_kernel_decision_digest(const sp_kernel_decision *d, char out[SP_DIGEST_TEXT_LEN + 1]);

/* The descriptor of kernel.md §7.1 (semantics 0.1, the conformance
 * vocabulary). */
const sp_kernel_descriptor *sp_kernel_describe(void);
/* Every semantics this kernel speaks, oldest first (0.1, then 0.2 with its
 * format spore.workflow/0.2): *n descriptors. */
const sp_kernel_descriptor *sp_kernel_describe_all(size_t *n);

#endif
