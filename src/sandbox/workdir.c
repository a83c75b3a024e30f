/*
 * workdir.c - sandbox directories: the private agent directory, one
 * directory per sandbox, the per-run pool of `reuse: "run"` sandboxes, and
 * removal without following symlinks (see sandbox.h).
 *
 * Must never follow a symlink while creating or removing, hand out a
 * sandbox that was tainted (or whose last user died mid-step), or hold more
 * than a bounded number of descriptors while removing a deep tree.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/random.h"
#include "sandbox/sandbox.h"

#define IN_USE ".in-use"  /* in the sandbox directory, outside the work root */
#define LOCK ".lock"      /* flock()ed by the process using the sandbox */
#define REMOVE_DEPTH 48   /* deeper subtrees are moved up and removed later */

struct sp_sandbox {
    char *dir;
    char *work;
    int lock_fd; /* LOCK held while this process uses the sandbox */
    bool reuse;
    char key[40];
    int refs;
    bool tainted;
    struct sp_sandbox *next;
};

static pthread_mutex_t POOL_MU = PTHREAD_MUTEX_INITIALIZER;
static sp_sandbox *POOL;

/* ---- removal ---- */

typedef struct remover {
    int root;
    unsigned long moved;
    bool moved_any;
} remover;

static int open_dir_at(int at, const char *name)
{
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES && fchmodat(at, name, 0700, 0) == 0)
        fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd;
}

/* Empty the directory `fd` (owned by the caller). */
static int empty_dir(remover *r, int fd, int depth)
{
    fchmod(fd, 0700);
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(fd, e->d_name, 0) == 0 || errno == ENOENT)
            continue;
        if (errno != EISDIR && errno != EPERM) {
            rc = -1;
            continue;
        }
        if (depth >= REMOVE_DEPTH) {
            char name[64];
            snprintf(name, sizeof name, ".deep-%lu", r->moved++);
            if (renameat(fd, e->d_name, r->root, name) == 0)
                r->moved_any = true;
            else
                rc = -1;
            continue;
        }
        int sub = open_dir_at(fd, e->d_name);
        if (sub < 0) {
            rc = -1;
            continue;
        }
        if (empty_dir(r, sub, depth + 1))
            rc = -1;
        close(sub);
        if (unlinkat(fd, e->d_name, AT_REMOVEDIR) && errno != ENOENT)
            rc = -1;
    }
    closedir(d);
    return rc;
}

int sp_sandbox_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st))
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    remover r = {fd, 0, false};
    int rc = 0;
    for (int round = 0; round < 100000; round++) {
        r.moved_any = false;
        rc = empty_dir(&r, fd, 0);
        if (!r.moved_any)
            break;
    }
    close(fd);
    if (rmdir(path) && errno != ENOENT)
        rc = -1;
    return rc;
}

/* ---- the agent directory ---- */

static int private_dir(const char *path, sp_error *err)
{
    struct stat st;
    if (mkdir(path, 0700) && errno != EEXIST)
        return sp_fail(err, "agent.sandbox-unavailable", "cannot create the agent directory %s: %s",
                       path, strerror(errno));
    if (lstat(path, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077))
        return sp_fail(err, "agent.sandbox-unavailable",
                       "the agent directory %s must be a directory owned by this user with mode "
                       "0700 (set SPORE_AGENT_DIR to choose another)", path);
    return 0;
}

const char *sp_sandbox_root(sp_error *err)
{
    static __thread char root[4096];
    const char *env = getenv("SPORE_AGENT_DIR");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    const char *tmp = getenv("TMPDIR");
    if (env && env[0] == '/')
        snprintf(root, sizeof root, "%s", env);
    else if (xdg && xdg[0] == '/')
        snprintf(root, sizeof root, "%s/spore-agent", xdg);
    else
        snprintf(root, sizeof root, "%s/spore-agent-%u", tmp && tmp[0] == '/' ? tmp : "/tmp",
                 (unsigned)geteuid());
    return private_dir(root, err) ? NULL : root;
}

/* ---- sandboxes ---- */

static void sandbox_free(sp_sandbox *s)
{
    if (!s)
        return;
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    free(s->dir);
    free(s->work);
    free(s);
}

static sp_sandbox *make(const char *root, const char *name, bool reuse, sp_error *err)
{
    sp_sandbox *s = calloc(1, sizeof *s);
    if (!s || asprintf(&s->dir, "%s/%s", root, name) < 0) {
        free(s);
        sp_oom(err);
        return NULL;
    }
    if (asprintf(&s->work, "%s/work", s->dir) < 0) {
        s->work = NULL;
        sandbox_free(s);
        sp_oom(err);
        return NULL;
    }
    s->reuse = reuse;
    s->refs = 1;
    s->lock_fd = -1;
    if (private_dir(s->dir, err) || private_dir(s->work, err)) {
        sandbox_free(s);
        return NULL;
    }
    char lock[4200];
    snprintf(lock, sizeof lock, "%s/" LOCK, s->dir);
    s->lock_fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB)) {
        sp_fail(err, "agent.sandbox-unavailable", "cannot lock the sandbox %s", s->dir);
        sandbox_free(s);
        return NULL;
    }
    return s;
}

/* True when no live process holds the sandbox directory's lock. */
static bool abandoned_dir(int root, const char *name)
{
    char lock[600];
    snprintf(lock, sizeof lock, "%s/" LOCK, name);
    int fd = openat(root, lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) { /* not locked yet: being made right now, or its maker died at once */
        struct stat st;
        return errno == ENOENT && fstatat(root, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               st.st_mtime + 60 < time(NULL);
    }
    bool free_lock = flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd);
    return free_lock;
}

/* Sandboxes left by processes that died while using them (a crash between
 * acquire and release, a failpoint, SIGKILL): fresh ones are removed; a
 * run's sandbox is removed only when a step was in progress (it is tainted),
 * otherwise it waits for its run. */
static void sweep(const char *root)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        bool fresh = strncmp(e->d_name, "sb-", 3) == 0;
        bool run = strncmp(e->d_name, "run-", 4) == 0;
        if (!fresh && !run)
            continue;
        char marker[600];
        snprintf(marker, sizeof marker, "%s/" IN_USE, e->d_name);
        struct stat st;
        if (run && fstatat(fd, marker, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (abandoned_dir(fd, e->d_name)) {
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", root, e->d_name);
            sp_sandbox_remove_tree(path);
        }
    }
    closedir(d);
}

static void run_key(const char *run_id, char out[40])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)run_id, strlen(run_id), md);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 12; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[24] = '\0';
}

static bool mark_in_use(sp_sandbox *s)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/" IN_USE, s->dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

sp_sandbox *sp_sandbox_acquire(const char *run_id, bool reuse_run, sp_error *err)
{
    const char *root = sp_sandbox_root(err);
    if (!root)
        return NULL;
    pthread_mutex_lock(&POOL_MU);
    sweep(root); /* under the pool lock: never a sandbox this process holds */
    pthread_mutex_unlock(&POOL_MU);
    if (!reuse_run) {
        char name[40] = "sb-";
        sp_random_hex(name + 3, 12);
        return make(root, name, false, err);
    }
    char key[40];
    run_key(run_id, key);
    pthread_mutex_lock(&POOL_MU);
    for (sp_sandbox *s = POOL; s; s = s->next)
        if (!s->tainted && strcmp(s->key, key) == 0) {
            s->refs++;
            pthread_mutex_unlock(&POOL_MU);
            return s;
        }
    char name[48];
    snprintf(name, sizeof name, "run-%s", key); /* a tainted leftover was swept above */
    sp_sandbox *s = make(root, name, true, err);
    if (s && !mark_in_use(s)) {
        sp_fail(err, "agent.sandbox-unavailable", "cannot mark the sandbox %s in use", s->dir);
        sandbox_free(s);
        s = NULL;
    }
    if (s) {
        snprintf(s->key, sizeof s->key, "%s", key);
        s->next = POOL;
        POOL = s;
    }
    pthread_mutex_unlock(&POOL_MU);
    return s;
}

void sp_sandbox_release(sp_sandbox *s, bool taint)
{
    if (!s)
        return;
    if (!s->reuse) {
        sp_sandbox_remove_tree(s->dir);
        sandbox_free(s);
        return;
    }
    pthread_mutex_lock(&POOL_MU);
    if (taint)
        s->tainted = true;
    bool last = --s->refs == 0;
    if (last)
        for (sp_sandbox **p = &POOL; *p; p = &(*p)->next)
            if (*p == s) {
                *p = s->next;
                break;
            }
    pthread_mutex_unlock(&POOL_MU);
    if (!last)
        return;
    if (s->tainted) {
        sp_sandbox_remove_tree(s->dir);
    } else {
        char marker[4200];
        snprintf(marker, sizeof marker, "%s/" IN_USE, s->dir);
        unlink(marker);
    }
    sandbox_free(s);
}

const char *sp_sandbox_work_host(const sp_sandbox *s) { return s->work; }
const char *sp_sandbox_dir(const sp_sandbox *s) { return s->dir; }
bool sp_sandbox_reused(const sp_sandbox *s) { return s->reuse; }

void sp_sandbox_strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}
