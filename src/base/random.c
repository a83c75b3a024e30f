/*
 * random.c - getrandom() as hex (see random.h). When the OS source fails
 * (it should not on Linux >= 3.17) the bytes are derived from the clock and
 * the PID, still distinct per process and call, never constant.
 */
#include "base/random.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static void to_hex(const unsigned char *raw, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * n] = '\0';
}

void sp_random_hex(char *out, size_t nbytes)
{
    static atomic_ulong fallback_counter;
    unsigned char raw[32];
    if (nbytes > sizeof raw)
        nbytes = sizeof raw;
    size_t got = 0;
    while (got < nbytes) {
        ssize_t n = getrandom(raw + got, nbytes - got, 0);
        if (n > 0)
            got += (size_t)n;
        else if (errno != EINTR)
            break;
    }
    if (got < nbytes) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t x = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
                     ((uint64_t)getpid() << 32) ^ atomic_fetch_add(&fallback_counter, 1);
        for (size_t i = got; i < nbytes; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            raw[i] = (unsigned char)(x >> 56);
        }
    }
    to_hex(raw, nbytes, out);
}
