/*
 * workflow.h - the workflow packages `runspore.workflow/0.1` and
 * `spore.workflow/0.2`: decoding and validation rules W01-W11 (kernel.md
 * §1-3) and, for 0.2, W12-W19 (validate02.c, docs/kernel.md §8), in their
 * exact order.
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

typedef enum sp_semantics { SP_SEM_01, SP_SEM_02 } sp_semantics;

typedef enum sp_node_kind {
    SP_NODE_ACTIVITY,
    SP_NODE_AWAIT_SIGNAL,
    SP_NODE_COMPLETE,
    SP_NODE_FAIL,
    SP_NODE_PARALLEL, /* 0.2 */
    SP_NODE_JOIN,     /* 0.2 */
    SP_NODE_MAP,      /* 0.2 */
    SP_NODE_SLEEP,    /* 0.2 */
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
    const sp_action *action; /* activity, map */
    const char *action_id;   /* activity, map */
    json_t *mapping;         /* activity / map input, complete output (NULL when absent) */
    json_t *routes;          /* activity / await-signal / join / map / sleep: outcome -> node ID */
    const char *signal;      /* await-signal */
    json_t *error;           /* fail: {code, message, details} */
    /* 0.2 members (NULL / false when absent) */
    json_t *raw;             /* the node object */
    json_t *loop_limits;     /* activity, await-signal: outcome -> N */
    json_t *output_schemas;  /* activity, await-signal: outcome -> schema (engine-checked) */
    bool has_timeout;        /* await-signal timeoutMs */
    uint64_t timeout_ms;
    json_t *branches;        /* parallel: branch name -> start node */
    const char *join;        /* parallel: its join node */
    const struct sp_node *parallel; /* join: the parallel it belongs to (validation) */
    json_t *items;           /* map: mapping -> array */
    uint32_t max_items, max_concurrency; /* map */
    bool has_duration;       /* sleep durationMs */
    uint64_t duration_ms;
    json_t *until;           /* sleep until (mapping) */
} sp_node;

typedef struct sp_workflow {
    sp_semantics semantics; /* chosen by the package's format */
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

/* The same under a given semantics version ("0.1" or "0.2"): under 0.1 the
 * package must be runspore.workflow/0.1 (W01); under 0.2 a package of
 * another format is incompatible-version/version.semantics
 * (docs/format-0.2.md). sp_workflow_load() picks the semantics from the
 * package's format. */
sp_workflow *sp_workflow_load_as(const char *bytes, size_t len, sp_semantics sem,
                                 sp_kernel_failure *fail, bool *oom);

/* The semantics a package's format selects: spore.workflow/0.2 -> 0.2,
 * anything else -> 0.1 (where W01 judges it). */
sp_semantics sp_workflow_semantics_of(const json_t *doc);

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

/* 0.2 rules (validate02.c), called by the loader after W11: W12-W19. */
int sp_validate02(sp_workflow *wf, sp_kernel_failure *fail, bool *oom);
/* 0.2 node members (validate02.c), called by the decoder for 0.2 packages. */
int sp_decode02_node(sp_node *n, json_t *obj, const char *kind, sp_kernel_failure *fail,
                     bool *handled);

#endif
