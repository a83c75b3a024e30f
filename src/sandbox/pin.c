/*
 * pin.c - resolving and pinning a granted host path (see pin.h).
 *
 * Must never follow a symlink once the resolved path was checked, accept
 * "/" or a home directory (or a parent of one), or leave a descriptor open
 * on a refusal.
 */
#define _GNU_SOURCE
#include "sandbox/pin.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

bool sp_path_covers(const char *dir, const char *path)
{
    if (strcmp(dir, "/") == 0)
        return path[0] == '/';
    size_t n = strlen(dir);
    return strncmp(dir, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* True when `real` is a home directory of this user or above one. */
static bool covers_home(const char *real)
{
    char buf[4096];
    struct passwd pw, *found = NULL;
    const char *homes[2] = {getenv("HOME"), NULL};
    if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &found) == 0 && found)
        homes[1] = found->pw_dir;
    for (int i = 0; i < 2; i++) {
        char *home = homes[i] && homes[i][0] ? realpath(homes[i], NULL) : NULL;
        bool covered = home && sp_path_covers(real, home);
        free(home);
        if (covered)
            return true;
    }
    return false;
}

/* Open the resolved path again, refusing any symlink on the way. */
static int open_no_symlinks(const char *real)
{
    struct open_how how = {
        .flags = O_PATH | O_CLOEXEC,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    long fd = syscall(SYS_openat2, AT_FDCWD, real, &how, sizeof how);
    return fd < 0 ? -1 : (int)fd;
}

sp_pin_status sp_pin_path(const char *path, sp_pin *out)
{
    out->path = NULL;
    out->fd = -1;
    struct stat st;
    if (lstat(path, &st))
        return errno == ENOENT || errno == ENOTDIR ? SP_PIN_MISSING : SP_PIN_FAILED;
    if (!(out->path = realpath(path, NULL)))
        return errno == ENOENT || errno == ELOOP || errno == ENOTDIR ? SP_PIN_DANGLING
                                                                     : SP_PIN_FAILED;
    if (strcmp(out->path, "/") == 0)
        return SP_PIN_ROOT;
    if (covers_home(out->path))
        return SP_PIN_HOME;
    out->fd = open_no_symlinks(out->path);
    if (out->fd >= 0)
        return SP_PIN_OK;
    return errno == ELOOP || errno == ENOENT || errno == ENOTDIR ? SP_PIN_CHANGED
                                                                 : SP_PIN_FAILED;
}

void sp_pin_release(sp_pin *pin)
{
    if (pin->fd >= 0)
        close(pin->fd);
    free(pin->path);
    pin->path = NULL;
    pin->fd = -1;
}

const char *sp_pin_status_text(sp_pin_status s)
{
    switch (s) {
    case SP_PIN_OK: return "is usable";
    case SP_PIN_MISSING: return "does not exist";
    case SP_PIN_DANGLING: return "is a symlink that leads nowhere (dangling or a loop)";
    case SP_PIN_ROOT: return "resolves to / (the whole file system)";
    case SP_PIN_HOME: return "resolves to the home directory or a directory above it";
    case SP_PIN_CHANGED: return "changed (a symlink appeared) while it was being opened";
    case SP_PIN_FAILED: break;
    }
    return "cannot be resolved";
}

const char *sp_pin_status_name(sp_pin_status s)
{
    static const char *const names[] = {"ok",   "missing", "dangling", "root",
                                        "home", "changed", "unresolvable"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unresolvable";
}
