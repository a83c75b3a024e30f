/*
 * bwrap.c - the bubblewrap command line of one sandboxed exec (see
 * sandbox.h for what the sandbox contains).
 *
 * Must never mount anything of the host that the spec does not name beyond
 * the read-only system directories listed here, mount a grant by its path
 * (only from its pinned descriptor), leave the root writable, or pass a
 * capability into the sandbox.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

#define TMP_BYTES "268435456" /* the private /tmp: 256 MiB */

/* /etc entries every sandbox gets (read-only, when present). */
static const char *const ETC[] = {
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
    "/etc/alternatives", "/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf",
    "/etc/mime.types", "/etc/nsswitch.conf", NULL};
/* ... and with network "host". */
static const char *const ETC_NET[] = {"/etc/hosts", "/etc/resolv.conf", "/etc/gai.conf",
                                      "/etc/host.conf", NULL};
/* Top-level system directories: a symlink is recreated, a directory bound. */
static const char *const TOP[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", NULL};

typedef struct args {
    char **v;
    size_t n, cap;
    bool oom;
} args;

static void add(args *a, const char *s)
{
    if (a->oom)
        return;
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 128;
        char **v = realloc(a->v, cap * sizeof *v);
        if (!v) {
            a->oom = true;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    if (!(a->v[a->n] = strdup(s))) {
        a->oom = true;
        return;
    }
    a->v[++a->n] = NULL;
}

static void add2(args *a, const char *x, const char *y)
{
    add(a, x);
    add(a, y);
}

static void add3(args *a, const char *x, const char *y, const char *z)
{
    add(a, x);
    add(a, y);
    add(a, z);
}

static void system_dirs(args *a, bool net)
{
    add3(a, "--ro-bind", "/usr", "/usr");
    for (const char *const *d = TOP; *d; d++) {
        struct stat st;
        if (lstat(*d, &st))
            continue;
        if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t n = readlink(*d, target, sizeof target - 1);
            if (n <= 0)
                continue;
            target[n] = '\0';
            add3(a, "--symlink", target, *d);
        } else if (S_ISDIR(st.st_mode)) {
            add3(a, "--ro-bind", *d, *d);
        }
    }
    for (const char *const *e = ETC; *e; e++)
        add3(a, "--ro-bind-try", *e, *e);
    for (const char *const *e = ETC_NET; net && *e; e++)
        add3(a, "--ro-bind-try", *e, *e);
}

/* Each grant from its pinned descriptor (never by path: bwrap would follow
 * whatever the path is by then), at its mount point, parents first. */
static void grants(args *a, const sp_sandbox_spec *spec)
{
    for (size_t i = 0; spec->grants && i < spec->grants->n; i++) {
        const sp_sandbox_grant *g = &spec->grants->v[i];
        char fd[16];
        snprintf(fd, sizeof fd, "%d", spec->grant_fd + (int)i);
        add3(a, g->writable ? "--bind-fd" : "--ro-bind-fd", fd, g->inside);
    }
}

char **sp_sandbox_bwrap_argv(const sp_sandbox *s, const sp_sandbox_spec *spec, sp_error *err)
{
    const sp_sandbox_features *f = sp_sandbox_detect();
    if (!f->works) {
        sp_fail(err, "agent.sandbox-unavailable",
                "the local sandbox cannot be built, and agent steps never run without one: %s",
                f->problem);
        return NULL;
    }
    args a = {0};
    add(&a, f->bwrap);
    add2(&a, "--unshare-all", "--unshare-user");
    if (spec->network_host)
        add(&a, "--share-net");
    add(&a, "--disable-userns");
    add2(&a, "--die-with-parent", "--new-session");
    add2(&a, "--cap-drop", "ALL");
    add2(&a, "--hostname", "spore-sandbox");
    add(&a, "--clearenv");
    for (const char *const *e = spec->env; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        char *name = strndup(*e, (size_t)(eq - *e));
        if (!name) {
            a.oom = true;
            break;
        }
        add3(&a, "--setenv", name, eq + 1);
        free(name);
    }
    system_dirs(&a, spec->network_host);
    add2(&a, "--proc", "/proc");
    add2(&a, "--dev", "/dev");
    add3(&a, "--size", TMP_BYTES, "--tmpfs");
    add(&a, "/tmp");
    if (spec->cwd && strcmp(spec->cwd, "/") != 0)
        add2(&a, "--dir", spec->cwd);
    add2(&a, "--dir", SP_SANDBOX_WORK_ROOT);
    if (spec->run_dir_host && spec->run_dir)
        add3(&a, "--bind", spec->run_dir_host, spec->run_dir);
    else
        add3(&a, "--bind", sp_sandbox_work_host(s), SP_SANDBOX_WORK_ROOT);
    grants(&a, spec);
    for (size_t i = 0; i < spec->nfiles; i++)
        add3(&a, "--ro-bind", spec->files[i].host, spec->files[i].inside);
    if (spec->cwd)
        add2(&a, "--chdir", spec->cwd);
    add2(&a, "--remount-ro", "/");
    add(&a, "--");
    for (const char *const *p = spec->argv; p && *p; p++)
        add(&a, *p);
    if (a.oom) {
        sp_sandbox_strv_free(a.v);
        sp_oom(err);
        return NULL;
    }
    return a.v;
}
