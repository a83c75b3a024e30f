/*
 * component_handle.h - sealed process handles (runners.md §5).
 *
 * What it is for: process_start answers a runner with
 *   {"pid", "started", "boot", "program", "run", "invocation", "mac"}
 * where `started` is the process start time from /proc (decimal string of
 * clock ticks since boot), `boot` the boot ID, and `mac` the lowercase hex
 * HMAC-SHA-256 (digest/hmac.h) over the canonical JSON of the other six
 * members, keyed with the store's secret that every worker of the store
 * shares. process_alive and process_signal open a handle only when its MAC
 * verifies and its run and invocation are the calling step's.
 *
 * What it must never do: accept a handle whose MAC does not verify (the
 * comparison is constant-time), or one of another run or invocation.
 */
#ifndef SPORE_RUNNERS_COMPONENT_HANDLE_H
#define SPORE_RUNNERS_COMPONENT_HANDLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define SP_BOOT_ID_MAX 64

typedef struct sp_process_handle {
    int64_t pid;
    uint64_t started;
    char boot[SP_BOOT_ID_MAX + 1];
} sp_process_handle;

/* This machine's boot ID (/proc/sys/kernel/random/boot_id), "" if unknown. */
const char *sp_boot_id(void);

json_t *sp_handle_seal(const unsigned char key[32], const sp_process_handle *p,
                       const char *program, const char *run_id, const char *invocation_id);

/* True when `h` is a handle this store's engine sealed for this run and
 * invocation; fills `out`. */
bool sp_handle_open(const unsigned char key[32], const json_t *h, const char *run_id,
                    const char *invocation_id, sp_process_handle *out);

#endif
