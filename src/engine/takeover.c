/*
 * takeover.c - fast takeover on one host (engine.md §11). Every worker holds
 * an exclusive flock on a lock file named after its worker ID in the lock
 * directory (next to the database) and records its host ID, PID and process
 * start time with each claim. A sweeper on the same host that can take the
 * lock of a running attempt's owner knows that owner is dead and may expire
 * every attempt of it at once (reason owner-dead) instead of waiting for the
 * lease. The verdict is remembered per owner process for the sweep, and the
 * dead owner's lock file is only removed after a sweep that went through all
 * its attempts, so a worker's second, third, ... attempt gets the same
 * verdict as its first, here and in every other sweeper on the host.
 *
 * A worker that waits for wake-ups sweeps only every few seconds; every
 * --poll-ms it looks at the lock files instead (no store read): a lock
 * that became free brings the sweep forward, so a dead worker's attempts
 * are taken over in well under a second there too.
 *
 * Must never guess: another host, a missing lock file, a lock that is held,
 * or an owner process that is still running all mean "not certainly dead",
 * and the lease rules.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/proc.h"
#include "engine/internal.h"
#include "engine/ledger.h"

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
    sp_strlist_clear(&e->free_locks);
    free(e->dead);
    e->dead = NULL;
    e->ndead = e->dead_cap = 0;
    if (e->lock_fd < 0)
        return;
    /* Closing the descriptor frees the lock. The file goes too, unless the
     * store was failing: then attempts of this worker may still be running
     * in the store, and the free lock is what lets the next worker on this
     * host take them over at once instead of after their lease. */
    if (!engine_fault_failing(e)) {
        char path[4200];
        lock_path(e, e->worker_id, path, sizeof path);
        unlink(path);
    }
    close(e->lock_fd);
    e->lock_fd = -1;
}

/* An owner process found dead by this sweep (its lock was free). */
struct dead_owner {
    char worker[SP_STORE_ID_MAX + 1];
    int64_t pid;
    uint64_t pid_started;
};

static bool same_process(const struct dead_owner *d, const sp_due_item *item)
{
    return d->pid == item->host.pid && d->pid_started == item->host.pid_started &&
           strcmp(d->worker, item->attempt.owner) == 0;
}

/* Without a recorded start time a PID could have been reused: such an owner
 * is never known, its lock file is asked every time (it is still there). */
static bool known_dead(const sp_engine *e, const sp_due_item *item)
{
    if (!item->host.pid_started)
        return false;
    for (size_t i = 0; i < e->ndead; i++)
        if (same_process(&e->dead[i], item))
            return true;
    return false;
}

/* Out of memory the owner is simply not remembered: its next attempt asks
 * the lock file again, and the (harmless, free) file is not tidied. */
static void remember_dead(sp_engine *e, const sp_due_item *item)
{
    for (size_t i = 0; i < e->ndead; i++)
        if (same_process(&e->dead[i], item))
            return;
    if (e->ndead == e->dead_cap) {
        size_t cap = e->dead_cap ? e->dead_cap * 2 : 4;
        struct dead_owner *grown = realloc(e->dead, cap * sizeof *grown);
        if (!grown)
            return;
        e->dead = grown;
        e->dead_cap = cap;
    }
    struct dead_owner *d = &e->dead[e->ndead++];
    snprintf(d->worker, sizeof d->worker, "%s", item->attempt.owner);
    d->pid = item->host.pid;
    d->pid_started = item->host.pid_started;
}

/* Opens <worker>'s lock file and tries its lock: the open descriptor when the
 * lock was free (the worker is dead), -1 when the file is missing or held. */
static int take_lock(const sp_engine *e, const char *worker)
{
    char path[4200];
    lock_path(e, worker, path, sizeof path);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
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
    if (known_dead(e, item))
        return true;
    int fd = take_lock(e, item->attempt.owner);
    if (fd < 0)
        return false; /* no lock file, or held: not certain */
    close(fd);         /* the file stays for the owner's other attempts */
    remember_dead(e, item);
    return true;
}

void engine_takeover_tidy(sp_engine *e)
{
    char path[4200];
    for (size_t i = 0; i < e->ndead; i++) {
        int fd = take_lock(e, e->dead[i].worker);
        if (fd < 0)
            continue; /* gone already, or checked by another sweeper right now */
        lock_path(e, e->dead[i].worker, path, sizeof path);
        unlink(path); /* under the lock: the owner is gone for good */
        close(fd);
    }
    e->ndead = 0;
}

/* ---- a freed lock brings the sweep forward ---- */

static bool seen_free(const sp_engine *e, const char *name)
{
    return sp_strlist_has(&e->free_locks, name);
}

/* One lock file of the directory other than ours whose lock is free: its
 * owner died. Each file is told once (a dead worker without running
 * attempts keeps its file until a sweep tidies it). */
static bool newly_free(sp_engine *e, int dir_fd, const char *name, const char *own)
{
    size_t len = strlen(name);
    if (len < 6 || strcmp(name + len - 5, ".lock") != 0 || strcmp(name, own) == 0 ||
        seen_free(e, name))
        return false;
    int fd = openat(dir_fd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    bool free_lock = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (fd >= 0)
        close(fd);
    if (free_lock)
        (void)sp_strlist_add(&e->free_locks, name); /* out of memory: told again */
    return free_lock;
}

bool engine_takeover_lock_freed(sp_engine *e)
{
    if (e->lock_fd < 0)
        return false;
    DIR *dir = opendir(e->cfg.lock_dir);
    if (!dir)
        return false;
    char own[4200];
    lock_path(e, e->worker_id, own, sizeof own);
    const char *own_name = strrchr(own, '/') ? strrchr(own, '/') + 1 : own;
    bool freed = false;
    struct dirent *d;
    while ((d = readdir(dir)) != NULL)
        freed |= newly_free(e, dirfd(dir), d->d_name, own_name);
    closedir(dir);
    return freed;
}

int sp_engine_lock_dir(const sp_store *store, char *out, size_t n)
{
    const char *location = ledger_location(store);
    int len;
    if (strcmp(ledger_adapter(store), "sqlite") == 0) {
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
