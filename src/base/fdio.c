/*
 * fdio.c - bounded reads to the end (see fdio.h). Never reads past cap.
 */
#include "base/fdio.h"

#include <errno.h>
#include <unistd.h>

size_t sp_read_upto(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (n < cap) {
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    return n;
}
