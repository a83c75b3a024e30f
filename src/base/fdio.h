/*
 * fdio.h - reading a descriptor to its end within a bound.
 *
 * What it is for: the reads that want everything a file or pipe holds, up
 * to a fixed buffer (a secret file, a step CLI's bounded input), without
 * each writing the EINTR loop again.
 *
 * What it must never do: read past `cap`, or allocate.
 */
#ifndef SPORE_BASE_FDIO_H
#define SPORE_BASE_FDIO_H

#include <stddef.h>

/* Read from fd into buf until end of file, an error or `cap` bytes
 * (EINTR is retried); the number of bytes read. */
size_t sp_read_upto(int fd, char *buf, size_t cap);

#endif
