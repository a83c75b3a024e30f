/*
 * internal.h - types shared by the kernel's own modules (events, state,
 * snapshot, transition). Not part of the kernel's interface: only
 * src/kernel/ includes it.
 */
#ifndef SPORE_KERNEL_INTERNAL_H
#define SPORE_KERNEL_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "kernel/kernel.h"
#include "kernel/workflow.h"

/* ---- failures ---- */

typedef struct kfail {
    sp_kernel_failure *out;
    bool oom;
} kfail;

int kfail_set(kfail *f, const char *kind, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int kfail_oom(kfail *f);

/* ---- JSON helpers ---- */

bool kjson_str_is(const json_t *s, const char *lit); /* length-aware */
bool kjson_members_exactly(const json_t *obj, const char *const *names);
bool kjson_members_within(const json_t *obj, const char *const *names);
bool kjson_u32(const json_t *v, uint32_t *out);
/* {code, message, nodeId?, details?} -> a new object with all four keys, or
 * NULL when malformed (*oom tells an allocation failure apart). */
json_t *kjson_error_info(const json_t *v, bool *oom);

/* ---- events (kernel.md §7.5) ---- */

typedef enum kev_kind { EV_RUN_STARTED, EV_ACTIVITY_RESULT, EV_SIGNAL, EV_RESOLVED } kev_kind;
typedef enum kresult_status { RS_SUCCESS, RS_FAILURE, RS_UNKNOWN, RS_EXPIRED } kresult_status;
typedef enum kresolution { RES_COMPLETE, RES_RETRY, RES_FAIL } kresolution;

typedef struct kevent {
    kev_kind kind;
    const char *kind_name;
    json_t *payload; /* owned; every pointer below is borrowed from it */
    /* run.started */
    const json_t *tenant, *run_id, *input;
    /* activity.result and invocation.resolved */
    const json_t *invocation_id;
    uint32_t attempt;
    kresult_status status;
    const json_t *outcome; /* NULL when absent or null */
    const json_t *output;  /* JSON null when absent */
    json_t *error;         /* owned, normalized ErrorInfo, NULL when absent */
    bool retryable;
    kresolution resolution;
    /* signal.received */
    const json_t *name, *data;
} kevent;

/* Check 4: kind known (event.unknown-kind), payload canonical and of the
 * kind's type (event.invalid). */
int kevent_decode(const char *kind, const char *payload, size_t len, kevent *ev, kfail *f);
void kevent_free(kevent *ev);

/* ---- state (kernel.md §7.4) ---- */

/* Check 5 for a present snapshot: version, typed decode, consistency.
 * Returns a new state object or NULL with `f` filled. */
json_t *kstate_decode(const sp_workflow *wf, const char *bytes, size_t len, kfail *f);

/* The initial state of run.started (before entering the start node). */
json_t *kstate_initial(const json_t *tenant, const json_t *run_id, const json_t *input);

/* ---- snapshot bytes (snapshot.c) ---- */

typedef struct kmemo_member {
    char *key;
    size_t klen;
    json_t *value; /* the value encoded (a reference held) */
    char *bytes;   /* `"key":value`, canonical */
    size_t len;
} kmemo_member;

typedef struct kmemo_map {
    kmemo_member *m; /* in the map's walk order */
    size_t n, cap;
    size_t *order; /* indices into m, in canonical key order */
} kmemo_map;

/* The remembered members of a state's `nodes` and `visits` maps. */
typedef struct kmemo {
    kmemo_map nodes, visits;
    size_t last_len; /* bytes of the last snapshot encoded (a size hint) */
} kmemo;

/* Canonical bytes of `state`, identical to sp_json_encode_alloc(); with a
 * memo, unchanged members of nodes and visits are copied from it and the
 * memo is brought up to date. NULL with `err` on failure (the caller clears
 * the memo and uses the plain encoder for the exact error). */
char *ksnapshot_encode(const json_t *state, kmemo *memo, size_t *len, sp_error *err);
void kmemo_clear(kmemo *memo);

/* The decoded state a host keeps between transitions (kernel.h). `doc` is
 * exactly what kstate_decode() of the snapshot bytes (digest
 * `snapshot_digest`) against the package `package_digest` would return:
 * every check of check 5 holds for it. Only the transition that takes it
 * mutates `doc`, and nothing outside this struct holds a reference into it
 * (`memo` does: it remembers the encoding of the large maps' members for the
 * next transition). */
struct sp_kernel_state {
    json_t *doc; /* owned; NULL while a transition holds it */
    char package_digest[SP_DIGEST_TEXT_LEN + 1];
    char snapshot_digest[SP_DIGEST_TEXT_LEN + 1];
    kmemo memo;
};

#endif
