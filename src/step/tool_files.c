/*
 * tool_files.c - the read-only tools: read_file (a window of a file),
 * list_files (a directory, recursive to 8 levels) and search_files (a
 * literal or a POSIX extended regular expression over the text files below
 * a directory). Every walk is bounded in depth, entries, bytes read per file
 * and time (the step's deadline), opens each entry from its directory's
 * descriptor without following symlinks (openat2 below the root, see
 * tool_path.c), and writes through the bounded tool output.
 *
 * Must never follow a symlink, read a file past the bounds, or keep
 * walking once the output is full or the step's time is up.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "step/step.h"

#define WALK_DEPTH 8
#define WALK_ENTRIES 5000
#define SEARCH_FILE_MAX (1024 * 1024)
#define SEARCH_LINE_MAX 4096
#define SHOWN_LINE_MAX 300

/* ---- read_file ---- */

void step_tool_read_file(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o)
{
    const char *path = step_tool_arg(args, "path");
    json_int_t offset = json_integer_value(json_object_get(args, "offset"));
    json_int_t limit = json_object_get(args, "limit")
                           ? json_integer_value(json_object_get(args, "limit"))
                           : STEP_TOOL_OUTPUT_MAX;
    int fd = step_path_open(ctx, path, O_RDONLY, 0, false, o);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        step_tool_error(o, "%.300s: not a regular file", path);
        return;
    }
    size_t want = (size_t)limit;
    char *buf = malloc(want);
    ssize_t n = buf ? pread(fd, buf, want, (off_t)offset) : -1;
    close(fd);
    if (n < 0) {
        free(buf);
        step_tool_error(o, "%.300s: cannot be read", path);
        return;
    }
    step_tool_append(o, buf, (size_t)n);
    free(buf);
    long long end = (long long)offset + n;
    if (end < (long long)st.st_size)
        step_tool_printf(o, "\n[cut: the file has %lld bytes; shown %lld..%lld, ask with offset "
                         "%lld for more]", (long long)st.st_size, (long long)offset, end, end);
}

/* ---- the walk ---- */

typedef struct walk {
    const step_tool_ctx *ctx;
    step_tool_out *o;
    size_t entries;
    bool recursive, stopped;
    bool (*visit)(struct walk *w, int dir, const char *name, const char *rel, unsigned char type);
    /* search */
    const char *literal;
    regex_t re;
    bool use_re, icase;
} walk;

static int open_below(int dir, const char *name, int flags)
{
    struct open_how how = {
        .flags = (unsigned)(flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY)),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    return (int)syscall(SYS_openat2, dir, name, &how, sizeof how);
}

static bool full(const walk *w)
{
    return w->o->dropped > 0 || w->o->text.len >= STEP_TOOL_OUTPUT_MAX;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_dots(const struct dirent *d)
{
    return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

static unsigned char type_of(int dir, const struct dirent *d)
{
    struct stat st;
    if (d->d_type != DT_UNKNOWN)
        return d->d_type;
    if (fstatat(dir, d->d_name, &st, AT_SYMLINK_NOFOLLOW))
        return DT_UNKNOWN;
    return S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
}

static bool stop_now(walk *w)
{
    if (!w->stopped && (++w->entries > WALK_ENTRIES || full(w) ||
                        step_now_ms() > w->ctx->deadline_ms)) {
        w->stopped = true;
        step_tool_printf(w->o, "[stopped: more than %d entries, the output bound or the step's "
                         "time]\n", WALK_ENTRIES);
    }
    return w->stopped;
}

/* One directory (the descriptor is consumed), sorted, children below it. */
static void walk_dir(walk *w, int fd, const char *prefix, int depth)
{
    struct dirent **list = NULL;
    int n = scandirat(fd, ".", &list, skip_dots, by_name);
    for (int i = 0; i < n; i++) {
        const struct dirent *d = list[i];
        unsigned char type = type_of(fd, d);
        char rel[8192];
        snprintf(rel, sizeof rel, "%s%s", prefix, d->d_name);
        if (!stop_now(w) && w->visit(w, fd, d->d_name, rel, type) && type == DT_DIR &&
            w->recursive && depth < WALK_DEPTH) {
            int child = open_below(fd, d->d_name, O_RDONLY | O_DIRECTORY);
            if (child >= 0) {
                char sub[8200];
                snprintf(sub, sizeof sub, "%s/", rel);
                walk_dir(w, child, sub, depth + 1);
            }
        }
        free(list[i]);
    }
    free(list);
    close(fd);
}

/* The start directory, and the prefix its entries are shown with. */
static bool open_start(walk *w, const json_t *args, int *fd, char *prefix, size_t len)
{
    const char *path = step_tool_arg(args, "path");
    *fd = step_path_open(w->ctx, path ? path : ".", O_RDONLY | O_DIRECTORY, 0, false, w->o);
    size_t n = path ? strlen(path) : 0;
    snprintf(prefix, len, "%s%s", path && strcmp(path, ".") ? path : "",
             n && path[n - 1] != '/' && strcmp(path, ".") ? "/" : "");
    return *fd >= 0;
}

/* ---- list_files ---- */

static bool list_visit(walk *w, int dir, const char *name, const char *rel, unsigned char type)
{
    (void)dir;
    (void)name;
    step_tool_printf(w->o, "%s%s\n", rel, type == DT_DIR ? "/" : type == DT_LNK ? "@" : "");
    return true;
}

void step_tool_list_files(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o)
{
    walk w = {.ctx = ctx, .o = o, .visit = list_visit};
    w.recursive = json_is_true(json_object_get(args, "recursive"));
    int fd;
    char prefix[4200];
    if (!open_start(&w, args, &fd, prefix, sizeof prefix))
        return;
    walk_dir(&w, fd, prefix, 0);
    if (o->text.len == 0)
        step_tool_printf(o, "(empty)\n");
}

/* ---- search_files ---- */

static bool line_matches(walk *w, char *line, size_t len)
{
    char saved = line[len];
    line[len] = '\0';
    bool hit = w->use_re ? regexec(&w->re, line, 0, NULL, 0) == 0
               : w->icase ? strcasestr(line, w->literal) != NULL
                          : strstr(line, w->literal) != NULL;
    line[len] = saved;
    return hit;
}

static void search_text(walk *w, const char *rel, char *text, size_t len)
{
    if (memchr(text, '\0', len < 8192 ? len : 8192))
        return; /* binary */
    size_t lineno = 1;
    for (char *p = text, *end = text + len; p < end && !full(w); lineno++) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        size_t checked = n < SEARCH_LINE_MAX ? n : SEARCH_LINE_MAX;
        if (line_matches(w, p, checked))
            step_tool_printf(w->o, "%s:%zu: %.*s%s\n", rel, lineno,
                             (int)(checked < SHOWN_LINE_MAX ? checked : SHOWN_LINE_MAX), p,
                             n > SHOWN_LINE_MAX ? " [line cut]" : "");
        p += n + 1;
    }
}

static bool search_visit(walk *w, int dir, const char *name, const char *rel, unsigned char type)
{
    if (type != DT_REG)
        return type == DT_DIR;
    int fd = open_below(dir, name, O_RDONLY);
    if (fd < 0)
        return false;
    char *buf = malloc(SEARCH_FILE_MAX + 1);
    size_t n = 0;
    for (ssize_t r = 1; buf && r > 0 && n < SEARCH_FILE_MAX; n += r > 0 ? (size_t)r : 0)
        r = read(fd, buf + n, SEARCH_FILE_MAX - n); /* the first 1 MiB of the file */
    close(fd);
    if (buf && n > 0) {
        buf[n] = '\0';
        search_text(w, rel, buf, n);
    }
    free(buf);
    return false;
}

void step_tool_search_files(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o)
{
    walk w = {.ctx = ctx, .o = o, .visit = search_visit, .recursive = true};
    w.literal = step_tool_arg(args, "pattern");
    w.use_re = json_is_true(json_object_get(args, "regex"));
    w.icase = json_is_true(json_object_get(args, "ignoreCase"));
    if (!w.literal) {
        step_tool_error(o, "pattern must be a string without NUL bytes");
        return;
    }
    if (w.use_re && regcomp(&w.re, w.literal, REG_EXTENDED | REG_NOSUB | (w.icase ? REG_ICASE : 0))) {
        step_tool_error(o, "the pattern is not a POSIX extended regular expression");
        return;
    }
    int fd;
    char prefix[4200];
    if (open_start(&w, args, &fd, prefix, sizeof prefix))
        walk_dir(&w, fd, prefix, 0);
    if (w.use_re)
        regfree(&w.re);
    if (!o->is_error && o->text.len == 0)
        step_tool_printf(o, "no match\n");
}
