/*
 * tool_edit.c - the writing tools: write_file (create or replace a file)
 * and edit_file (replace the one occurrence of an exact string). Both write
 * only inside runDir and the writable folders (tool_path.c), through a
 * temporary file in the same directory renamed over the target, so a
 * reader never sees half a file; edit_file refuses a string that occurs
 * zero times or more than once (an ambiguous edit is the model's to fix).
 *
 * Must never write through a symlink, outside the write roots, or leave a
 * temporary file behind when it can remove it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "step/step.h"

#define EDIT_FILE_MAX (1024 * 1024)

/* `leaf` in directory `dir` replaced by data (temp file, fsync, rename). */
static bool replace_at(int dir, const char *leaf, const char *data, size_t len, mode_t mode)
{
    char tmp[300];
    snprintf(tmp, sizeof tmp, ".%.200s.spore-%ld.tmp", leaf, (long)getpid());
    int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
        return false;
    bool ok = step_write_all(fd, data, len) && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    ok = ok && renameat(dir, tmp, dir, leaf) == 0;
    if (!ok)
        unlinkat(dir, tmp, 0);
    return ok;
}

/* The existing target must be a regular file (never a symlink). */
static bool target_ok(int dir, const char *leaf, bool must_exist, struct stat *st,
                      step_tool_out *o, const char *path)
{
    if (fstatat(dir, leaf, st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT && !must_exist) {
            st->st_mode = S_IFREG | 0644;
            return true;
        }
        step_tool_error(o, "%.300s: %s", path, strerror(errno));
        return false;
    }
    if (S_ISLNK(st->st_mode)) {
        step_tool_error(o, "%.300s: a symlink is refused (tools never follow one)", path);
        return false;
    }
    if (!S_ISREG(st->st_mode)) {
        step_tool_error(o, "%.300s: not a regular file", path);
        return false;
    }
    return true;
}

void step_tool_write_file(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o)
{
    const char *path = step_tool_arg(args, "path");
    const json_t *content = json_object_get(args, "content");
    char leaf[256];
    struct stat st;
    int dir = step_path_parent(ctx, path, leaf, sizeof leaf, o);
    if (dir < 0)
        return;
    if (target_ok(dir, leaf, false, &st, o, path)) {
        if (replace_at(dir, leaf, json_string_value(content), json_string_length(content),
                       st.st_mode & 0777))
            step_tool_printf(o, "wrote %zu bytes to %s", json_string_length(content), path);
        else
            step_tool_error(o, "%.300s: cannot be written (%s)", path, strerror(errno));
    }
    close(dir);
}

/* The file's bytes (at most EDIT_FILE_MAX), NUL-terminated. */
static char *read_at(int dir, const char *leaf, size_t *len)
{
    int fd = openat(dir, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char *buf = step_read_fd_bounded(fd, EDIT_FILE_MAX, len);
    close(fd);
    return buf;
}

static size_t occurrences(const char *text, size_t len, const char *s, size_t slen,
                          const char **first)
{
    size_t count = 0;
    *first = NULL;
    for (const char *p = text; (p = memmem(p, len - (size_t)(p - text), s, slen)); p++) {
        if (!count)
            *first = p;
        if (++count > 1)
            break;
    }
    return count;
}

void step_tool_edit_file(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o)
{
    const char *path = step_tool_arg(args, "path");
    const json_t *old = json_object_get(args, "old_string"), *new = json_object_get(args, "new_string");
    char leaf[256];
    struct stat st;
    int dir = step_path_parent(ctx, path, leaf, sizeof leaf, o);
    if (dir < 0)
        return;
    size_t len = 0;
    char *text = target_ok(dir, leaf, true, &st, o, path) ? read_at(dir, leaf, &len) : NULL;
    const char *at = NULL;
    size_t n = text ? occurrences(text, len, json_string_value(old), json_string_length(old), &at)
                    : 0;
    if (!text && !o->is_error)
        step_tool_error(o, "%.300s: cannot be read (at most 1 MiB)", path);
    else if (text && n != 1)
        step_tool_error(o, "%.300s: old_string occurs %s: give a longer, unique old_string", path,
                        n == 0 ? "nowhere" : "more than once");
    if (text && n == 1) {
        size_t before = (size_t)(at - text), olen = json_string_length(old);
        sp_buf b = SP_BUF_INIT;
        sp_buf_append(&b, text, before);
        sp_buf_append(&b, json_string_value(new), json_string_length(new));
        sp_buf_append(&b, at + olen, len - before - olen);
        if (sp_buf_ok(&b) && replace_at(dir, leaf, b.data ? b.data : "", b.len, st.st_mode & 0777))
            step_tool_printf(o, "edited %s: replaced %zu bytes with %zu", path, olen,
                             json_string_length(new));
        else
            step_tool_error(o, "%.300s: cannot be written", path);
        sp_buf_free(&b);
    }
    free(text);
    close(dir);
}
