/*
 * component_spawn.c - detached jobs for process_start (see
 * component_spawn.h). Between fork and exec: async-signal-safe calls only.
 */
#define _GNU_SOURCE
#include "runners/component_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/proc.h"

enum { REC_PID = 'P', REC_ERRNO = 'E' };

typedef struct rec {
    int32_t type, value;
} rec;

static void put(int fd, int type, int value)
{
    rec r = {type, value};
    while (write(fd, &r, sizeof r) < 0 && errno == EINTR) {
    }
}

_Noreturn static void job(const char *path, char *const argv[], char *const envp[], int in_fd,
                          int log_fd, int report)
{
    sigset_t none;
    sigemptyset(&none);
    for (int s = 1; s < NSIG; s++) {
        if (s == SIGKILL || s == SIGSTOP)
            continue;
        struct sigaction sa = {0};
        sa.sa_handler = SIG_DFL;
        sigaction(s, &sa, NULL);
    }
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setsid() < 0 || dup2(in_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
        goto fail;
    /* everything above stdio closes at exec; the report pipe tells exec failures */
    if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
        for (int fd = 3; fd < 65536; fd++)
            if (fd != report)
                close(fd);
    execve(path, argv, envp);
fail:
    put(report, REC_ERRNO, errno);
    _exit(127);
}

int sp_spawn_detached(const char *path, char *const argv[], char *const envp[],
                      const void *stdin_bytes, size_t stdin_len, bool has_stdin, int log_fd,
                      pid_t *pid, uint64_t *started, char *why, size_t n)
{
    int in_fd = has_stdin ? memfd_create("spore-stdin", MFD_CLOEXEC)
                          : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in_fd < 0) {
        snprintf(why, n, "stdin: %s", strerror(errno));
        return -1;
    }
    const char *p = stdin_bytes;
    for (size_t left = has_stdin ? stdin_len : 0; left > 0;) {
        ssize_t w = write(in_fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(why, n, "stdin: %s", strerror(errno));
            close(in_fd);
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    if (has_stdin)
        lseek(in_fd, 0, SEEK_SET);
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC)) {
        snprintf(why, n, "pipe: %s", strerror(errno));
        close(in_fd);
        return -1;
    }
    pid_t mid = fork();
    if (mid == 0) {
        close(pipefd[0]);
        pid_t g = _Fork();
        if (g == 0)
            job(path, argv, envp, in_fd, log_fd, pipefd[1]);
        put(pipefd[1], g < 0 ? REC_ERRNO : REC_PID, g < 0 ? errno : g);
        _exit(g < 0 ? 1 : 0);
    }
    int e = errno;
    close(pipefd[1]);
    close(in_fd);
    if (mid < 0) {
        close(pipefd[0]);
        snprintf(why, n, "fork: %s", strerror(e));
        return -1;
    }
    while (waitpid(mid, NULL, 0) < 0 && errno == EINTR) {
    }
    rec r;
    pid_t got = 0;
    int err_no = 0;
    ssize_t k;
    while ((k = read(pipefd[0], &r, sizeof r)) == (ssize_t)sizeof r || (k < 0 && errno == EINTR)) {
        if (k < 0)
            continue;
        if (r.type == REC_PID)
            got = r.value;
        else if (r.type == REC_ERRNO)
            err_no = r.value;
    }
    close(pipefd[0]);
    if (err_no || got <= 0) {
        snprintf(why, n, "cannot start %s: %s", path, strerror(err_no ? err_no : ECHILD));
        return -1;
    }
    *pid = got;
    *started = 0;
    sp_process_start_time(got, started);
    return 0;
}
