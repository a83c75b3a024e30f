/*
 * protocol.c - frames on the jail's socketpair (see protocol.h). Never
 * allocates more than a frame's bound, never blocks past a deadline on a
 * non-blocking descriptor.
 */
#include "wasm/protocol.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"

void sp_put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

uint32_t sp_get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int write_all(int fd, const void *data, size_t len, uint64_t deadline_ms)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && deadline_ms) {
            uint64_t now = sp_mono_ms();
            if (now >= deadline_ms) {
                errno = ETIMEDOUT;
                return -1;
            }
            struct pollfd pf = {fd, POLLOUT, 0};
            uint64_t wait = deadline_ms - now;
            poll(&pf, 1, wait > 1000 ? 1000 : (int)wait);
            continue;
        }
        return -1;
    }
    return 0;
}

int sp_frame_write(int fd, uint8_t type, const void *a, size_t alen, const void *b, size_t blen,
                   uint64_t deadline_ms)
{
    if (alen + blen > UINT32_MAX) {
        errno = EMSGSIZE;
        return -1;
    }
    unsigned char header[SP_FRAME_HEADER];
    sp_put_u32(header, (uint32_t)(alen + blen));
    header[4] = type;
    if (write_all(fd, header, sizeof header, deadline_ms))
        return -1;
    if (alen && write_all(fd, a, alen, deadline_ms))
        return -1;
    if (blen && write_all(fd, b, blen, deadline_ms))
        return -1;
    return 0;
}

static int read_all(int fd, void *data, size_t len)
{
    char *p = data;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n == 0 || errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

int sp_frame_read(int fd, uint8_t *type, char **payload, size_t *len, size_t max)
{
    unsigned char header[SP_FRAME_HEADER];
    *payload = NULL;
    if (read_all(fd, header, sizeof header))
        return -1;
    size_t n = sp_get_u32(header);
    if (n > max)
        return -1;
    char *buf = malloc(n + 1);
    if (!buf || (n && read_all(fd, buf, n))) {
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    *type = header[4];
    *payload = buf;
    *len = n;
    return 0;
}

int sp_frame_feed(sp_frame_reader *r, int fd, uint8_t *type, char **payload, size_t *len)
{
    for (;;) {
        if (r->header_got < SP_FRAME_HEADER) {
            ssize_t n = read(fd, r->header + r->header_got, SP_FRAME_HEADER - r->header_got);
            if (n == 0)
                return -1;
            if (n < 0)
                return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
            r->header_got += (size_t)n;
            if (r->header_got < SP_FRAME_HEADER)
                continue;
            r->need = sp_get_u32(r->header);
            if (r->need > r->max)
                return -1;
            r->payload = malloc(r->need + 1);
            r->got = 0;
            if (!r->payload)
                return -1;
        }
        if (r->got < r->need) {
            ssize_t n = read(fd, r->payload + r->got, r->need - r->got);
            if (n == 0)
                return -1;
            if (n < 0)
                return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
            r->got += (size_t)n;
            if (r->got < r->need)
                continue;
        }
        r->payload[r->need] = '\0';
        *type = r->header[4];
        *payload = r->payload;
        *len = r->need;
        r->payload = NULL;
        r->header_got = 0;
        r->need = r->got = 0;
        return 1;
    }
}

void sp_frame_reader_free(sp_frame_reader *r)
{
    free(r->payload);
    r->payload = NULL;
}
