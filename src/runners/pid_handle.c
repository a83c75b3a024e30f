/*
 * pid_handle.c - detached processes and their reference handles (see
 * pid_handle.h). Never signals a PID whose start time differs from the
 * handle's.
 */
#define _GNU_SOURCE
#include "runners/pid_handle.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/proc.h"
#include "json/decimal.h"

extern char **environ;

/* Child side after fork: only async-signal-safe calls. */
static void detach_child(const char *const *argv, int log_fd, int report)
{
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (setsid() < 0 || null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 ||
        dup2(log_fd, 2) < 0) {
        int e = errno;
        if (write(report, &e, sizeof e) < 0) { /* nothing more to do */
        }
        _exit(127);
    }
    execvpe(argv[0], (char *const *)argv, environ);
    int e = errno;
    if (write(report, &e, sizeof e) < 0) { /* nothing more to do */
    }
    _exit(127);
}

static json_t *handle_of(pid_t pid, sp_error *err)
{
    char state;
    uint64_t started = 0;
    if (sp_proc_stat(pid, &state, &started) != SP_PROC_STAT_OK) {
        sp_fail(err, "process.spawn", "cannot read /proc/%d/stat of the started job", (int)pid);
        return NULL;
    }
    char text[SP_DECIMAL_MAX_LEN + 1], session[32];
    snprintf(session, sizeof session, "%d", (int)pid);
    json_t *h = json_pack("{s:i,s:s,s:s}", "pid", (int)pid, "started",
                          sp_decimal_format(started, text), "session", session);
    if (!h)
        sp_oom(err);
    return h;
}

json_t *sp_pid_handle_detach(const char *const *argv, const char *log_path, sp_error *err)
{
    int log_fd = open(log_path ? log_path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                      0600);
    int pipefd[2];
    if (log_fd < 0) {
        sp_fail(err, "process.spawn", "cannot open the job log %s: %s", log_path, strerror(errno));
        return NULL;
    }
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        close(log_fd);
        sp_fail(err, "process.spawn", "pipe: %s", strerror(errno));
        return NULL;
    }
    pid_t pid = fork();
    if (pid == 0)
        detach_child(argv, log_fd, pipefd[1]);
    close(log_fd);
    close(pipefd[1]);
    int child_errno = 0;
    ssize_t got = pid > 0 ? read(pipefd[0], &child_errno, sizeof child_errno) : -1;
    close(pipefd[0]);
    if (pid < 0 || got > 0) {
        if (pid > 0)
            waitpid(pid, NULL, 0);
        sp_fail(err, "process.spawn", "cannot start %s: %s", argv[0],
                strerror(pid < 0 ? errno : child_errno));
        return NULL;
    }
    return handle_of(pid, err);
}

static bool handle_fields(const json_t *h, pid_t *pid, uint64_t *started)
{
    const json_t *p = json_object_get(h, "pid");
    if (!json_is_object(h) || !json_is_integer(p) || json_integer_value(p) <= 1 ||
        json_integer_value(p) > INT32_MAX || !json_is_string(json_object_get(h, "session")) ||
        !sp_decimal_from_json(json_object_get(h, "started"), started))
        return false;
    *pid = (pid_t)json_integer_value(p);
    return true;
}

bool sp_pid_handle_is(const json_t *handle)
{
    pid_t pid;
    uint64_t started;
    return handle_fields(handle, &pid, &started) && json_object_size(handle) == 3;
}

sp_holder_state sp_pid_handle_probe(const json_t *handle)
{
    pid_t pid;
    uint64_t want, started = 0;
    char state = '?';
    if (!handle_fields(handle, &pid, &want))
        return SP_HOLDER_UNKNOWN;
    switch (sp_proc_stat(pid, &state, &started)) {
    case SP_PROC_STAT_GONE: return SP_HOLDER_DEAD;
    case SP_PROC_STAT_ERROR: return SP_HOLDER_UNKNOWN;
    case SP_PROC_STAT_OK: break;
    }
    if (started != want)
        return SP_HOLDER_DEAD; /* the PID now names another process */
    return state == 'Z' || state == 'X' ? SP_HOLDER_DEAD : SP_HOLDER_ALIVE;
}

static void sleep_ms(uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

bool sp_pid_handle_stop(const json_t *handle, uint64_t grace_ms)
{
    pid_t pid;
    uint64_t want;
    if (!handle_fields(handle, &pid, &want))
        return false;
    int signals[] = {SIGTERM, SIGKILL};
    for (int i = 0; i < 2; i++) {
        if (sp_pid_handle_probe(handle) != SP_HOLDER_ALIVE)
            return sp_pid_handle_probe(handle) == SP_HOLDER_DEAD;
        kill(-pid, signals[i]); /* the session leader's process group */
        kill(pid, signals[i]);
        for (uint64_t waited = 0; waited < grace_ms; waited += 20) {
            if (sp_pid_handle_probe(handle) == SP_HOLDER_DEAD)
                return true;
            sleep_ms(20);
        }
    }
    return sp_pid_handle_probe(handle) == SP_HOLDER_DEAD;
}
