/*
 * process.h - spawning and supervising one child command (engine.md §5).
 *
 * What it is for: run argv directly (never through a shell) with a given
 * environment and working directory, feed it bytes on stdin, capture the head
 * of stdout and the tail of stderr (and, for step logs, the tail of stdout),
 * and tell apart how it ended: exited with
 * a code, killed by a signal the engine did not send, timed out, stopped by
 * the engine's stop signal, or never started.
 *
 * How: the worker starts a tiny *supervisor* program (src/supervisor/: a
 * static executable carried inside libspore, started with posix_spawn, so
 * the worker's pages are never shared with it) as the leader of a new
 * process group (pgid = its pid); it forks the real command into that group.
 * The supervisor holds PR_SET_PDEATHSIG(SIGTERM) and, when that fires and
 * getppid() shows the worker is really gone (the death signal follows the
 * spawning *thread*, so a thread's exit alone is ignored), SIGKILLs the whole
 * group. The command itself holds PR_SET_PDEATHSIG(SIGKILL) against the
 * supervisor. When the command exits, the supervisor reports its wait status
 * through a CLOEXEC pipe and SIGKILLs the group (stragglers included); the
 * worker SIGKILLs the group on timeout and on stop, and once more before it
 * reaps the supervisor. Exec failures come back through the same pipe.
 *
 * Limits, by design: a process that leaves the group (setsid, setpgid) is out
 * of reach; a set-user-ID command loses its own death signal (the
 * supervisor's group kill still covers it); if the supervisor alone is
 * SIGKILLed by someone else, the command dies with it but the command's own
 * children are killed only when the worker notices (or not at all if the
 * worker is gone too).
 *
 * What it needs from the worker: SIGCHLD not set to SIG_IGN and no
 * waitpid(-1) elsewhere in the process (the supervisor must stay unreaped
 * until this code has killed its group and reaped it itself).
 *
 * What it must never do: run a shell, block without a bound other than the
 * caller's timeout and stop signal, leak a descriptor into the child (other
 * than the ones the caller passes) or the worker, fork the worker itself, or
 * keep more than the configured bytes of output.
 */
#ifndef SPORE_RUNNERS_PROCESS_H
#define SPORE_RUNNERS_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runners/runner.h"
#include "supervisor/protocol.h"

#define SP_PROC_STDOUT_MAX (64 * 1024) /* head of stdout kept */
#define SP_PROC_STDERR_TAIL 4096       /* tail of stderr kept */
#define SP_PROC_DRAIN_MS 250           /* wait for pipe EOF after the group died */
#define SP_PROC_PASS_FD SP_SUP_PASS_FD   /* the first descriptor handed to the command */
#define SP_PROC_PASS_MAX SP_SUP_PASS_MAX /* at most this many */

typedef struct sp_proc_spec {
    const char *const *argv; /* NULL-terminated; argv[0] is looked up in PATH
                                when it has no '/' (PATH from envp) */
    const char *const *envp; /* the complete environment, NULL-terminated */
    const char *cwd;         /* working directory; NULL = the worker's */
    const char *stdin_data;  /* written, then EOF */
    size_t stdin_len;
    bool has_timeout;
    uint64_t timeout_ms;
    sp_stop_signal *stop;    /* may be NULL */
    size_t stdout_max;       /* 0 = SP_PROC_STDOUT_MAX */
    size_t stderr_tail;      /* 0 = SP_PROC_STDERR_TAIL */
    size_t stdout_tail;      /* also keep the last this many bytes of stdout
                                (res->out_tail; step logs); 0 = none */
    /* Descriptors the command gets (the only ones besides 0, 1, 2):
     * pass_fds[i] is descriptor SP_PROC_PASS_FD + i in it. At most
     * SP_PROC_PASS_MAX; the caller keeps its own and closes them. */
    const int *pass_fds;
    size_t npass_fds;
    /* ---- streaming mode (optional; the agent runner's protocol reader) ----
     * With on_stdout / on_stderr set, that stream's bytes are handed over as
     * they arrive instead of being kept (res->out / res->err stay empty). A
     * false return from on_stdout kills the group at once, nothing more is
     * read from stdout, and res->aborted is set. on_started runs once the
     * command's process group exists, before anything is read. */
    bool (*on_stdout)(void *ctx, const char *data, size_t len);
    void (*on_stderr)(void *ctx, const char *data, size_t len);
    void (*on_started)(void *ctx);
    void *stream_ctx;
} sp_proc_spec;

typedef enum sp_proc_end {
    SP_PROC_EXITED,       /* exit_code */
    SP_PROC_SIGNALED,     /* signal, not sent by the engine */
    SP_PROC_TIMED_OUT,    /* the engine killed the group at timeout_ms */
    SP_PROC_STOPPED,      /* the engine killed the group on its stop signal */
    SP_PROC_SPAWN_FAILED, /* spawn_step, spawn_errno: the command never ran */
} sp_proc_end;

typedef struct sp_proc_result {
    sp_proc_end end;
    int exit_code;
    int signal;
    const char *spawn_step; /* "setup", "pipe", "fork", "setpgid", "chdir", "exec" ... */
    int spawn_errno;
    char *out;     /* stdout head, NUL-terminated; owned */
    size_t out_len;
    bool out_over; /* more than stdout_max bytes came */
    char *err;     /* stderr tail in order, NUL-terminated; owned */
    size_t err_len;
    bool err_cut;  /* more than stderr_tail bytes came */
    uint64_t err_total; /* stderr bytes that came */
    char *out_tail; /* with spec->stdout_tail: the last bytes of stdout in
                       order, NUL-terminated; owned (NULL otherwise) */
    size_t out_tail_len;
    uint64_t out_total; /* stdout bytes that came */
    pid_t pgid;    /* the group (= supervisor pid); 0 when nothing was forked */
    bool aborted;  /* streaming: on_stdout asked to stop and the group was killed */
} sp_proc_result;

/* Run the command to its end. Always fills `res` (release it with
 * sp_proc_result_free); a failure to set up (out of memory, no descriptors)
 * is reported as SP_PROC_SPAWN_FAILED. */
void sp_proc_run(const sp_proc_spec *spec, sp_proc_result *res);
void sp_proc_result_free(sp_proc_result *res);

/* The worker's environment (environ) with `pairs` ("NAME", "value", ...,
 * 2 * npairs strings) applied in order, later ones winning, as a
 * NULL-terminated array of "NAME=value" strings. NULL when out of memory. */
char **sp_proc_env(const char *const *pairs, size_t npairs);
void sp_proc_strv_free(char **v);

#endif
