/*
 * runner_worker_child.c - a stand-in worker for test_command_runner's
 * "no orphan after a worker SIGKILL" check (H5).
 *
 * Usage: runner_worker_child <dir>. Runs, through the command runner on a
 * second thread (the death signal follows the forking thread), a long
 * command in <dir> that starts a background grandchild and writes the PIDs
 * to bg.pid and sh.pid; then waits forever. The test SIGKILLs this process
 * and checks that the command and its grandchild are gone.
 *
 * It must never exit on its own while the command runs, nor clean up: being
 * killed without warning is the whole point.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runners/registry.h"

static const char *g_dir;

static void *run_command(void *arg)
{
    (void)arg;
    sp_runner_ctx ctx = {
        .run_id = "run_orphan",
        .node_id = "long",
        .action_id = "long",
        .invocation_id = "inv_orphan",
        .effect_key = "inv_orphan",
        .attempt = 1,
        .base_dir = g_dir,
    };
    json_t *action = json_pack(
        "{s:s,s:[s,s,s]}", "kind", "command", "argv", "sh", "-c",
        "sleep 1000 & echo $! > bg.tmp; mv bg.tmp bg.pid; echo $$ > sh.tmp; mv sh.tmp sh.pid; "
        "wait");
    sp_activity_output out;
    sp_runner_find("command")->run(&ctx, &(sp_runner_action){"long", action, NULL}, NULL, &out);
    fprintf(stderr, "runner_worker_child: the command ended, which it must not\n");
    _exit(3);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: runner_worker_child <dir>\n");
        return 2;
    }
    g_dir = argv[1];
    pthread_t t;
    if (pthread_create(&t, NULL, run_command, NULL))
        return 1;
    pthread_join(t, NULL);
    return 0;
}
