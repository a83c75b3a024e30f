/*
 * jail.c - the worker side of a jailed runner call (see jail.h): spawn,
 * feed, serve imports, enforce the deadline and the stop, reap.
 *
 * The jail program (SP_JAIL_PROGRAM) is started with posix_spawn, which
 * shares no pages with the worker (a fork write-protects every page the
 * worker holds, and the worker then faults on each it writes while the
 * child lives); the program sets its own death signal after its execve,
 * against the worker's PID it is given (jail_main.c). `spore __wasm-jail`,
 * the fallback, is forked and sets it before its execve.
 *
 * Must never: leak a descriptor into the child (it gets fd 3 and nothing
 * else), call anything but async-signal-safe functions between fork and
 * exec (workers are multithreaded), or return before the child is reaped.
 */
#define _GNU_SOURCE
#include "wasm/jail.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "wasm/protocol.h"

const char *sp_jail_end_name(sp_jail_end e)
{
    static const char *const names[] = {"done",          "ready",       "described", "trap",
                                        "crashed",       "timeout",     "stopped",
                                        "bad-response",  "load-error",  "host-ended",
                                        "spawn-failed"};
    return e <= SP_JAIL_SPAWN_FAILED ? names[e] : "?";
}

static atomic_bool USE_SELF;

void sp_jail_use_self(void) { atomic_store(&USE_SELF, true); }

/* `name` in the directory of `exe` (a path), in out. */
static bool beside(const char *exe, const char *name, char *out, size_t n)
{
    const char *slash = strrchr(exe, '/');
    if (!slash)
        return false;
    int dir = (int)(slash - exe);
    return (size_t)snprintf(out, n, "%.*s/%s", dir, exe, name) < n && access(out, X_OK) == 0;
}

bool sp_jail_binary(char *out, size_t n, bool *program)
{
    *program = false;
    const char *env = getenv("SPORE_JAIL_BIN");
    if (env && env[0]) {
        const char *base = strrchr(env, '/');
        *program = strcmp(base ? base + 1 : env, SP_JAIL_PROGRAM) == 0;
        return (size_t)snprintf(out, n, "%s", env) < n && access(out, X_OK) == 0;
    }
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return false;
    exe[len] = '\0';
    if (beside(exe, SP_JAIL_PROGRAM, out, n))
        return *program = true;
    if (atomic_load(&USE_SELF))
        return (size_t)snprintf(out, n, "%s", exe) < n;
    return beside(exe, "spore", out, n);
}

void sp_jail_result_free(sp_jail_result *res)
{
    free(res->response);
    res->response = NULL;
    res->response_len = 0;
}

/* The jail program: fd 3 its only descriptor, every signal at its default
 * and unblocked; its arguments are the subcommand, the frame revision and
 * the worker's PID (jail_main.c). Its environment is one glibc tunable and
 * nothing else: malloc asks for transparent huge pages for what it maps,
 * so the runner's linear memory and the interpreter's stacks, which wabt
 * zero-fills whole at instantiation, fault in 2 MiB at a time instead of
 * 4 KiB (a page fault is dear on a virtual machine: a 6 KiB runner mapped
 * ~10 MiB, and its call took ~30 % less). 0, or an errno. */
static int spawn_program(int sock, const char *exe, pid_t parent, pid_t *pid)
{
    static char jail[] = SP_JAIL_PROGRAM, sub[] = SP_JAIL_SUBCOMMAND,
                revision[] = SP_JAIL_PROTOCOL, tunables[] = SP_JAIL_ENVIRONMENT;
    char worker[24];
    snprintf(worker, sizeof worker, "%ld", (long)parent);
    char *argv[] = {jail, sub, revision, worker, NULL};
    char *envp[] = {tunables, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    if (posix_spawn_file_actions_init(&fa))
        return ENOMEM;
    if (posix_spawnattr_init(&at)) {
        posix_spawn_file_actions_destroy(&fa);
        return ENOMEM;
    }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    /* the socket becomes fd 3 without close-on-exec (when it is fd 3
     * already, glibc's dup2 onto itself clears the flag in the child) */
    int rc = posix_spawn_file_actions_adddup2(&fa, sock, SP_JAIL_FD);
    for (int fd = 0; fd < SP_JAIL_FD && !rc; fd++)
        rc = posix_spawn_file_actions_addclose(&fa, fd);
    if (!rc)
        rc = posix_spawn_file_actions_addclosefrom_np(&fa, SP_JAIL_FD + 1);
    if (!rc)
        rc = posix_spawnattr_setsigmask(&at, &none);
    if (!rc)
        rc = posix_spawnattr_setsigdefault(&at, &all);
    if (!rc)
        rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (!rc)
        rc = posix_spawn(pid, exe, &fa, &at, argv, envp);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* In the forked child: async-signal-safe only (spore: exactly its
 * subcommand). */
_Noreturn static void child_exec(int sock, const char *exe, pid_t parent)
{
    static char spore[] = "spore", sub[] = SP_JAIL_SUBCOMMAND;
    char *argv[] = {spore, sub, NULL};
    char *envp[] = {NULL};
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
        _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++) {
        if (s == SIGKILL || s == SIGSTOP)
            continue;
        struct sigaction sa = {0};
        sa.sa_handler = SIG_DFL;
        sigaction(s, &sa, NULL);
    }
    if (sock != SP_JAIL_FD) {
        if (dup2(sock, SP_JAIL_FD) < 0)
            _exit(127);
    } else if (fcntl(sock, F_SETFD, 0) < 0) {
        _exit(127);
    }
    for (int fd = 0; fd < SP_JAIL_FD; fd++)
        close(fd);
    if (syscall(SYS_close_range, SP_JAIL_FD + 1, ~0U, 0) != 0)
        for (int fd = SP_JAIL_FD + 1; fd < 65536; fd++)
            close(fd);
    execve(exe, argv, envp);
    _exit(127);
}

typedef struct jail {
    const sp_jail_call *call;
    const sp_jail_host *host;
    sp_jail_result *res;
    int fd;
    pid_t pid;
    uint64_t start_ms, deadline_ms;
    sp_frame_reader reader;
    bool over;
} jail;

static void end(jail *j, sp_jail_end e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void end(jail *j, sp_jail_end e, const char *fmt, ...)
{
    if (j->over)
        return;
    j->over = true;
    j->res->end = e;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->res->message, sizeof j->res->message, fmt, ap);
    va_end(ap);
}

static int32_t get_i32(const char *p) { return (int32_t)sp_get_u32((const unsigned char *)p); }

static void serve_import(jail *j, const char *payload, size_t len)
{
    if (len < 8) {
        end(j, SP_JAIL_CRASHED, "the child sent a malformed import message");
        return;
    }
    int import = get_i32(payload);
    uint32_t cap = sp_get_u32((const unsigned char *)payload + 4);
    int32_t status = -3;
    char *reply = NULL;
    size_t reply_len = 0;
    int r = j->host->import(j->host->ctx, import, payload + 8, len - 8, cap, j->deadline_ms,
                            &status, &reply, &reply_len);
    if (r != 0) {
        free(reply);
        end(j, SP_JAIL_HOST_ENDED, "the host ended the call");
        return;
    }
    if (sp_mono_ms() >= j->deadline_ms) {
        free(reply);
        end(j, SP_JAIL_TIMEOUT, "callTimeoutMs passed (%llu ms) during an import",
            (unsigned long long)j->call->timeout_ms);
        return;
    }
    unsigned char head[4];
    sp_put_u32(head, (uint32_t)status);
    if (status < 0 || reply_len > cap)
        reply_len = status == -3 && reply_len <= cap ? reply_len : 0;
    int w = sp_frame_write(j->fd, SP_FRAME_REPLY, head, 4, reply, reply_len, j->deadline_ms);
    free(reply);
    if (w && errno == ETIMEDOUT)
        end(j, SP_JAIL_TIMEOUT, "callTimeoutMs passed (%llu ms)",
            (unsigned long long)j->call->timeout_ms);
    /* another write error: the child is gone; its EOF tells how */
}

static void take_frame(jail *j, uint8_t type, char *payload, size_t len)
{
    switch (type) {
    case SP_FRAME_IMPORT:
        serve_import(j, payload, len);
        break;
    case SP_FRAME_LOG:
        if (len >= 4 && j->host->log)
            j->host->log(j->host->ctx, get_i32(payload), payload + 4,
                         len - 4 > SP_JAIL_LOG_MAX ? SP_JAIL_LOG_MAX : len - 4);
        break;
    case SP_FRAME_DONE:
        if (!j->over) {
            j->res->response = payload;
            j->res->response_len = len;
            payload = NULL;
            end(j, SP_JAIL_DONE, "the runner answered");
        }
        break;
    case SP_FRAME_READY:
        end(j, SP_JAIL_READY, "instantiated");
        break;
    case SP_FRAME_DESCRIBE:
        if (!j->over) {
            j->res->response = payload;
            j->res->response_len = len;
            payload = NULL;
            end(j, SP_JAIL_DESCRIBED, "described");
        }
        break;
    case SP_FRAME_TRAP:
        end(j, SP_JAIL_TRAP, "%.400s", payload);
        break;
    case SP_FRAME_BAD:
        end(j, SP_JAIL_BAD_RESPONSE, "%.400s", payload);
        break;
    case SP_FRAME_LOAD_ERROR:
        end(j, SP_JAIL_LOAD_ERROR, "%.400s", payload);
        break;
    default:
        end(j, SP_JAIL_CRASHED, "the child sent an unknown message");
        break;
    }
    free(payload);
}

static bool stopped(const jail *j)
{
    return j->host->stopped && j->host->stopped(j->host->ctx);
}

/* Serve the child until the call is over. */
static void serve(jail *j)
{
    while (!j->over) {
        uint64_t now = sp_mono_ms();
        if (now >= j->deadline_ms) {
            end(j, SP_JAIL_TIMEOUT, "callTimeoutMs passed (%llu ms); the runner was killed",
                (unsigned long long)j->call->timeout_ms);
            break;
        }
        if (stopped(j)) {
            end(j, SP_JAIL_STOPPED, "stopped by the engine; the runner was killed");
            break;
        }
        struct pollfd pf[2] = {{j->fd, POLLIN, 0}, {j->host->stop_fd, POLLIN, 0}};
        uint64_t wait = j->deadline_ms - now;
        if (j->host->stop_fd < 0 && j->host->stopped && wait > 50)
            wait = 50;
        int n = poll(pf, 2, wait > 1000 ? 1000 : (int)wait);
        if (n <= 0 || !(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        for (;;) {
            uint8_t type;
            char *payload = NULL;
            size_t len = 0;
            int r = sp_frame_feed(&j->reader, j->fd, &type, &payload, &len);
            if (r == 0)
                break;
            if (r < 0) {
                end(j, SP_JAIL_CRASHED, "the runner's process ended without an answer");
                break;
            }
            take_frame(j, type, payload, len);
            if (j->over)
                break;
        }
    }
}

/* The child ended: say how, when nothing else was learned. */
static void reap(jail *j)
{
    kill(j->pid, SIGKILL); /* still unreaped: the PID cannot be reused yet */
    int status = 0;
    while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (j->res->end != SP_JAIL_CRASHED)
        return;
    char how[200] = "";
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *name = sigabbrev_np(sig);
        snprintf(how, sizeof how, ": killed by SIG%s%s", name ? name : "?",
                 sig == SIGSYS    ? " (a system call outside the jail's seccomp filter)"
                 : sig == SIGXCPU ? " (the CPU time limit)"
                 : sig == SIGSEGV ? " (a crash; the address-space limit, perhaps)"
                                  : "");
    } else if (WIFEXITED(status)) {
        snprintf(how, sizeof how, ": exit status %d", WEXITSTATUS(status));
    }
    size_t used = strlen(j->res->message);
    snprintf(j->res->message + used, sizeof j->res->message - used, "%s", how);
}

void sp_jail_run(const sp_jail_call *call, const sp_jail_host *host, sp_jail_result *res)
{
    memset(res, 0, sizeof *res);
    jail j = {.call = call, .host = host, .res = res, .fd = -1, .pid = -1};
    j.reader.max = SP_JAIL_FRAME_MAX;
    j.start_ms = sp_mono_ms();
    j.deadline_ms = j.start_ms + (call->timeout_ms ? call->timeout_ms : 60000);
    char exe[4096];
    bool program;
    int sv[2];
    if (!sp_jail_binary(exe, sizeof exe, &program)) {
        res->end = SP_JAIL_SPAWN_FAILED;
        snprintf(res->message, sizeof res->message,
                 "no spore binary to run the jail (set SPORE_JAIL_BIN)");
        return;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        res->end = SP_JAIL_SPAWN_FAILED;
        snprintf(res->message, sizeof res->message, "cannot set up the jail: %s",
                 strerror(errno));
        return;
    }
    pid_t parent = getpid();
    pid_t pid = -1;
    int e = 0;
    if (program) {
        e = spawn_program(sv[1], exe, parent, &pid);
    } else {
        pid = fork();
        if (pid == 0)
            child_exec(sv[1], exe, parent);
        e = errno;
    }
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        res->end = SP_JAIL_SPAWN_FAILED;
        snprintf(res->message, sizeof res->message, "cannot start the jail: %s", strerror(e));
        return;
    }
    j.fd = sv[0];
    j.pid = pid;
    fcntl(j.fd, F_SETFL, O_NONBLOCK);
    unsigned char head[9];
    sp_put_u32(head, call->timeout_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)call->timeout_ms);
    head[4] = call->describe ? 2 : call->export_name ? 1 : 0;
    const char *name = call->export_name ? call->export_name : "";
    size_t nlen = strlen(name);
    sp_put_u32(head + 5, (uint32_t)nlen);
    char *callbuf = malloc(nlen + call->request_len + 1);
    if (!callbuf) {
        end(&j, SP_JAIL_SPAWN_FAILED, "out of memory");
    } else {
        memcpy(callbuf, name, nlen);
        if (call->request_len)
            memcpy(callbuf + nlen, call->request, call->request_len);
        if (sp_frame_write(j.fd, SP_FRAME_MODULE, call->module, call->module_len, NULL, 0,
                           j.deadline_ms) ||
            sp_frame_write(j.fd, SP_FRAME_CALL, head, sizeof head, callbuf,
                           nlen + call->request_len, j.deadline_ms)) {
            if (errno == ETIMEDOUT)
                end(&j, SP_JAIL_TIMEOUT, "callTimeoutMs passed while sending the module");
            /* else: the child died; serve() reads its EOF */
        }
        free(callbuf);
    }
    serve(&j);
    close(j.fd);
    reap(&j);
    sp_frame_reader_free(&j.reader);
    res->elapsed_ms = sp_mono_ms() - j.start_ms;
}
