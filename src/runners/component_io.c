/*
 * component_io.c - socket replies with the 1 MiB cap, and confined file and
 * folder reads (see component_io.h). Never reads past the cap, never opens
 * outside the root, never takes a root that a symlink turned into / or the
 * home directory.
 */
#define _GNU_SOURCE
#include "runners/component_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sandbox/pin.h"

/* Wait until fd is ready for `events` or the deadline passes. */
static bool wait_ready(int fd, short events, uint64_t deadline_ms)
{
    for (;;) {
        uint64_t now = sp_mono_ms();
        if (now >= deadline_ms)
            return false;
        struct pollfd pf = {fd, events, 0};
        uint64_t wait = deadline_ms - now;
        int n = poll(&pf, 1, wait > 1000 ? 1000 : (int)wait);
        if (n > 0)
            return true;
        if (n < 0 && errno != EINTR)
            return false;
    }
}

sp_io_status sp_socket_read_line(int fd, uint64_t deadline_ms, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    /* room for the cap and one more byte: reading stops the moment a byte
     * past the cap arrives without a newline before it */
    char *buf = malloc(SP_SOCKET_REPLY_MAX + 2);
    size_t got = 0;
    if (!buf)
        return SP_IO_ERROR;
    for (;;) {
        size_t room = SP_SOCKET_REPLY_MAX + 1 - got;
        ssize_t n = recv(fd, buf + got, room, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_ready(fd, POLLIN, deadline_ms)) {
                free(buf);
                return SP_IO_TIMEOUT;
            }
            continue;
        }
        if (n < 0) {
            free(buf);
            return SP_IO_ERROR;
        }
        char *nl = n > 0 ? memchr(buf + got, '\n', (size_t)n) : NULL;
        if (nl) {
            got = (size_t)(nl - buf);
            break;
        }
        got += (size_t)n;
        if (got > SP_SOCKET_REPLY_MAX) {
            free(buf);
            return SP_IO_TOO_LARGE;
        }
        if (n == 0)
            break; /* EOF */
    }
    if (got > SP_SOCKET_REPLY_MAX) {
        free(buf);
        return SP_IO_TOO_LARGE;
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return SP_IO_OK;
}

sp_io_status sp_socket_request(const char *path, const char *data, size_t len,
                               uint64_t deadline_ms, char **out, size_t *out_len, char *why,
                               size_t n)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        snprintf(why, n, "the socket path is too long");
        return SP_IO_ERROR;
    }
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(why, n, "socket: %s", strerror(errno));
        return SP_IO_ERROR;
    }
    int rc = connect(fd, (struct sockaddr *)&addr, sizeof addr);
    if (rc < 0 && (errno == EINPROGRESS || errno == EAGAIN)) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (!wait_ready(fd, POLLOUT, deadline_ms)) {
            close(fd);
            snprintf(why, n, "connect: timed out");
            return SP_IO_TIMEOUT;
        }
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        errno = soerr;
        rc = soerr ? -1 : 0;
    }
    if (rc < 0) {
        snprintf(why, n, "connect %s: %s", path, strerror(errno));
        close(fd);
        return SP_IO_ERROR;
    }
    size_t sent = 0;
    while (sent < len) {
        ssize_t w = send(fd, data + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            sent += (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (!wait_ready(fd, POLLOUT, deadline_ms)) {
                close(fd);
                snprintf(why, n, "send: timed out");
                return SP_IO_TIMEOUT;
            }
        } else {
            snprintf(why, n, "send: %s", strerror(errno));
            close(fd);
            return SP_IO_ERROR;
        }
    }
    sp_io_status st = sp_socket_read_line(fd, deadline_ms, out, out_len);
    if (st == SP_IO_TOO_LARGE)
        snprintf(why, n, "more than %u bytes arrived without a newline", SP_SOCKET_REPLY_MAX);
    else if (st == SP_IO_TIMEOUT)
        snprintf(why, n, "no reply line before the deadline");
    else if (st == SP_IO_ERROR)
        snprintf(why, n, "recv: %s", strerror(errno));
    close(fd);
    return st;
}

/* The granted folder itself, pinned (sandbox/pin.h): every symlink in it
 * resolved, never / or the home directory (a symlink to / would otherwise
 * make RESOLVE_BENEATH confine nothing), opened without following a
 * symlink once checked. */
static int open_root(const char *root, char *why, size_t n)
{
    sp_pin pin;
    sp_pin_status st = sp_pin_path(root, &pin);
    int e = errno;
    if (st == SP_PIN_OK) {
        free(pin.path);
        return pin.fd;
    }
    if (st == SP_PIN_MISSING || st == SP_PIN_FAILED)
        snprintf(why, n, "%s: the granted folder %s", st == SP_PIN_MISSING ? "not-found"
                 : "unreadable", st == SP_PIN_MISSING ? "does not exist" : strerror(e));
    else /* the resolved path is not shown: it may be the home directory */
        snprintf(why, n, "escapes: the granted folder %s", sp_pin_status_text(st));
    sp_pin_release(&pin);
    return -1;
}

static const char *open_reason(int e)
{
    return e == EXDEV || e == ELOOP ? "escapes" : e == ENOENT ? "not-found" : "unreadable";
}

int sp_open_beneath(const char *root, const char *rest, bool directory, char *why, size_t n)
{
    int rootfd = open_root(root, why, n);
    if (rootfd < 0)
        return -1;
    struct open_how how = {
        .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (directory ? O_DIRECTORY : 0),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    long fd = syscall(SYS_openat2, rootfd, rest, &how, sizeof how);
    int e = errno;
    close(rootfd);
    if (fd < 0)
        snprintf(why, n, "%s: %s", open_reason(e), strerror(e));
    return fd < 0 ? -1 : (int)fd;
}

int sp_file_read_beneath(const char *root, const char *rest, uint64_t offset, size_t length,
                         char **data, size_t *len, bool *eof, char *why, size_t n)
{
    *data = NULL;
    *len = 0;
    int fd = sp_open_beneath(root, rest, false, why, n);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(why, n, "not-a-file: only regular files are read");
        return -1;
    }
    if (length > SP_FILE_READ_MAX)
        length = SP_FILE_READ_MAX;
    char *buf = malloc(length + 1);
    size_t got = 0;
    while (buf && got < length) {
        ssize_t r = pread(fd, buf + got, length - got, (off_t)(offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf) {
        snprintf(why, n, "unreadable: out of memory");
        return -1;
    }
    buf[got] = '\0';
    *data = buf;
    *len = got;
    *eof = offset + got >= (uint64_t)st.st_size;
    return 0;
}

static int entry_cmp(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    return strcmp(json_string_value(json_object_get(x, "name")),
                  json_string_value(json_object_get(y, "name")));
}

json_t *sp_dir_list_beneath(const char *root, const char *rest, char *why, size_t n)
{
    int fd = sp_open_beneath(root, rest, true, why, n);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        snprintf(why, n, "unreadable: %s", strerror(errno));
        return NULL;
    }
    json_t **items = NULL;
    size_t count = 0, cap = 0;
    bool over = false;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        if (count == SP_DIR_ENTRIES_MAX) {
            over = true;
            break;
        }
        struct stat st;
        const char *type = "other";
        if (fstatat(dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            type = S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "dir"
                   : S_ISLNK(st.st_mode) ? "symlink" : "other";
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            json_t **more = realloc(items, cap * sizeof *more);
            if (!more)
                break;
            items = more;
        }
        json_t *e = json_pack("{s:s,s:s}", "name", ent->d_name, "type", type);
        if (e) /* a name that is not UTF-8 cannot be shown: skipped */
            items[count++] = e;
    }
    closedir(d);
    if (over) {
        for (size_t i = 0; i < count; i++)
            json_decref(items[i]);
        free(items);
        snprintf(why, n, "too-many-entries: more than %d", SP_DIR_ENTRIES_MAX);
        return NULL;
    }
    qsort(items, count, sizeof *items, entry_cmp);
    json_t *list = json_array();
    for (size_t i = 0; i < count; i++) {
        if (list)
            json_array_append_new(list, items[i]);
        else
            json_decref(items[i]);
    }
    free(items);
    return list;
}
