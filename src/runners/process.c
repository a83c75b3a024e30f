/*
 * process.c - one supervised child command (see process.h for the design).
 *
 * Layout: the environment and PATH helpers, then the worker's side of one
 * command: its pipes, the supervisor's start (src/supervisor/, which owns
 * the code that runs in the supervisor and the command), the poll loop and
 * the verdict.
 *
 * Must never: let a pipe end reach the command other than its stdio, leave
 * the supervisor unreaped, signal a group whose leader was already reaped
 * (the pgid could be reused), or take a SIGPIPE in the worker.
 */
#define _GNU_SOURCE
#include "runners/process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/tail.h"
#include "supervisor/supervisor.h"

extern char **environ;

/* ---------------------------------------------------------------------------
 * Environment and PATH (worker side)
 */

static size_t env_name_len(const char *entry)
{
    const char *eq = strchr(entry, '=');
    return eq ? (size_t)(eq - entry) : strlen(entry);
}

/* Append `entry` to v[0..n), replacing an entry of the same name. */
static size_t env_put(char **v, size_t n, char *entry)
{
    size_t len = env_name_len(entry);
    for (size_t i = 0; i < n; i++)
        if (env_name_len(v[i]) == len && memcmp(v[i], entry, len) == 0) {
            free(v[i]);
            v[i] = entry;
            return n;
        }
    v[n] = entry;
    return n + 1;
}

char **sp_proc_env(const char *const *pairs, size_t npairs)
{
    size_t base = 0;
    for (char **e = environ; e && *e; e++)
        base++;
    char **v = calloc(base + npairs + 1, sizeof *v);
    if (!v)
        return NULL;
    size_t n = 0;
    for (char **e = environ; e && *e; e++) {
        if (!strchr(*e, '='))
            continue;
        char *copy = strdup(*e);
        if (!copy)
            goto oom;
        n = env_put(v, n, copy);
    }
    for (size_t i = 0; i < npairs; i++) {
        char *entry;
        if (asprintf(&entry, "%s=%s", pairs[2 * i], pairs[2 * i + 1]) < 0)
            goto oom;
        n = env_put(v, n, entry);
    }
    return v;
oom:
    sp_proc_strv_free(v);
    return NULL;
}

void sp_proc_strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

static const char *env_lookup(const char *const *envp, const char *name)
{
    size_t len = strlen(name);
    for (const char *const *e = envp; *e; e++)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
            return *e + len + 1;
    return NULL;
}

/* The paths execve tries for argv[0], in execvp's order: argv[0] itself when
 * it has a '/', else each PATH entry (empty = current directory). */
static char **exec_candidates(const char *file, const char *const *envp)
{
    if (strchr(file, '/')) {
        char **v = calloc(2, sizeof *v);
        if (v && !(v[0] = strdup(file))) {
            free(v);
            return NULL;
        }
        return v;
    }
    const char *path = env_lookup(envp, "PATH");
    if (!path)
        path = "/bin:/usr/bin"; /* glibc's default */
    size_t n = 1;
    for (const char *p = path; *p; p++)
        n += *p == ':';
    char **v = calloc(n + 1, sizeof *v);
    if (!v)
        return NULL;
    const char *seg = path;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(seg, ":");
        int rc = len ? asprintf(&v[i], "%.*s/%s", (int)len, seg, file)
                     : asprintf(&v[i], "./%s", file);
        if (rc < 0) {
            v[i] = NULL;
            sp_proc_strv_free(v);
            return NULL;
        }
        seg += len + (seg[len] == ':');
    }
    return v;
}

static const char *const STEP_NAMES[SP_SUP_STEP_COUNT] = {
    "setup", "pipe", "fork", "setpgid", "fds", "signals", "chdir", "exec"};

/* ---------------------------------------------------------------------------
 * Worker side: pipes, the poll loop, the verdict.
 */

typedef struct watch {
    const sp_proc_spec *spec;
    sp_proc_result *res;
    int in_r, in_w, out_r, out_w, err_r, err_w, rep_r, rep_w;
    size_t in_off;
    pid_t pgid;
    bool has_deadline;
    uint64_t deadline, drain_until;
    bool killed;
    sp_proc_end killed_as;
    bool have_status, have_errno;
    int status, err_step, err_errno;
    char rep_buf[4 * sizeof(sp_sup_report)];
    size_t rep_len;
    size_t out_max;
    sp_tail err_ring; /* the stderr tail */
    sp_tail out_ring; /* the stdout tail (spec->stdout_tail) */
    uint64_t out_streamed; /* streaming: stdout bytes handed over */
    char scratch[16384];
} watch;

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static int fd_above_stdio(int fd)
{
    if (fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return moved;
}

/* A CLOEXEC pipe whose ends are both above 2, the worker's end non-blocking. */
static int make_pipe(int *rd, int *wr, bool worker_reads)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC))
        return -1;
    *rd = fd_above_stdio(p[0]);
    *wr = fd_above_stdio(p[1]);
    int mine = worker_reads ? *rd : *wr;
    if (*rd < 0 || *wr < 0 || fcntl(mine, F_SETFL, O_NONBLOCK) < 0) {
        int e = errno;
        close_fd(rd);
        close_fd(wr);
        errno = e;
        return -1;
    }
    return 0;
}

static void close_all(watch *w)
{
    int *fds[] = {&w->in_r, &w->in_w, &w->out_r, &w->out_w,
                  &w->err_r, &w->err_w, &w->rep_r, &w->rep_w};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        close_fd(fds[i]);
}

static void spawn_failed(sp_proc_result *res, int step, int e)
{
    res->end = SP_PROC_SPAWN_FAILED;
    res->spawn_step = STEP_NAMES[step];
    res->spawn_errno = e;
}

static void kill_group(watch *w)
{
    if (w->pgid > 0)
        kill(-w->pgid, SIGKILL);
}

/* write() with SIGPIPE held back for this thread and consumed if raised. */
static ssize_t write_no_sigpipe(int fd, const void *data, size_t len)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE);
    ssize_t n = write(fd, data, len);
    int e = errno;
    if (n < 0 && e == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return n;
}

static void feed_stdin(watch *w)
{
    size_t left = w->spec->stdin_len - w->in_off;
    size_t chunk = left < 65536 ? left : 65536;
    ssize_t n = chunk ? write_no_sigpipe(w->in_w, w->spec->stdin_data + w->in_off, chunk) : 0;
    if (n > 0)
        w->in_off += (size_t)n;
    else if (n < 0 && errno != EAGAIN && errno != EINTR)
        close_fd(&w->in_w); /* EPIPE: it closed its stdin; fine */
    if (w->in_off == w->spec->stdin_len)
        close_fd(&w->in_w); /* EOF */
}

/* Streaming stdout: hand the bytes over; a refusal kills the group. */
static void stream_stdout(watch *w)
{
    ssize_t n = read(w->out_r, w->scratch, sizeof w->scratch);
    if (n > 0) {
        w->out_streamed += (uint64_t)n;
        if (!w->spec->on_stdout(w->spec->stream_ctx, w->scratch, (size_t)n)) {
            w->res->aborted = true;
            close_fd(&w->out_r);
            if (!w->killed && !w->have_status) {
                w->killed = true;
                w->killed_as = SP_PROC_STOPPED;
            }
            close_fd(&w->in_w);
            kill_group(w);
        }
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close_fd(&w->out_r);
    }
}

static void read_stdout(watch *w)
{
    if (w->spec->on_stdout) {
        stream_stdout(w);
        return;
    }
    sp_proc_result *res = w->res;
    bool room = res->out_len < w->out_max;
    char *dst = room ? res->out + res->out_len : w->scratch;
    size_t cap = room ? w->out_max - res->out_len : sizeof w->scratch;
    ssize_t n = read(w->out_r, dst, cap);
    if (n > 0)
        sp_tail_put(&w->out_ring, dst, (size_t)n);
    if (n > 0 && room)
        res->out_len += (size_t)n;
    else if (n > 0)
        res->out_over = true;
    else if (n == 0 || (errno != EAGAIN && errno != EINTR))
        close_fd(&w->out_r);
}

static void read_stderr(watch *w)
{
    ssize_t n = read(w->err_r, w->scratch, sizeof w->scratch);
    if (n > 0 && w->spec->on_stderr)
        w->spec->on_stderr(w->spec->stream_ctx, w->scratch, (size_t)n);
    else if (n > 0)
        sp_tail_put(&w->err_ring, w->scratch, (size_t)n);
    else if (n == 0 || (errno != EAGAIN && errno != EINTR))
        close_fd(&w->err_r);
}

static void take_record(watch *w, const sp_sup_report *r)
{
    if (r->type == SP_SUP_REPORT_ERRNO && !w->have_errno && r->step >= 0 &&
        r->step < SP_SUP_STEP_COUNT) {
        w->have_errno = true;
        w->err_step = r->step;
        w->err_errno = r->value;
    } else if (r->type == SP_SUP_REPORT_STATUS && !w->have_status) {
        w->have_status = true;
        w->status = r->value;
        close_fd(&w->in_w);
        kill_group(w); /* stragglers (the supervisor does it too) */
    }
}

/* The supervisor is gone once the report pipe reaches EOF. */
static void report_closed(watch *w)
{
    close_fd(&w->rep_r);
    close_fd(&w->in_w);
    kill_group(w);
    w->drain_until = sp_mono_ms() + SP_PROC_DRAIN_MS;
}

static void read_reports(watch *w)
{
    ssize_t n = read(w->rep_r, w->rep_buf + w->rep_len, sizeof w->rep_buf - w->rep_len);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        report_closed(w);
        return;
    }
    w->rep_len += (size_t)n;
    while (w->rep_len >= sizeof(sp_sup_report)) {
        sp_sup_report r;
        memcpy(&r, w->rep_buf, sizeof r);
        take_record(w, &r);
        w->rep_len -= sizeof r;
        memmove(w->rep_buf, w->rep_buf + sizeof r, w->rep_len);
    }
}

static bool stop_fired(const watch *w)
{
    return w->spec->stop && sp_stop_fired(w->spec->stop);
}

/* Timeout first, then stop (the order of the result table). */
static void check_kill(watch *w, uint64_t now)
{
    if (w->killed || w->have_status || w->rep_r < 0)
        return;
    if (w->has_deadline && now >= w->deadline) {
        w->killed = true;
        w->killed_as = SP_PROC_TIMED_OUT;
    } else if (stop_fired(w)) {
        w->killed = true;
        w->killed_as = SP_PROC_STOPPED;
    }
    if (w->killed) {
        close_fd(&w->in_w);
        kill_group(w);
    }
}

static bool finished(const watch *w, uint64_t now)
{
    if (w->rep_r >= 0)
        return false;
    return (w->out_r < 0 && w->err_r < 0) || now >= w->drain_until || stop_fired(w);
}

static int poll_timeout(const watch *w, uint64_t now)
{
    uint64_t t = UINT64_MAX;
    if (w->rep_r < 0)
        t = w->drain_until > now ? w->drain_until - now : 0;
    else if (w->killed || w->have_status)
        t = 1000; /* the group was SIGKILLed; re-kill while waiting for EOF */
    else if (w->has_deadline)
        t = w->deadline > now ? w->deadline - now : 0;
    if (w->spec->stop && sp_stop_fd(w->spec->stop) < 0 && t > 50)
        t = 50; /* no eventfd: poll the flag */
    return t == UINT64_MAX ? -1 : t > 1000000 ? 1000000 : (int)t;
}

enum { P_IN, P_OUT, P_ERR, P_REP, P_STOP, P_COUNT };

static void poll_once(watch *w, uint64_t now)
{
    struct pollfd pf[P_COUNT];
    int stop_fd = w->spec->stop ? sp_stop_fd(w->spec->stop) : -1;
    bool want_stop = !w->killed && !w->have_status;
    pf[P_IN] = (struct pollfd){w->in_w, POLLOUT, 0};
    pf[P_OUT] = (struct pollfd){w->out_r, POLLIN, 0};
    pf[P_ERR] = (struct pollfd){w->err_r, POLLIN, 0};
    pf[P_REP] = (struct pollfd){w->rep_r, POLLIN, 0};
    pf[P_STOP] = (struct pollfd){want_stop ? stop_fd : -1, POLLIN, 0};
    int n = poll(pf, P_COUNT, poll_timeout(w, now));
    if (n < 0 && errno != EINTR) { /* ENOMEM: back off instead of spinning */
        struct timespec pause = {0, 10 * 1000000};
        nanosleep(&pause, NULL);
    }
    if (n <= 0) {
        if (w->killed || w->have_status)
            kill_group(w);
        return;
    }
    if (pf[P_IN].revents & (POLLOUT | POLLERR | POLLHUP))
        feed_stdin(w);
    if (pf[P_OUT].revents & (POLLIN | POLLERR | POLLHUP))
        read_stdout(w);
    if (pf[P_ERR].revents & (POLLIN | POLLERR | POLLHUP))
        read_stderr(w);
    if (pf[P_REP].revents & (POLLIN | POLLERR | POLLHUP))
        read_reports(w);
}

static void supervise(watch *w)
{
    if (w->spec->stdin_len == 0)
        close_fd(&w->in_w);
    for (;;) {
        uint64_t now = sp_mono_ms();
        check_kill(w, now);
        if (finished(w, now))
            return;
        poll_once(w, now);
    }
}

/* The tails into the result (a copy that fails leaves it empty). */
static void take_tails(watch *w)
{
    sp_proc_result *res = w->res;
    res->err = sp_tail_copy(&w->err_ring, &res->err_len);
    res->err_cut = sp_tail_dropped(&w->err_ring) > 0;
    res->err_total = w->err_ring.total;
    res->out_total = w->out_ring.total;
    if (w->spec->stdout_tail)
        res->out_tail = sp_tail_copy(&w->out_ring, &res->out_tail_len);
}

/* How it ended. A kill we sent loses to an exit the command had already
 * made on its own (the status was on its way). */
static void verdict(watch *w, int leader_status)
{
    sp_proc_result *res = w->res;
    bool exited = w->have_status && WIFEXITED(w->status);
    if (w->have_errno)
        spawn_failed(res, w->err_step, w->err_errno);
    else if (w->killed && !exited)
        res->end = w->killed_as;
    else if (exited) {
        res->end = SP_PROC_EXITED;
        res->exit_code = WEXITSTATUS(w->status);
    } else {
        int st = w->have_status ? w->status : leader_status;
        res->end = SP_PROC_SIGNALED;
        res->signal = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
    }
}

/* What is already buffered in the pipes, when the drain ended early (stop,
 * or an escaped process holding a pipe open). Bounded: 64 reads each. */
static void drain_buffered(watch *w)
{
    for (int i = 0; i < 64 && w->out_r >= 0; i++) {
        size_t before = w->res->out_len;
        bool over = w->res->out_over;
        uint64_t streamed = w->out_streamed;
        read_stdout(w);
        if (w->res->out_len == before && w->res->out_over == over &&
            w->out_streamed == streamed)
            break;
    }
    for (int i = 0; i < 64 && w->err_r >= 0; i++) {
        uint64_t before = w->err_ring.total;
        read_stderr(w);
        if (w->err_ring.total == before)
            break;
    }
}

static void finish(watch *w)
{
    drain_buffered(w);
    close_all(w);
    kill_group(w); /* before the reap: the pgid cannot be reused yet */
    int status = 0;
    while (waitpid(w->pgid, &status, 0) < 0 && errno == EINTR) {
    }
    verdict(w, status);
    take_tails(w);
    w->res->out[w->res->out_len] = '\0';
}

static int prepare(watch *w, sp_supervisor_plan *plan)
{
    const sp_proc_spec *spec = w->spec;
    w->out_max = spec->stdout_max ? spec->stdout_max : SP_PROC_STDOUT_MAX;
    w->res->out = malloc(w->out_max + 1);
    bool rings = sp_tail_init(&w->err_ring, spec->stderr_tail ? spec->stderr_tail
                                                              : SP_PROC_STDERR_TAIL) == 0 &&
                 sp_tail_init(&w->out_ring, spec->on_stdout ? 0 : spec->stdout_tail) == 0;
    char **paths = exec_candidates(spec->argv[0], spec->envp);
    if (!w->res->out || !rings || !paths) {
        sp_proc_strv_free(paths);
        errno = ENOMEM;
        return SP_SUP_SETUP;
    }
    *plan = (sp_supervisor_plan){(char *const *)spec->argv, paths, (char *const *)spec->envp,
                                 spec->cwd, -1, -1, -1, -1, spec->pass_fds, spec->npass_fds};
    if (make_pipe(&w->in_r, &w->in_w, false) || make_pipe(&w->out_r, &w->out_w, true) ||
        make_pipe(&w->err_r, &w->err_w, true) || make_pipe(&w->rep_r, &w->rep_w, true))
        return SP_SUP_PIPE;
    plan->in_r = w->in_r;
    plan->out_w = w->out_w;
    plan->err_w = w->err_w;
    plan->rep_w = w->rep_w;
    return -1;
}

static void watch_init(watch *w, const sp_proc_spec *spec, sp_proc_result *res)
{
    memset(w, 0, offsetof(watch, scratch));
    w->spec = spec;
    w->res = res;
    w->in_r = w->in_w = w->out_r = w->out_w = -1;
    w->err_r = w->err_w = w->rep_r = w->rep_w = -1;
    if (spec->has_timeout) {
        uint64_t t = spec->timeout_ms < UINT64_MAX / 4 ? spec->timeout_ms : UINT64_MAX / 4;
        w->has_deadline = true;
        w->deadline = sp_mono_ms() + t;
    }
}

/* The supervisor starts in its own group (pgid = its pid) before it runs a
 * line of its own, so the group can be killed as soon as this returns. */
static void spawn(watch *w, const sp_supervisor_plan *plan)
{
    pid_t pid = 0;
    sp_sup_step step;
    int e = sp_supervisor_start(plan, &pid, &step);
    close_fd(&w->in_r);
    close_fd(&w->out_w);
    close_fd(&w->err_w);
    close_fd(&w->rep_w);
    if (e) {
        close_all(w);
        spawn_failed(w->res, (int)step, e);
        return;
    }
    w->pgid = w->res->pgid = pid;
    if (w->spec->on_started)
        w->spec->on_started(w->spec->stream_ctx);
    supervise(w);
    finish(w);
}

void sp_proc_run(const sp_proc_spec *spec, sp_proc_result *res)
{
    memset(res, 0, sizeof *res);
    watch *w = malloc(sizeof *w);
    if (!w) {
        spawn_failed(res, SP_SUP_SETUP, ENOMEM);
        return;
    }
    watch_init(w, spec, res);
    sp_supervisor_plan plan = {0};
    int failed_step = prepare(w, &plan);
    if (failed_step >= 0) {
        spawn_failed(res, failed_step, errno);
        close_all(w);
    } else {
        spawn(w, &plan);
    }
    sp_proc_strv_free((char **)plan.paths);
    sp_tail_free(&w->err_ring);
    sp_tail_free(&w->out_ring);
    free(w);
    if (res->end == SP_PROC_SPAWN_FAILED && res->out)
        res->out[res->out_len] = '\0';
}

void sp_proc_result_free(sp_proc_result *res)
{
    free(res->out);
    free(res->err);
    free(res->out_tail);
    memset(res, 0, sizeof *res);
}
