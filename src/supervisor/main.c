/*
 * main.c - the supervisor program: one command in its own process group
 * (engine.md §5; the design is in supervisor.h, the wire in protocol.h).
 *
 * It is built as a small static executable, carried inside libspore
 * (image.c) and started by the worker with posix_spawn (launch.c) in a new
 * process group. It decodes its argument vector, places the descriptors,
 * holds PR_SET_PDEATHSIG(SIGTERM) against the worker (acting only when the
 * worker process is really gone: the death signal follows the spawning
 * *thread*), forks the command, which holds PR_SET_PDEATHSIG(SIGKILL)
 * against this program, reports the command's wait status (or where its
 * start failed) on the report pipe and SIGKILLs the whole group, itself
 * included.
 *
 * What it must never do: link anything but libc (it runs without libspore),
 * run a shell, let a descriptor other than the command's stdio and the
 * passed ones reach the command, or outlive its worker with the group alive.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor/protocol.h"

typedef struct plan {
    char *const *argv;
    char *const *paths; /* exec candidates */
    const char *cwd;
    int in_r, out_w, err_w, rep_w;
    pid_t worker;
    int pass[SP_SUP_PASS_MAX]; /* handed over at SP_SUP_PASS_FD + i */
    size_t npass;
} plan;

extern char **environ;

static pid_t watched_parent;

static void report(int fd, int type, int step, int value)
{
    sp_sup_report r = {type, step, value};
    while (write(fd, &r, sizeof r) < 0 && errno == EINTR) {
    }
}

_Noreturn static void fail(int fd, int step)
{
    report(fd, SP_SUP_REPORT_ERRNO, step, errno);
    _exit(127);
}

/* ---------------------------------------------------------------------------
 * The argument vector (protocol.h)
 */

static bool number(const char *s, long max, long *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 0 || v > max)
        return false;
    *out = v;
    return true;
}

static bool descriptor(const char *s, int *fd)
{
    long v;
    if (!number(s, INT_MAX, &v))
        return false;
    *fd = (int)v;
    return true;
}

/* Where the next list starts, after `count` then that many entries; NULL
 * when the vector is too short. */
static char **list(char **at, long max, long *count)
{
    if (!*at || !number(*at, max, count))
        return NULL;
    for (long i = 1; i <= *count; i++)
        if (!at[i])
            return NULL;
    return at + 1 + *count;
}

static bool decode(int argc, char **argv, plan *p)
{
    long worker, npass, npaths;
    if (argc <= SP_SUP_ARG_NPASS || !number(argv[SP_SUP_ARG_WORKER], INT_MAX, &worker) ||
        !descriptor(argv[SP_SUP_ARG_STDIN], &p->in_r) ||
        !descriptor(argv[SP_SUP_ARG_STDOUT], &p->out_w) ||
        !descriptor(argv[SP_SUP_ARG_STDERR], &p->err_w) ||
        !descriptor(argv[SP_SUP_ARG_REPORT], &p->rep_w))
        return false;
    p->worker = (pid_t)worker;
    char **at = list(argv + SP_SUP_ARG_NPASS, SP_SUP_PASS_MAX, &npass);
    if (!at)
        return false;
    for (long i = 0; i < npass; i++)
        if (!descriptor(argv[SP_SUP_ARG_NPASS + 1 + i], &p->pass[i]))
            return false;
    p->npass = (size_t)npass;
    char **paths = at;
    at = list(paths, INT_MAX, &npaths);
    if (!at || npaths < 1 || !at[0] || !at[1])
        return false;
    const char *cwd = at[0];
    if (cwd[0] == SP_SUP_CWD_MARK)
        p->cwd = cwd + 1;
    else if (strcmp(cwd, SP_SUP_NO_CWD) == 0)
        p->cwd = NULL;
    else
        return false;
    p->paths = paths + 1;
    at[0] = NULL; /* the candidates end where the directory was */
    p->argv = at + 1;
    return true;
}

/* ---------------------------------------------------------------------------
 * Signals and descriptors
 */

/* The death signal: it also fires when only the spawning thread ended, so
 * act only when the worker process itself is gone (we were reparented). */
static void on_term(int sig)
{
    (void)sig;
    if (getppid() != watched_parent) {
        kill(0, SIGKILL);
        _exit(128 + SIGKILL);
    }
}

static bool keeps_default(int sig)
{
    switch (sig) {
    case SIGCHLD: case SIGSEGV: case SIGBUS: case SIGFPE:
    case SIGILL: case SIGTRAP: case SIGABRT: case SIGSYS:
        return true;
    default:
        return false;
    }
}

/* Supervisor: ignore what is not its business, SIGTERM = death check.
 * Command: every disposition back to default (ignored ones survive exec). */
static void set_signals(bool supervisor)
{
    for (int s = 1; s < NSIG; s++) {
        if (s == SIGKILL || s == SIGSTOP)
            continue;
        struct sigaction sa = {0};
        sa.sa_handler = (!supervisor || keeps_default(s)) ? SIG_DFL : SIG_IGN;
        if (supervisor && s == SIGTERM) {
            sa.sa_handler = on_term;
            sigfillset(&sa.sa_mask);
        }
        sigaction(s, &sa, NULL); /* libc-reserved signals fail: fine */
    }
}

/* stdin/stdout/stderr from the pipes, the report pipe at SP_SUP_REPORT_FD
 * (close-on-exec: the command holds it only until its execve), the passed
 * descriptors at SP_SUP_PASS_FD + i, and no other descriptor (whatever the
 * worker held without close-on-exec). Every pipe end is above 2 (the worker
 * makes them so); a passed descriptor may be anywhere, so all of them are
 * first moved above every target: placing one descriptor never overwrites
 * the source of another. */
static int place_fds(const plan *p)
{
    int moved[SP_SUP_PASS_MAX];
    int top = SP_SUP_PASS_FD + (int)p->npass;
    for (size_t i = 0; i < p->npass; i++)
        if ((moved[i] = fcntl(p->pass[i], F_DUPFD_CLOEXEC, top)) < 0)
            return -1;
    if (dup2(p->in_r, 0) < 0 || dup2(p->out_w, 1) < 0 || dup2(p->err_w, 2) < 0)
        return -1;
    if (p->rep_w != SP_SUP_REPORT_FD && dup3(p->rep_w, SP_SUP_REPORT_FD, O_CLOEXEC) < 0)
        return -1;
    if (fcntl(SP_SUP_REPORT_FD, F_SETFD, FD_CLOEXEC) < 0)
        return -1;
    for (size_t i = 0; i < p->npass; i++)
        if (dup2(moved[i], SP_SUP_PASS_FD + (int)i) < 0) /* without close-on-exec */
            return -1;
    if (close_range((unsigned)top, ~0U, 0) == 0)
        return 0;
    struct rlimit rl;
    rlim_t max = 1 << 20;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < max)
        max = rl.rlim_cur;
    for (rlim_t fd = (rlim_t)top; fd < max; fd++)
        close((int)fd);
    return 0;
}

/* ---------------------------------------------------------------------------
 * The command, and the supervisor's watch over it
 */

/* execvp's search without its allocation: EACCES anywhere wins over ENOENT;
 * an error other than "not here" ends the search. */
_Noreturn static void exec_command(const plan *p, pid_t supervisor)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL))
        fail(SP_SUP_REPORT_FD, SP_SUP_SIGNALS);
    if (getppid() != supervisor)
        _exit(127);
    set_signals(false);
    if (p->cwd && chdir(p->cwd))
        fail(SP_SUP_REPORT_FD, SP_SUP_CHDIR);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    bool eacces = false;
    for (char *const *c = p->paths; *c; c++) {
        execve(*c, p->argv, environ);
        if (errno == EACCES)
            eacces = true;
        else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV &&
                 errno != ETIMEDOUT)
            break;
    }
    if (eacces)
        errno = EACCES;
    fail(SP_SUP_REPORT_FD, SP_SUP_EXEC);
}

_Noreturn static void supervise(const plan *p)
{
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &all, NULL);
    watched_parent = p->worker;
    if (setpgid(0, 0)) /* the spawn made the group already: a no-op then */
        fail(p->rep_w, SP_SUP_SETPGID);
    if (place_fds(p))
        fail(p->rep_w, SP_SUP_FDS);
    set_signals(true);
    if (prctl(PR_SET_PDEATHSIG, SIGTERM))
        fail(SP_SUP_REPORT_FD, SP_SUP_SIGNALS);
    if (getppid() != p->worker) /* the worker died before prctl: start nothing */
        _exit(127);
    pid_t self = getpid();
    pid_t cmd = fork();
    if (cmd < 0)
        fail(SP_SUP_REPORT_FD, SP_SUP_FORK);
    if (cmd == 0)
        exec_command(p, self);
    sigprocmask(SIG_SETMASK, &none, NULL); /* a pending death signal runs now */
    close(0); /* the pipes now belong to the command: EOF and EPIPE follow it */
    close(1);
    close(2);
    int status;
    while (waitpid(cmd, &status, 0) < 0)
        if (errno != EINTR) {
            kill(0, SIGKILL); /* cannot tell how it ended: report nothing */
            _exit(127);
        }
    report(SP_SUP_REPORT_FD, SP_SUP_REPORT_STATUS, 0, status);
    kill(0, SIGKILL); /* stragglers, and this supervisor */
    _exit(0);
}

int main(int argc, char **argv)
{
    static plan p;
    prctl(PR_SET_NAME, SP_SUP_PROGRAM_NAME); /* ps shows it so, not as the memfd's number */
    if (!decode(argc, argv, &p)) {
        static const char msg[] = SP_SUP_PROGRAM_NAME
            ": started only by a spore worker, with the arguments of "
            "src/supervisor/protocol.h\n";
        (void)!write(2, msg, sizeof msg - 1);
        return 127;
    }
    supervise(&p);
}
