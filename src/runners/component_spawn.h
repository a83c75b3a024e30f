/*
 * component_spawn.h - starting a runner's job detached (runners.md §3,
 * process_start): a new session and process group of its own (pgid = its
 * pid), stdin from the given bytes (a sealed memfd) or /dev/null,
 * stdout/stderr appended to the attempt's log file, no other descriptor,
 * exactly the given environment. It is a grandchild of the worker (the
 * intermediate process exits at once), so it is never the worker's zombie
 * and never dies with it.
 *
 * What it must never do: run a shell, leak a descriptor into the job, or
 * call anything but async-signal-safe functions between fork and exec.
 */
#ifndef SPORE_RUNNERS_COMPONENT_SPAWN_H
#define SPORE_RUNNERS_COMPONENT_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* 0 with the job's pid and start time (0 when it was already gone), or -1
 * with a reason. */
int sp_spawn_detached(const char *path, char *const argv[], char *const envp[],
                      const void *stdin_bytes, size_t stdin_len, bool has_stdin, int log_fd,
                      pid_t *pid, uint64_t *started, char *why, size_t n);

#endif
