/*
 * jail_child.c - the jailed runner process (`spore __wasm-jail`, see
 * jail.h): it reads the module and the call from fd 3, drops to resource
 * limits and a seccomp filter, loads the module (or only describes it for
 * validation), instantiates a fresh instance, runs the export and sends the
 * response. Every host import
 * becomes an IMPORT message; the worker answers it (or kills this process).
 *
 * The seccomp filter, installed after the module's bytes arrived and before
 * they are parsed (stricter than "after the module is loaded"), allows reading
 * and writing fd 3 only, memory management, futex, the clock and exit;
 * anything else kills the process (SIGSYS). Limits: address space (not in
 * AddressSanitizer builds, whose shadow memory needs terabytes of it), CPU
 * seconds (a backstop to the worker's wall-clock kill), no new descriptors,
 * no file writes, no processes, no core dumps. In sanitizer builds the
 * filter also lets the sanitizer runtime make its pipe (it probes memory
 * with one) and write its reports.
 *
 * What it must never do: open a file, write anywhere but fd 3, trust a
 * pointer or length from the runner without checking it against its
 * memory, or exit through atexit handlers (it leaves with _exit).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <jansson.h>

#include "wasm/engine.h"
#include "wasm/jail.h"
#include "wasm/protocol.h"
#include "wasm/world.h"

/* A sanitizer's runtime maps terabytes of shadow memory: no address-space
 * limit under AddressSanitizer or ThreadSanitizer (builds for the tests,
 * never a release). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define JAIL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define JAIL_SANITIZED 1
#endif
#endif
#ifndef JAIL_SANITIZED
#define JAIL_SANITIZED 0
#endif

#define JAIL_ADDRESS_SPACE (1024ull << 20) /* module + 64 MiB memory + the interpreter */

/* ---- the module's description (mode "describe") ---- */

static json_t *types_json(const sp_wasm_valtype *t, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t i = 0; a && i < n && i < SP_WASM_MAX_SIG; i++)
        json_array_append_new(a, json_string(sp_world_type_name(t[i])));
    return a;
}

static json_t *extern_json(const sp_wasm_extern *e)
{
    return json_pack("{s:s,s:s,s:s,s:o,s:o,s:I,s:I,s:I,s:I,s:b,s:b,s:b}", "module", e->module,
                     "name", e->name, "kind", sp_world_kind_name(e->kind), "params",
                     types_json(e->params, e->nparams), "results",
                     types_json(e->results, e->nresults), "nparams", (json_int_t)e->nparams,
                     "nresults", (json_int_t)e->nresults, "min",
                     (json_int_t)(e->min_pages > (1u << 30) ? (1u << 30) : e->min_pages), "max",
                     (json_int_t)(e->max_pages > (1u << 30) ? (1u << 30) : e->max_pages),
                     "hasMax", e->has_max, "shared", e->shared, "is64", e->is64);
}

char *sp_world_describe(const sp_wasm_module *m, size_t *len)
{
    json_t *imports = json_array(), *exports = json_array();
    for (size_t i = 0; imports && i < sp_wasm_import_count(m); i++)
        json_array_append_new(imports, extern_json(sp_wasm_import(m, i)));
    for (size_t i = 0; exports && i < sp_wasm_export_count(m); i++)
        json_array_append_new(exports, extern_json(sp_wasm_export(m, i)));
    json_t *doc = json_pack("{s:o,s:o}", "imports", imports, "exports", exports);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (text)
        *len = strlen(text);
    return text;
}

typedef struct child {
    int fd;
    bool trial; /* instantiate only: imports answer -3 */
    int *imports; /* module import number -> world import, -1 unknown */
} child;

_Noreturn static void leave(int fd, uint8_t type, const char *text, size_t len)
{
    sp_frame_write(fd, type, text, len, NULL, 0, 0);
    _exit(0);
}

_Noreturn static void leave_text(int fd, uint8_t type, const char *text)
{
    leave(fd, type, text, strlen(text));
}

static int limit(int resource, rlim_t value)
{
    struct rlimit rl = {value, value};
    return setrlimit(resource, &rl);
}

static int set_limits(uint32_t timeout_ms)
{
    rlim_t cpu = timeout_ms / 1000u + 2u;
    if (limit(RLIMIT_CPU, cpu) || limit(RLIMIT_FSIZE, 0) || limit(RLIMIT_NOFILE, SP_JAIL_FD + 1) ||
        limit(RLIMIT_NPROC, 0) || limit(RLIMIT_CORE, 0) || limit(RLIMIT_MEMLOCK, 0))
        return -1;
    if (!JAIL_SANITIZED && limit(RLIMIT_AS, JAIL_ADDRESS_SPACE))
        return -1;
    return 0;
}

static int allow(scmp_filter_ctx sc, int nr)
{
    return seccomp_rule_add(sc, SCMP_ACT_ALLOW, nr, 0);
}

static int allow_fd(scmp_filter_ctx sc, int nr)
{
    struct scmp_arg_cmp fd_is_jail = {.arg = 0, .op = SCMP_CMP_EQ, .datum_a = SP_JAIL_FD, .datum_b = 0};
    return seccomp_rule_add(sc, SCMP_ACT_ALLOW, nr, 1, fd_is_jail);
}

static int set_seccomp(void)
{
    scmp_filter_ctx sc = seccomp_init(SCMP_ACT_KILL_PROCESS);
    if (!sc)
        return -1;
    int rc = allow_fd(sc, SCMP_SYS(read)) | allow_fd(sc, SCMP_SYS(write)) |
             allow_fd(sc, SCMP_SYS(sendto)) | allow_fd(sc, SCMP_SYS(recvfrom)) |
             allow(sc, SCMP_SYS(mmap)) | allow(sc, SCMP_SYS(munmap)) |
             allow(sc, SCMP_SYS(mremap)) | allow(sc, SCMP_SYS(brk)) |
             allow(sc, SCMP_SYS(madvise)) | allow(sc, SCMP_SYS(mprotect)) |
             allow(sc, SCMP_SYS(futex)) | allow(sc, SCMP_SYS(exit)) |
             allow(sc, SCMP_SYS(exit_group)) | allow(sc, SCMP_SYS(rt_sigreturn)) |
             allow(sc, SCMP_SYS(rt_sigprocmask)) | allow(sc, SCMP_SYS(clock_gettime)) |
             allow(sc, SCMP_SYS(gettimeofday)) | allow(sc, SCMP_SYS(getpid)) |
             allow(sc, SCMP_SYS(gettid)) | allow(sc, SCMP_SYS(sched_yield)) |
             allow(sc, SCMP_SYS(getrandom));
    if (JAIL_SANITIZED) /* the sanitizer runtime probes memory through a pipe and reports on fd 2 */
        rc |= allow(sc, SCMP_SYS(pipe2)) | allow(sc, SCMP_SYS(close)) |
              allow(sc, SCMP_SYS(write)) | allow(sc, SCMP_SYS(read)) |
              allow(sc, SCMP_SYS(sigaltstack)) | allow(sc, SCMP_SYS(rt_sigaction));
    if (rc == 0)
        rc = seccomp_load(sc);
    seccomp_release(sc);
    return rc;
}

static uint32_t u32(uint64_t v) { return (uint32_t)v; }

static bool in_memory(uint64_t size, uint32_t ptr, uint32_t len)
{
    return (uint64_t)ptr + len <= size;
}

static int host(void *ctx, sp_wasm_instance *inst, size_t index, const uint64_t *args,
                uint64_t *results, char *trap, size_t n)
{
    child *c = ctx;
    int w = c->imports[index];
    if (w < 0) {
        snprintf(trap, n, "import %zu is not part of the world", index);
        return -1;
    }
    uint64_t size = 0;
    uint8_t *mem = inst ? sp_wasm_memory(inst, &size) : NULL;
    if (w == SP_IMPORT_LOG) {
        uint32_t ptr = u32(args[1]), len = u32(args[2]);
        if (!mem || c->trial)
            return 0;
        if (!in_memory(size, ptr, len)) {
            snprintf(trap, n, "log: (ptr, len) outside the runner's memory");
            return -1;
        }
        unsigned char head[4];
        sp_put_u32(head, u32(args[0]));
        sp_frame_write(c->fd, SP_FRAME_LOG, head, 4, mem + ptr,
                       len > SP_JAIL_LOG_MAX ? SP_JAIL_LOG_MAX : len, 0);
        return 0;
    }
    uint32_t ptr = u32(args[0]), len = u32(args[1]), out = u32(args[2]), cap = u32(args[3]);
    if (!mem || c->trial) {
        results[0] = (uint32_t)-3;
        return 0;
    }
    if (!in_memory(size, ptr, len) || !in_memory(size, out, cap) || len > SP_JAIL_MESSAGE_MAX) {
        results[0] = (uint32_t)-2;
        return 0;
    }
    unsigned char head[8];
    sp_put_u32(head, (uint32_t)w);
    sp_put_u32(head + 4, cap);
    uint8_t type = 0;
    char *reply = NULL;
    size_t rlen = 0;
    if (sp_frame_write(c->fd, SP_FRAME_IMPORT, head, 8, mem + ptr, len, 0) ||
        sp_frame_read(c->fd, &type, &reply, &rlen, SP_JAIL_FRAME_MAX) || type != SP_FRAME_REPLY ||
        rlen < 4) {
        free(reply);
        _exit(3); /* the worker is gone or confused: nothing sensible is left to do */
    }
    int32_t status = (int32_t)sp_get_u32((unsigned char *)reply);
    size_t body = rlen - 4;
    if ((status >= 0 || status == -3) && body <= cap && body > 0) {
        mem = sp_wasm_memory(inst, &size); /* unchanged: no runner code ran */
        memcpy(mem + out, reply + 4, body);
    }
    if (status >= 0 && body > cap)
        status = -1;
    results[0] = (uint32_t)status;
    free(reply);
    return 0;
}

/* CALL payload: u32 timeout, u8 mode, u32 name length, name, request. */
typedef struct call_msg {
    uint32_t timeout_ms;
    bool call, describe;
    char name[64];
    const char *request;
    size_t request_len;
} call_msg;

static int parse_call(const char *p, size_t len, call_msg *c)
{
    if (len < 9)
        return -1;
    c->timeout_ms = sp_get_u32((const unsigned char *)p);
    c->call = p[4] == 1;
    c->describe = p[4] == 2;
    uint32_t nlen = sp_get_u32((const unsigned char *)p + 5);
    if (nlen >= sizeof c->name || 9 + (size_t)nlen > len)
        return -1;
    memcpy(c->name, p + 9, nlen);
    c->name[nlen] = '\0';
    c->request = p + 9 + nlen;
    c->request_len = len - 9 - nlen;
    return 0;
}

static void run_call(child *c, sp_wasm_instance *inst, const call_msg *call)
{
    char err[512];
    uint64_t arg = call->request_len, ptr = 0;
    if (sp_wasm_call(inst, "spore_alloc", &arg, 1, &ptr, 1, err, sizeof err))
        leave_text(c->fd, SP_FRAME_TRAP, err);
    uint64_t size = 0;
    uint8_t *mem = sp_wasm_memory(inst, &size);
    if (u32(ptr) == 0)
        leave_text(c->fd, SP_FRAME_TRAP, "spore_alloc returned 0 (out of memory)");
    if (!mem || !in_memory(size, u32(ptr), (uint32_t)call->request_len))
        leave_text(c->fd, SP_FRAME_TRAP, "spore_alloc returned a buffer outside the memory");
    memcpy(mem + u32(ptr), call->request, call->request_len);
    uint64_t args[2] = {u32(ptr), call->request_len}, packed = 0;
    if (sp_wasm_call(inst, call->name, args, 2, &packed, 1, err, sizeof err))
        leave_text(c->fd, SP_FRAME_TRAP, err);
    uint32_t rptr = (uint32_t)(packed >> 32), rlen = (uint32_t)packed;
    mem = sp_wasm_memory(inst, &size);
    if (rlen > SP_JAIL_MESSAGE_MAX)
        leave_text(c->fd, SP_FRAME_BAD, "the response is larger than 1 MiB");
    if (!mem || !in_memory(size, rptr, rlen))
        leave_text(c->fd, SP_FRAME_BAD, "the response (ptr, len) lies outside the runner's memory");
    leave(c->fd, SP_FRAME_DONE, (const char *)mem + rptr, rlen);
}

int sp_jail_child_main(void)
{
    int fd = SP_JAIL_FD;
    uint8_t type = 0;
    char *module = NULL, *callbuf = NULL;
    size_t module_len = 0, call_len = 0;
    call_msg call;
    if (sp_frame_read(fd, &type, &module, &module_len, SP_JAIL_MODULE_MAX) ||
        type != SP_FRAME_MODULE ||
        sp_frame_read(fd, &type, &callbuf, &call_len, SP_JAIL_FRAME_MAX) ||
        type != SP_FRAME_CALL || parse_call(callbuf, call_len, &call))
        _exit(2);
    char err[512];
    /* the limits and the filter first: the module is parsed inside them
     * (jansson seeds its hash function now, from /dev/urandom, not later) */
    json_object_seed(0);
    if (set_limits(call.timeout_ms) || set_seccomp())
        leave_text(fd, SP_FRAME_LOAD_ERROR, "cannot set up the jail's limits and filter");
    sp_wasm_module *m = sp_wasm_load(module, module_len, err, sizeof err);
    if (!m)
        leave_text(fd, SP_FRAME_LOAD_ERROR, err);
    free(module);
    if (call.describe) {
        size_t dlen = 0;
        char *desc = sp_world_describe(m, &dlen);
        if (!desc)
            leave_text(fd, SP_FRAME_LOAD_ERROR, "out of memory");
        leave(fd, SP_FRAME_DESCRIBE, desc, dlen);
    }
    size_t nimports = sp_wasm_import_count(m);
    child c = {fd, !call.call, calloc(nimports + 1, sizeof(int))};
    if (!c.imports)
        leave_text(fd, SP_FRAME_TRAP, "out of memory");
    for (size_t i = 0; i < nimports; i++)
        c.imports[i] = sp_world_import_of(sp_wasm_import(m, i));
    sp_wasm_instance *inst = sp_wasm_instantiate(m, host, &c, err, sizeof err);
    if (!inst)
        leave_text(fd, SP_FRAME_TRAP, err);
    if (!call.call)
        leave_text(fd, SP_FRAME_READY, "");
    run_call(&c, inst, &call);
    _exit(0);
}
