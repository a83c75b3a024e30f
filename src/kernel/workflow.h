/*
 * workflow.h - the workflow package `runspore.workflow/0.1`: decoding and
 * validation rules W01-W11 (kernel.md §1-3), in their exact order.
 *
 * What it is for: turning canonical package bytes into a read-only graph the
 * transition function (and the engine, for action bindings) can walk.
 *
 * What it must never do: accept a package that breaks a rule, report any
 * violation but the first in rule order, or look at engine-only action fields
 * (kind, argv, ...): those belong to the runners.
 */
#ifndef SPORE_KERNEL_WORKFLOW_H
#define SPORE_KERNEL_WORKFLOW_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "digest/digest.h"
#include "kernel/kernel.h"

typedef enum sp_effect {
    SP_EFFECT_PURE,
    SP_EFFECT_READ_ONLY,
    SP_EFFECT_IDEMPOTENT,
    SP_EFFECT_UNSAFE,
} sp_effect;

typedef enum sp_node_kind {
    SP_NODE_ACTIVITY,
    SP_NODE_AWAIT_SIGNAL,
    SP_NODE_COMPLETE,
    SP_NODE_FAIL,
} sp_node_kind;

typedef struct sp_action {
    const char *id;
    json_t *raw; /* the whole action object (borrowed from the document) */
    sp_effect effect;
    const char **outcomes; /* declared outcomes */
    size_t noutcomes;
    uint32_t max_attempts;
    uint64_t backoff_ms;
    uint64_t max_backoff_ms;
} sp_action;

typedef struct sp_node {
    const char *id;
    sp_node_kind kind;
    const sp_action *action; /* activity */
    const char *action_id;   /* activity */
    json_t *mapping;         /* activity input / complete output (null when absent) */
    json_t *routes;          /* activity / await-signal: outcome -> node ID */
    const char *signal;      /* await-signal */
    json_t *error;           /* fail: {code, message, details} */
} sp_node;

typedef struct sp_workflow {
    json_t *doc;
    char *canonical; /* the package bytes */
    size_t canonical_len;
    char package_digest[SP_DIGEST_TEXT_LEN + 1];
    const char *name;
    const char *start;
    uint32_t max_visits_per_node;
    uint32_t max_activations;
    sp_action *actions; /* ascending byte order of IDs */
    size_t nactions;
    sp_node *nodes; /* ascending byte order of IDs */
    size_t nnodes;
} sp_workflow;

/* Decode and validate canonical package bytes. Returns NULL and fills `fail`
 * (invalid-input/workflow.invalid or incompatible-version/
 * workflow.unsupported-effect); `*oom` is set when memory ran out instead. */
sp_workflow *sp_workflow_load(const char *bytes, size_t len, sp_kernel_failure *fail, bool *oom);

void sp_workflow_free(sp_workflow *wf);

const sp_node *sp_workflow_node(const sp_workflow *wf, const char *id);
const sp_action *sp_workflow_action(const sp_workflow *wf, const char *id);

/* The route of `outcome` (len bytes, may hold NUL) from a node, or NULL. */
const char *sp_node_route(const sp_node *n, const char *outcome, size_t len);

bool sp_action_declares(const sp_action *a, const char *outcome, size_t len);

/* Identifier patterns (kernel.md §1), matched byte by byte. */
bool sp_is_name(const char *s, size_t len);       /* [A-Za-z0-9_.-]{1,128} */
bool sp_is_node_id(const char *s, size_t len);    /* [A-Za-z0-9_-]{1,64} */
bool sp_is_signal_name(const char *s, size_t len); /* [A-Za-z0-9_.-]{1,64} */
bool sp_is_outcome(const char *s, size_t len);    /* [a-z0-9][a-z0-9-]{0,63} */
bool sp_is_error_code(const char *s, size_t len); /* [a-z0-9][a-z0-9.-]{0,63} */

#endif
