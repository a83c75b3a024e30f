/*
 * tool_run.c - the `run` tool: one program the workflow granted
 * (runPrograms), started with an argv (never through a shell: `sh` runs
 * only when it is granted like any other program), in the working
 * directory, stdin empty, stdout and stderr read together within the tool
 * output bound (the rest counted and drained), in its own process group,
 * killed with that group at its timeout (timeoutMs, default 30 s, never past
 * the step's own deadline) and after it ends (no stray children).
 *
 * A granted entry is a program name (looked up in /usr/local/bin, /usr/bin,
 * /bin) or an absolute path; argv[0] must be written exactly as granted.
 *
 * Must never start a program that is not granted, pass argv through a
 * shell, or wait past the deadline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "step/step.h"

#define RUN_TIMEOUT_DEFAULT_MS 30000
#define RUN_PATH "/usr/local/bin:/usr/bin:/bin"

extern char **environ;

static bool granted(const step_config *c, const char *name)
{
    for (char **p = c->programs; p && *p; p++)
        if (strcmp(*p, name) == 0)
            return true;
    return false;
}

static bool executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

bool step_program_resolve(const char *name, char *out, size_t len)
{
    if (name[0] == '/') {
        snprintf(out, len, "%s", name);
        return executable(out);
    }
    if (strchr(name, '/'))
        return false;
    char dirs[] = RUN_PATH;
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, len, "%s/%s", d, name);
        if (executable(out))
            return true;
    }
    return false;
}

/* argv from the arguments (each a string without NUL), NULL-terminated. */
static char **argv_of(const json_t *a)
{
    size_t n = json_array_size(a);
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; v && i < n; i++) {
        const json_t *s = json_array_get(a, i);
        if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s)) {
            free(v);
            return NULL;
        }
        v[i] = (char *)json_string_value(s);
    }
    return v;
}

static pid_t start(const char *path, char **argv, const char *cwd, int out_fd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    setpgid(0, 0);
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0 ||
        chdir(cwd) != 0)
        _exit(127);
    signal(SIGPIPE, SIG_DFL);
    execve(path, argv, environ);
    _exit(127);
}

/* Read the output until EOF or the deadline; true when EOF came. */
static bool collect(int fd, long long deadline, step_tool_out *o)
{
    char buf[16384];
    for (;;) {
        long long left = deadline - step_now_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (r < 0 && errno != EINTR)
            return false;
        if (r <= 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return true;
        step_tool_append(o, buf, (size_t)n);
    }
}

static void report(step_tool_out *o, int status, bool timed_out, long long ms)
{
    sp_buf head = SP_BUF_INIT;
    if (timed_out)
        sp_buf_printf(&head, "timed out after %lld ms (killed)\n", ms);
    else if (WIFEXITED(status))
        sp_buf_printf(&head, "exit %d\n", WEXITSTATUS(status));
    else
        sp_buf_printf(&head, "killed by signal %d\n", WTERMSIG(status));
    sp_buf body = o->text;
    o->text = head; /* the status first, then the output */
    sp_buf_append(&o->text, body.data ? body.data : "", body.len);
    sp_buf_free(&body);
    o->is_error = timed_out;
}

void step_tool_run(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o)
{
    const json_t *a = json_object_get(args, "argv");
    char **argv = argv_of(a);
    char path[4200];
    if (!argv || !argv[0] || !*argv[0]) {
        free(argv);
        step_tool_error(o, "argv must be strings without NUL bytes");
        return;
    }
    if (!granted(ctx->config, argv[0]) || !step_program_resolve(argv[0], path, sizeof path)) {
        step_tool_error(o, "program \"%.200s\" is not granted to this step (runPrograms)%s",
                        argv[0], granted(ctx->config, argv[0]) ? ", or not found" : "");
        free(argv);
        return;
    }
    json_int_t t = json_integer_value(json_object_get(args, "timeoutMs"));
    long long begin = step_now_ms(), deadline = begin + (t > 0 ? t : RUN_TIMEOUT_DEFAULT_MS);
    if (deadline > ctx->deadline_ms)
        deadline = ctx->deadline_ms;
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC)) {
        step_tool_error(o, "cannot start %.200s", argv[0]);
        free(argv);
        return;
    }
    pid_t pid = start(path, argv, ctx->config->cwd, pipefd[1]);
    close(pipefd[1]);
    free(argv);
    bool eof = pid > 0 && collect(pipefd[0], deadline, o);
    close(pipefd[0]);
    int status = 0;
    bool reaped = false;
    while (pid > 0 && eof && !reaped && step_now_ms() < deadline) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        reaped = w == pid || (w < 0 && errno != EINTR);
        if (!reaped)
            step_sleep_ms(10);
    }
    if (pid > 0)
        kill(-pid, SIGKILL); /* the group: on timeout, and whatever it left behind */
    while (pid > 0 && !reaped && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (pid < 0)
        step_tool_error(o, "cannot start the program (fork failed)");
    else
        report(o, status, !reaped, step_now_ms() - begin);
}
