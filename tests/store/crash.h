/*
 * crash.h - the mutations the crash test (Q03) interrupts, shared by the
 * test and its child process (store_crash_child.c), so that both send
 * byte-identical requests: one per store failpoint operation.
 *
 * prepare (clock CRASH_PREPARE_MS) builds everything the mutation needs;
 * perform (clock CRASH_MS) sends the mutation with a fixed request ID;
 * effects counts how many times the mutation's effect is in the store (0 or
 * 1; anything else is a bug) and whether its receipt exists.
 *
 * What it must never do: depend on anything but the public store API.
 */
#ifndef SPORE_TESTS_STORE_CRASH_H
#define SPORE_TESTS_STORE_CRASH_H

#include <stdbool.h>

#include "store/store.h"

#define CRASH_PREPARE_MS 10000
#define CRASH_MS 50000

typedef enum crash_op {
    CRASH_CREATE_RUN,
    CRASH_APPEND_EVENT,
    CRASH_COMMIT_TURN,
    CRASH_CLAIM_ATTEMPT,
    CRASH_HEARTBEAT,
    CRASH_FINISH_ATTEMPT,
    CRASH_SETTLE_ATTEMPT,
    CRASH_EXPIRE_ATTEMPT,
    CRASH_OPS
} crash_op;

/* "create-run", ... : the store.<name>.{before,after}-commit failpoints. */
const char *crash_op_name(crash_op op);

bool crash_prepare(sp_store *s, crash_op op);
sp_store_rc crash_perform(sp_store *s, crash_op op, sp_disposition *d, sp_error *err);
/* Occurrences of the mutation's effect; *receipt = its receipt exists. */
int crash_effects(sp_store *s, crash_op op, bool *receipt);

#endif
