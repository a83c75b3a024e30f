/*
 * tool_path.c - where a tool may reach: a path from the model is opened
 * only below one of the step's roots, never through a symlink and never
 * with "..". Reads may use the working directory, runDir and the readable
 * and writable folders; writes only runDir and the writable folders. A
 * relative path is taken from the working directory; an absolute one must
 * lie inside a root. The root is picked by the longest prefix, then the
 * rest is opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS), so a symlink placed anywhere below the root (by
 * the model or by anyone) is refused by the kernel, not by a check that a
 * race could outrun.
 *
 * Must never open a path outside the roots, follow a symlink below a root,
 * or accept a path with a NUL byte or a ".." component.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "step/step.h"

#define PATH_MAX_BYTES 4096

static bool has_dotdot(const char *p)
{
    for (const char *s = p; *s;) {
        const char *slash = strchr(s, '/');
        size_t n = slash ? (size_t)(slash - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return true;
        if (!slash)
            break;
        s = slash + 1;
    }
    return false;
}

/* The length of `root` when `path` is it or below it, else 0. */
static size_t under(const char *path, const char *root)
{
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        n--;
    if (n == 1 && root[0] == '/')
        return 1;
    return strncmp(path, root, n) == 0 && (path[n] == '/' || path[n] == '\0') ? n : 0;
}

static void consider(const char *path, const char *root, const char **best, size_t *best_len)
{
    size_t n = root ? under(path, root) : 0;
    if (n > *best_len) {
        *best = root;
        *best_len = n;
    }
}

static const char *root_of(const step_tool_ctx *ctx, const char *path, bool write, size_t *len)
{
    const char *best = NULL;
    *len = 0;
    if (!write)
        consider(path, ctx->config->cwd, &best, len);
    consider(path, ctx->run_dir, &best, len);
    for (char **r = ctx->config->readable; !write && r && *r; r++)
        consider(path, *r, &best, len);
    for (char **w = ctx->config->writable; w && *w; w++)
        consider(path, *w, &best, len);
    return best;
}

static int refuse(step_tool_out *o, const char *path, const char *why)
{
    step_tool_error(o, "%.300s: %s", path, why);
    return -1;
}

int step_path_open(const step_tool_ctx *ctx, const char *path, int flags, mode_t mode, bool write,
                   step_tool_out *o)
{
    if (!path || !*path || strlen(path) > PATH_MAX_BYTES)
        return refuse(o, path ? path : "", "not a path");
    if (has_dotdot(path))
        return refuse(o, path, "a path with \"..\" is refused");
    char full[2 * PATH_MAX_BYTES + 2];
    if (path[0] == '/')
        snprintf(full, sizeof full, "%s", path);
    else
        snprintf(full, sizeof full, "%s/%s", ctx->config->cwd, path);
    size_t n;
    const char *root = root_of(ctx, full, write, &n);
    if (!root)
        return refuse(o, path, write ? "outside the run directory and the writable folders"
                                     : "outside the working directory and the granted folders");
    const char *rest = full + n;
    while (*rest == '/')
        rest++;
    int dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return refuse(o, path, "its folder cannot be opened");
    struct open_how how = {
        .flags = (unsigned)(flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY)),
        .mode = (flags & O_CREAT) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    long fd = syscall(SYS_openat2, dir, *rest ? rest : ".", &how, sizeof how);
    int e = errno;
    close(dir);
    if (fd >= 0)
        return (int)fd;
    if (e == ELOOP)
        return refuse(o, path, "a symlink is refused (tools never follow one)");
    if (e == EXDEV)
        return refuse(o, path, "escapes its folder");
    step_tool_error(o, "%.300s: %s", path, strerror(e));
    return -1;
}

int step_path_parent(const step_tool_ctx *ctx, const char *path, char *leaf, size_t leaf_len,
                     step_tool_out *o)
{
    if (!path || !*path || strlen(path) > PATH_MAX_BYTES)
        return refuse(o, path ? path : "", "not a path");
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strlen(name) >= leaf_len)
        return refuse(o, path, "does not name a file");
    snprintf(leaf, leaf_len, "%s", name);
    char parent[PATH_MAX_BYTES + 1];
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else if (slash == path)
        snprintf(parent, sizeof parent, "/");
    else
        snprintf(parent, sizeof parent, "%.*s", (int)(slash - path), path);
    /* the file itself must be inside a write root, not only its folder */
    char full[2 * PATH_MAX_BYTES + 2];
    if (path[0] == '/')
        snprintf(full, sizeof full, "%s", path);
    else
        snprintf(full, sizeof full, "%s/%s", ctx->config->cwd, path);
    size_t n;
    if (!has_dotdot(path) && !root_of(ctx, full, true, &n))
        return refuse(o, path, "outside the run directory and the writable folders");
    if (parent[0] != '/' && strcmp(parent, ".") == 0) {
        snprintf(full, sizeof full, "%s", ctx->config->cwd);
        return step_path_open(ctx, full, O_PATH | O_DIRECTORY, 0, true, o);
    }
    return step_path_open(ctx, parent, O_PATH | O_DIRECTORY, 0, true, o);
}
