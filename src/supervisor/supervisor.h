/*
 * supervisor.h - starting one command under its own supervisor process
 * (engine.md §5): the face the runners use (runners/process.c).
 *
 * What it is for: the worker never forks itself to supervise a command. A
 * fork of a large, busy worker costs it dearly: every page it writes while
 * the copy lives faults once (docs/performance.md measured ~216 faults and
 * ~8 ms a command step on this project's machine). Instead the worker starts
 * a small static program, built with libspore and carried inside it
 * (image.c), with posix_spawn, which shares nothing with the worker: the
 * program makes its own process group, watches the worker with
 * PR_SET_PDEATHSIG, forks the command into the group, reports how it ended
 * (protocol.h) and kills the group. The worker reads the reports, kills the
 * group on timeout and on stop, and reaps the program.
 *
 * What it must never do: run a shell, leak a descriptor other than the plan's
 * into the program, or start the program anywhere but in a new process group.
 */
#ifndef SPORE_SUPERVISOR_SUPERVISOR_H
#define SPORE_SUPERVISOR_SUPERVISOR_H

#include <stddef.h>
#include <sys/types.h>

#include "supervisor/protocol.h"

typedef struct sp_supervisor_plan {
    char *const *argv;  /* the command, NULL-terminated */
    char *const *paths; /* the paths execve tries for argv[0], NULL-terminated */
    char *const *envp;  /* the command's complete environment */
    const char *cwd;    /* NULL = the worker's */
    int in_r, out_w, err_w, rep_w; /* the command's stdio and the report pipe */
    const int *pass;    /* handed over at SP_SUP_PASS_FD + i */
    size_t npass;       /* at most SP_SUP_PASS_MAX */
} sp_supervisor_plan;

/* Start the supervisor for `plan`. 0: *pid is the supervisor, leader of the
 * command's new process group (pgid = *pid), whose reports come on
 * plan->rep_w's pipe. Otherwise an errno, and *step says where (SP_SUP_SETUP:
 * the program image or memory; SP_SUP_FORK: the spawn itself). */
int sp_supervisor_start(const sp_supervisor_plan *plan, pid_t *pid, sp_sup_step *step);

#endif
