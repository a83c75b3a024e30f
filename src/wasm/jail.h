/*
 * jail.h - one runner call in a jailed child process (runners.md §4).
 *
 * What it is for: the worker side of a call. It starts the spore binary
 * again (sp_jail_binary) as `spore __wasm-jail` with one socketpair
 * as the child's only descriptor (fd 3), sends it the sealed module and the
 * call, serves the child's host imports through the caller's callbacks, and
 * enforces the call's wall-clock limit and the caller's stop signal by
 * SIGKILLing the child. The child (jail_child.c) loads the module, sets
 * resource limits and a seccomp filter, instantiates it in a fresh
 * instance, runs the export and sends the response.
 *
 * Any way the child ends - a response, a trap, a crash, a seccomp kill, the
 * CPU limit, a timeout - is reported as an sp_jail_end; the worker is never
 * taken down by it, and the child is always reaped.
 *
 * What it must never do: let the child inherit any descriptor but its end
 * of the socketpair, wait for the child past the deadline, or leave it
 * unreaped.
 */
#ifndef SPORE_WASM_JAIL_H
#define SPORE_WASM_JAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_JAIL_FD 3
#define SP_JAIL_SUBCOMMAND "__wasm-jail"
/* The jail program beside spore (src/wasm/jail_main.c) and the revision of
 * the frames it speaks (protocol.h): the worker passes the revision as the
 * program's second argument, and a program of another revision refuses the
 * call with a load error instead of misreading it. Change it with the frames. */
#define SP_JAIL_PROGRAM "spore-wasm-jail"
#define SP_JAIL_PROTOCOL "1"
/* The jail program's whole environment (jail.c, spawn_program). */
#define SP_JAIL_ENVIRONMENT "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"

typedef struct sp_jail_host {
    void *ctx;
    /* An import (sp_world_import number) with its request bytes and the
     * runner's reply capacity. Return 0 with *status (reply length >= 0, or
     * -1 / -2 / -3) and *reply (malloc'd, may be NULL when empty) to answer;
     * return 1 to end the call at once (the host recorded why: an ungranted
     * request). `deadline_ms` (CLOCK_MONOTONIC) bounds the operation. */
    int (*import)(void *ctx, int import, const char *request, size_t len, uint32_t cap,
                  uint64_t deadline_ms, int32_t *status, char **reply, size_t *reply_len);
    /* A `log` line (at most SP_JAIL_LOG_MAX bytes, not NUL-terminated). */
    void (*log)(void *ctx, int32_t level, const char *text, size_t len);
    /* The caller wants the call to end (lease lost, shutdown). */
    bool (*stopped)(void *ctx);
    int stop_fd; /* readable when stopped() may have become true; -1: poll */
} sp_jail_host;

typedef struct sp_jail_call {
    const void *module;
    size_t module_len;
    bool describe;           /* only load the module and describe it (validation) */
    const char *export_name; /* NULL: instantiate only (validation at start) */
    const char *request;     /* canonical JSON */
    size_t request_len;
    uint64_t timeout_ms;     /* callTimeoutMs, host imports included */
} sp_jail_call;

typedef enum sp_jail_end {
    SP_JAIL_DONE,         /* response bytes */
    SP_JAIL_READY,        /* instantiated (no call) */
    SP_JAIL_DESCRIBED,    /* response: the module's description (world.h) */
    SP_JAIL_TRAP,         /* a trap, out of memory, stack exhausted: message */
    SP_JAIL_CRASHED,      /* the child died otherwise (signal, seccomp, limits) */
    SP_JAIL_TIMEOUT,      /* timeout_ms passed: the child was killed */
    SP_JAIL_STOPPED,      /* the caller's stop: the child was killed */
    SP_JAIL_BAD_RESPONSE, /* a response outside memory or over 1 MiB */
    SP_JAIL_LOAD_ERROR,   /* the module does not load */
    SP_JAIL_HOST_ENDED,   /* the host ended the call (ungranted) */
    SP_JAIL_SPAWN_FAILED, /* no child could be started */
} sp_jail_end;

typedef struct sp_jail_result {
    sp_jail_end end;
    char *response; /* SP_JAIL_DONE: malloc'd, NUL-terminated */
    size_t response_len;
    char message[512];
    uint64_t elapsed_ms;
} sp_jail_result;

/* The binary the jail runs: $SPORE_JAIL_BIN when set (a spore binary, run
 * as `spore __wasm-jail`, or a file named SP_JAIL_PROGRAM); else the jail
 * program SP_JAIL_PROGRAM beside this process's executable; else this very
 * process when it is the spore executable (sp_jail_use_self, called by its
 * main); else a `spore` beside this process's executable (embedders).
 * *program tells whether it is the jail program. False when there is none. */
bool sp_jail_binary(char *out, size_t n, bool *program);
void sp_jail_use_self(void);

/* Run one call. Always fills `res` (free with sp_jail_result_free). */
void sp_jail_run(const sp_jail_call *call, const sp_jail_host *host, sp_jail_result *res);
void sp_jail_result_free(sp_jail_result *res);

const char *sp_jail_end_name(sp_jail_end e);

/* The child: `spore __wasm-jail` (src/cli/main.c hands over here). Serves
 * one call on SP_JAIL_FD and returns the process exit status. */
int sp_jail_child_main(void);

#endif
