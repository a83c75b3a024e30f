/*
 * files.c - bounded reads and whole writes (see files.h). Never reads past
 * its bound and never leaves a partial target file.
 */
#define _GNU_SOURCE
#include "authoring/files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *read_fd(int fd, size_t size, size_t *len, sp_file_status *status)
{
    char *buf = malloc(size + 1);
    size_t got = 0;
    while (buf && got <= size) {
        ssize_t n = read(fd, buf + got, size + 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0) {
                free(buf);
                buf = NULL;
            }
            break;
        }
        got += (size_t)n;
    }
    if (!buf) {
        *status = SP_FILE_IO;
        return NULL;
    }
    if (got > size) { /* it grew while we read it */
        free(buf);
        *status = SP_FILE_TOO_LARGE;
        return NULL;
    }
    buf[got] = '\0';
    *len = got;
    *status = SP_FILE_OK;
    return buf;
}

char *sp_file_read(const char *path, size_t max, size_t *len, sp_file_status *status)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    *len = 0;
    if (fd < 0) {
        *status = SP_FILE_MISSING; /* errno says why */
        return NULL;
    }
    char *bytes = NULL;
    if (fstat(fd, &st))
        *status = SP_FILE_IO;
    else if (!S_ISREG(st.st_mode))
        *status = SP_FILE_NOT_REGULAR;
    else if ((uint64_t)st.st_size > max)
        *status = SP_FILE_TOO_LARGE;
    else
        bytes = read_fd(fd, max, len, status);
    close(fd);
    return bytes;
}

char *sp_file_read_or_fail(const char *path, size_t max, size_t *len, sp_error *err)
{
    sp_file_status status;
    char *bytes = sp_file_read(path, max, len, &status);
    if (bytes)
        return bytes;
    if (status == SP_FILE_TOO_LARGE)
        sp_fail(err, "file.too-large", "%s is larger than %zu bytes", path, max);
    else if (status == SP_FILE_NOT_REGULAR)
        sp_fail(err, "file.unreadable", "%s is not a regular file", path);
    else if (status == SP_FILE_MISSING)
        sp_fail(err, "file.unreadable", "cannot open %s: %s", path, strerror(errno));
    else
        sp_fail(err, "file.unreadable", "cannot read %s", path);
    return NULL;
}

static int write_all(int fd, const char *bytes, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, bytes, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        bytes += n;
        len -= (size_t)n;
    }
    return 0;
}

int sp_file_write_whole(const char *path, const void *bytes, size_t len, sp_error *err)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path) >= sizeof tmp)
        return sp_fail(err, "file.unwritable", "the path %s is too long", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return sp_fail(err, "file.unwritable", "cannot create a file beside %s: %s", path,
                       strerror(errno));
    mode_t mask = umask(0);
    umask(mask);
    int rc = fchmod(fd, 0644 & ~mask) || write_all(fd, bytes, len) || fsync(fd);
    int saved = errno;
    if (close(fd))
        rc = rc ? rc : (saved = errno, -1);
    if (rc == 0 && rename(tmp, path))
        rc = (saved = errno, -1);
    if (rc) {
        unlink(tmp);
        return sp_fail(err, "file.unwritable", "cannot write %s: %s", path, strerror(saved));
    }
    return 0;
}
