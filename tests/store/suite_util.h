/*
 * suite_util.h - assertions and small drivers shared by the store suite's
 * files (suite.c, suite_attempts.c, suite_more.c). Private to tests/store.
 *
 * What it must never do: be used from a thread other than the test's main
 * thread (the CHECK counters are not atomic); threads record results and
 * the main thread checks them.
 */
#ifndef SPORE_TESTS_STORE_SUITE_UTIL_H
#define SPORE_TESTS_STORE_SUITE_UTIL_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "suite.h"

void expect_rc(const char *file, int line, sp_store_rc rc, sp_error *err, sp_store_rc want,
               const char *code);

/* Check the kind and (when not NULL) the code of a store answer; clears err. */
#define EXPECT(rc, err, want, code) expect_rc(__FILE__, __LINE__, (rc), (err), (want), (code))
#define EXPECT_OK(rc, err) EXPECT((rc), (err), SP_STORE_OK, NULL)

/* create + first commit + claim of the run's invocation, at the clock's now. */
void drive_to_claim(store_env *e, const sp_run_key *key, const char *worker, uint64_t lease_ms,
                    sp_claim *claim);

/* True when scan_due (one full page) lists an item with this ID. */
bool due_has(store_env *e, const char *id);

/* ---- races: n threads start together and record their answers ---- */

typedef sp_store_rc (*race_fn)(sp_store *s, void *arg, sp_disposition *d, uint64_t *value,
                               sp_error *err);

typedef struct race_result {
    sp_store_rc rc;
    sp_disposition disposition;
    uint64_t value; /* an op-specific number (sequence, fence, revision, ...) */
    char code[SP_CODE_MAX];
} race_result;

/* Run fns[i](stores alternating a/b, args[i]) on n threads at once. */
void race(store_env *e, size_t n, race_fn const *fns, void *const *args, race_result *out);

/* Count the answers with this kind and disposition. */
size_t race_count(const race_result *r, size_t n, sp_store_rc rc, sp_disposition d);

/* Every scenario of the suite. */
void store_s04_result_after_expiry(store_env *e);
void store_s05_heartbeat_deadline(store_env *e);
void store_s06_event_id_conflict(store_env *e);
void store_s07_concurrent_appends(store_env *e);
void store_s08_invalid_second_command(store_env *e);
void store_s09_not_before(store_env *e);
void store_s10_fences(store_env *e);
void store_s11_quarantine(store_env *e);
void store_s12_finish_expire_race(store_env *e);
void store_s13_create_repeated(store_env *e);
void store_s14_reserved_and_oversize(store_env *e);
void store_x01_scans_and_cursors(store_env *e);
void store_x02_holds_and_deadlines(store_env *e);
void store_x03_blobs_secret_packages(store_env *e);
void store_x04_request_validation(store_env *e);
void store_x05_held_attempts(store_env *e);
void store_b01_batches(store_env *e);
void store_t01_timers_and_cancel(store_env *e);
void store_s15_settle(store_env *e);
void store_l01_logs(store_env *e);

#endif
