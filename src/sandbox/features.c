/*
 * features.c - what this machine offers for the local sandbox: where bwrap
 * is, whether the kernel lets us create user namespaces, and whether a
 * trial sandbox actually runs (see sandbox.h). Detected once per process.
 *
 * Must never report a working sandbox it did not see run, or hang: the
 * trial has a 10 s bound.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sandbox/sandbox.h"

extern char **environ;

static sp_sandbox_features FEATURES;
static pthread_once_t ONCE = PTHREAD_ONCE_INIT;

static bool executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static void find_bwrap(char *out, size_t cap)
{
    out[0] = '\0';
    const char *chosen = getenv("SPORE_BWRAP");
    if (chosen && *chosen) { /* an explicit choice is never second-guessed */
        if (chosen[0] == '/' && executable(chosen))
            snprintf(out, cap, "%s", chosen);
        return;
    }
    const char *path = getenv("PATH");
    char *copy = strdup(path && *path ? path : "/usr/bin:/bin");
    for (char *save = NULL, *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir;
         dir = strtok_r(NULL, ":", &save)) {
        char candidate[512];
        if (dir[0] != '/')
            continue; /* never a relative PATH entry for the sandbox tool */
        snprintf(candidate, sizeof candidate, "%s/bwrap", dir);
        if (executable(candidate)) {
            snprintf(out, cap, "%s", candidate);
            break;
        }
    }
    free(copy);
    if (!out[0] && executable("/usr/bin/bwrap"))
        snprintf(out, cap, "/usr/bin/bwrap");
}

static long read_long(const char *path)
{
    FILE *f = fopen(path, "re");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* Run a minimal sandbox around /usr/bin/true, with one directory mounted
 * from a descriptor as grants are (--ro-bind-fd, bubblewrap 0.8.0); on
 * failure keep bwrap's first stderr line in `problem`. */
static bool trial(const char *bwrap, char *problem, size_t cap)
{
    const char *argv[] = {bwrap, "--unshare-all", "--unshare-user", "--disable-userns",
                          "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                          "--clearenv", "--ro-bind", "/usr", "/usr",
                          "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
                          "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev",
                          "--tmpfs", "/tmp", "--ro-bind-fd", "3", "/spore-trial",
                          "--remount-ro", "/", "--", "/usr/bin/true", NULL};
    int p[2];
    int usr = open("/usr", O_PATH | O_DIRECTORY | O_CLOEXEC);
    int pinned = usr >= 0 ? fcntl(usr, F_DUPFD_CLOEXEC, 4) : -1; /* never 3 itself */
    if (usr >= 0)
        close(usr);
    if (pinned < 0 || pipe2(p, O_CLOEXEC)) {
        if (pinned >= 0)
            close(pinned);
        snprintf(problem, cap, "cannot set up the sandbox trial: %s", strerror(errno));
        return false;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    posix_spawn_file_actions_adddup2(&fa, pinned, 3);
    char *env[] = {"PATH=/usr/bin:/bin", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, bwrap, &fa, NULL, (char *const *)argv, env);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    close(pinned);
    if (rc) {
        close(p[0]);
        snprintf(problem, cap, "cannot start %.200s: %.100s", bwrap, strerror(rc));
        return false;
    }
    char out[512];
    size_t len = 0;
    uint64_t deadline = sp_mono_ms() + 10000;
    for (;;) {
        uint64_t now = sp_mono_ms();
        if (now >= deadline)
            break;
        struct pollfd pf = {p[0], POLLIN, 0};
        int n = poll(&pf, 1, (int)(deadline - now));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        ssize_t r = read(p[0], out + len, sizeof out - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
        if (len == sizeof out - 1)
            break;
    }
    close(p[0]);
    out[len] = '\0';
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == 0) {
        usleep(100000);
        if (waitpid(pid, &status, WNOHANG) == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            snprintf(problem, cap, "a trial sandbox (bwrap) did not finish within 10 s");
            return false;
        }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return true;
    char *nl = strchr(out, '\n');
    if (nl)
        *nl = '\0';
    snprintf(problem, cap, "bwrap could not build a sandbox here: %.300s%s",
             out[0] ? out : "no message",
             strstr(out, "bind-fd") ? " (bubblewrap 0.8.0 or later is needed)" : "");
    return false;
}

static void detect(void)
{
    sp_sandbox_features *f = &FEATURES;
    find_bwrap(f->bwrap, sizeof f->bwrap);
    long max = read_long("/proc/sys/user/max_user_namespaces");
    long clone = read_long("/proc/sys/kernel/unprivileged_userns_clone");
    f->user_namespaces = max > 0 && (geteuid() == 0 || clone != 0);
    const char *chosen = getenv("SPORE_BWRAP");
    if (!f->bwrap[0] && chosen && *chosen) {
        snprintf(f->problem, sizeof f->problem,
                 "SPORE_BWRAP names %.300s, which is not an executable file given by an "
                 "absolute path", chosen);
        return;
    }
    if (!f->bwrap[0]) {
        snprintf(f->problem, sizeof f->problem,
                 "bubblewrap (bwrap) is not installed: install the Debian package "
                 "\"bubblewrap\" (scripts/deps.sh)");
        return;
    }
    if (!f->user_namespaces) {
        snprintf(f->problem, sizeof f->problem,
                 "the kernel does not allow user namespaces (/proc/sys/user/"
                 "max_user_namespaces is %ld%s)", max,
                 clone == 0 ? ", kernel.unprivileged_userns_clone is 0" : "");
        return;
    }
    f->works = trial(f->bwrap, f->problem, sizeof f->problem);
}

const sp_sandbox_features *sp_sandbox_detect(void)
{
    pthread_once(&ONCE, detect);
    return &FEATURES;
}

int sp_sandbox_check(sp_error *err)
{
    const sp_sandbox_features *f = sp_sandbox_detect();
    if (f->works)
        return 0;
    return sp_fail(err, "agent.sandbox-unavailable",
                   "the local sandbox cannot be built, and agent steps never run without "
                   "one: %s", f->problem);
}
