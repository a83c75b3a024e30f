/*
 * native.h - functions registered by the embedding process, run by the
 * `native` action kind ({"kind":"native","function":"<name>"}, engine.md §5).
 *
 * What it is for: tests and embedders give spore plain C functions to call
 * as activities. This header is written to become public as is: the
 * function type and the report calls below are the whole contract; the call
 * object is opaque so it can grow without breaking embedders.
 *
 *   static int charge(void *user, const char *input, size_t len, sp_native_call *call)
 *   {
 *       ... do the work, idempotently keyed by sp_native_effect_key(call) ...
 *       return sp_native_succeed(call, "charged", "{\"id\":7}", 8);
 *   }
 *   sp_native_register(registry, "charge", charge, NULL, &err);
 *
 * Contract of a native function:
 * - `input` is the canonical input JSON (`len` bytes, NUL-terminated).
 * - It reports exactly one result: sp_native_succeed (outcome NULL = "ok";
 *   output_json NULL = null), sp_native_fail (code, message, retryable) or
 *   sp_native_unknown (it cannot tell whether its effect happened). The
 *   strings are copied; a later report replaces an earlier one.
 * - It returns 0. A non-zero return means "I could not run" and becomes a
 *   retryable Failure `native.failed` whatever was reported. Returning 0
 *   without a report is a non-retryable Failure `native.no-result`.
 * - It runs on a worker thread, possibly concurrently with itself: `user`
 *   is shared. It should return promptly once sp_native_stop_requested()
 *   becomes true (lost lease, shutdown), reporting unknown unless it knows
 *   its effect did not happen.
 * - The output must be canonical-domain JSON (any whitespace/key order, no
 *   floats, integers within +-(2^53-1)); else `native.malformed-output`.
 *   An outcome or code that is empty or not valid UTF-8, an outcome over
 *   256 bytes or a code over 63 bytes is `native.malformed-output` too. A
 *   message is for people: it is repaired (U+FFFD) and cut to 1000 bytes.
 *
 * What it must never do: call a function under a name it was not registered
 * with, let a lookup race a registration, or pass an unchecked output on.
 */
#ifndef SPORE_RUNNERS_NATIVE_H
#define SPORE_RUNNERS_NATIVE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "runners/runner.h"

#define SP_NATIVE_NAME_MAX 128 /* bytes in a function name */

typedef struct sp_native_call sp_native_call; /* opaque, valid during the call */
typedef struct sp_native_registry sp_native_registry;

typedef int (*sp_native_fn)(void *user, const char *input_json, size_t input_len,
                            sp_native_call *call);

/* ---- reporting, from inside a native function (0, or -1 out of memory) ---- */
int sp_native_succeed(sp_native_call *call, const char *outcome, const char *output_json,
                      size_t output_len);
int sp_native_fail(sp_native_call *call, const char *code, const char *message, bool retryable);
int sp_native_unknown(sp_native_call *call, const char *code, const char *message);

/* ---- what the function may know about its attempt ---- */
const char *sp_native_run_id(const sp_native_call *call);
const char *sp_native_node_id(const sp_native_call *call);
const char *sp_native_invocation_id(const sp_native_call *call);
const char *sp_native_effect_key(const sp_native_call *call); /* same on every attempt */
uint32_t sp_native_attempt(const sp_native_call *call);
bool sp_native_stop_requested(const sp_native_call *call);
int sp_native_stop_fd(const sp_native_call *call); /* readable once stopped; -1 if none */

/* ---- the registry (thread-safe: registering while others look up is fine) ---- */
sp_native_registry *sp_native_registry_new(void);
void sp_native_registry_free(sp_native_registry *registry);

/* Register `fn` under `name` (1..128 bytes of valid UTF-8). Errors:
 * native.invalid-name, native.duplicate, runtime.out-of-memory. */
int sp_native_register(sp_native_registry *registry, const char *name, sp_native_fn fn,
                       void *user, sp_error *err);

/* True (and *fn, *user filled) when `name` is registered. */
/* A function that returns within microseconds and never blocks: its
 * attempts run on the engine's loop thread as soon as their claim commits,
 * with no hand-off to an attempt thread (step-path.md §4). */
#define SP_NATIVE_INLINE 1u
int sp_native_register_with(sp_native_registry *registry, const char *name, sp_native_fn fn,
                            void *user, unsigned flags, sp_error *err);

bool sp_native_lookup(const sp_native_registry *registry, const char *name, sp_native_fn *fn,
                      void **user);

/* One attempt of a native action (what sp_native_runner's run does): the
 * function registered in ctx->natives under the action's "function". */
int sp_native_run(const sp_runner_ctx *ctx, const char *action_id, const json_t *action,
                  const json_t *input, sp_activity_output *out);

#endif
