/*
 * takeover.c - fast takeover on one host (engine.md §11). Every worker holds
 * an exclusive flock on a lock file named after its worker ID in the lock
 * directory (next to the database) and records its host ID, PID and process
 * start time with each claim. A sweeper on the same host that can take the
 * lock of a running attempt's owner knows that owner is dead and may expire
 * the attempt at once (reason owner-dead) instead of waiting for the lease.
 *
 * Must never guess: another host, a missing lock file, or a lock that is
 * held all mean "not certainly dead", and the lease rules.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/internal.h"
#include "runners/pid_handle.h"

static void read_host_id(char *out, size_t n)
{
    const char *paths[] = {"/etc/machine-id", "/proc/sys/kernel/random/boot_id", NULL};
    out[0] = '\0';
    for (const char *const *p = paths; *p && !out[0]; p++) {
        FILE *f = fopen(*p, "r");
        if (!f)
            continue;
        if (fgets(out, (int)n, f))
            out[strcspn(out, "\n")] = '\0';
        fclose(f);
    }
}

static void lock_path(const sp_engine *e, const char *worker, char *out, size_t n)
{
    char hex[SP_DIGEST_TEXT_LEN + 1];
    sp_sha256_text(worker, strlen(worker), hex);
    snprintf(out, n, "%s/%.32s.lock", e->cfg.lock_dir, hex + 7);
}

int engine_takeover_init(sp_engine *e, sp_error *err)
{
    read_host_id(e->host.host_id, sizeof e->host.host_id);
    e->host.pid = getpid();
    sp_process_start_time(e->host.pid, &e->host.pid_started);
    if (!e->cfg.lock_dir)
        return 0;
    struct stat st;
    if (mkdir(e->cfg.lock_dir, 0700) != 0 && errno != EEXIST)
        return sp_fail(err, "store.io", "cannot create the worker lock directory %s: %s",
                       e->cfg.lock_dir, strerror(errno));
    if (lstat(e->cfg.lock_dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
        return sp_fail(err, "store.io",
                       "the worker lock directory %s is not a directory of this user", e->cfg.lock_dir);
    char path[4200];
    lock_path(e, e->worker_id, path, sizeof path);
    e->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (e->lock_fd < 0 || flock(e->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        if (e->lock_fd >= 0)
            close(e->lock_fd);
        e->lock_fd = -1;
        return sp_fail(err, "runtime", "cannot lock %s (is worker ID %s already running?)", path,
                       e->worker_id);
    }
    return 0;
}

void engine_takeover_close(sp_engine *e)
{
    if (e->lock_fd < 0)
        return;
    char path[4200];
    lock_path(e, e->worker_id, path, sizeof path);
    unlink(path);
    close(e->lock_fd);
    e->lock_fd = -1;
}

bool engine_owner_dead(sp_engine *e, const sp_due_item *item)
{
    if (e->lock_fd < 0 || !e->host.host_id[0] ||
        strcmp(item->host.host_id, e->host.host_id) != 0 ||
        strcmp(item->attempt.owner, e->worker_id) == 0)
        return false;
    uint64_t started = 0;
    if (sp_process_start_time(item->host.pid, &started) &&
        started == item->host.pid_started)
        return false; /* the owner process is alive */
    char path[4200];
    lock_path(e, item->attempt.owner, path, sizeof path);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return false; /* no lock file: not certain */
    bool dead = flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (dead)
        unlink(path); /* the owner is gone for good; tidy its file */
    close(fd);
    return dead;
}

int sp_engine_lock_dir(const sp_store *store, char *out, size_t n)
{
    const char *location = sp_store_location(store);
    sp_store_capabilities caps;
    sp_store_capabilities_get((sp_store *)store, &caps);
    int len;
    if (caps.adapter && strcmp(caps.adapter, "sqlite") == 0) {
        len = snprintf(out, n, "%s.workers", location);
    } else {
        char digest[SP_DIGEST_TEXT_LEN + 1];
        sp_sha256_text(location, strlen(location), digest);
        const char *runtime = getenv("XDG_RUNTIME_DIR");
        len = snprintf(out, n, "%s/spore-%u-workers-%.16s",
                       runtime && *runtime ? runtime : "/tmp", (unsigned)getuid(), digest + 7);
    }
    return len > 0 && (size_t)len < n ? 0 : -1;
}
