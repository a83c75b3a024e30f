/*
 * proc.c - reading /proc/<pid>/stat (see proc.h). Never changes a process.
 */
#include "base/proc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

sp_proc_stat_rc sp_proc_stat(int64_t pid, char *state, uint64_t *started)
{
    if (pid <= 0 || pid > INT32_MAX)
        return SP_PROC_STAT_GONE;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT || errno == ESRCH ? SP_PROC_STAT_GONE : SP_PROC_STAT_ERROR;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and ')' */
    if (!p || sscanf(p + 1, " %c", state) != 1)
        return SP_PROC_STAT_ERROR;
    for (int field = 3; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    if (!p || !strchr(p + 1, ' '))
        return SP_PROC_STAT_ERROR;
    p = strchr(p + 1, ' ');
    return sscanf(p, " %llu", (unsigned long long *)started) == 1 ? SP_PROC_STAT_OK
                                                                  : SP_PROC_STAT_ERROR;
}

bool sp_process_start_time(int64_t pid, uint64_t *started)
{
    char state;
    return pid > 0 && pid <= INT32_MAX && sp_proc_stat(pid, &state, started) == SP_PROC_STAT_OK;
}
