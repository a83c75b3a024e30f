/*
 * proc.h - facts about a process from /proc, for whoever must tell a live
 * process from a dead one or a reused PID: the process supervisor's
 * reference handles (runners/pid_handle.c) and the engine's takeover of a
 * dead worker's attempts (engine/takeover.c).
 *
 * What it must never do: signal or otherwise change a process, or call a
 * process alive when its /proc entry cannot be read (that is an error).
 */
#ifndef SPORE_BASE_PROC_H
#define SPORE_BASE_PROC_H

#include <stdbool.h>
#include <stdint.h>

typedef enum sp_proc_stat_rc {
    SP_PROC_STAT_OK,
    SP_PROC_STAT_GONE,
    SP_PROC_STAT_ERROR,
} sp_proc_stat_rc;

/* The state letter (field 3) and start time (field 22, clock ticks since
 * boot) of /proc/<pid>/stat; GONE when there is no such process. */
sp_proc_stat_rc sp_proc_stat(int64_t pid, char *state, uint64_t *started);

/* The start time of a process; false when it does not exist or cannot be
 * read. */
bool sp_process_start_time(int64_t pid, uint64_t *started);

#endif
