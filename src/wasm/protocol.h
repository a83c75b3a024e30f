/*
 * protocol.h - the messages between a worker and its jailed runner child
 * (runners.md §4): length-prefixed frames on the one socketpair the child
 * has.
 *
 *   frame = u32 little-endian payload length, u8 type, payload
 *
 * worker -> child: MODULE (the sealed module bytes), CALL (mode, timeout,
 * export name, request JSON), REPLY (an import's status and reply bytes).
 * child -> worker: IMPORT (import number, reply capacity, request bytes),
 * LOG (level, text), DONE (the export's response bytes), READY (instantiated,
 * no call), TRAP (a trap message), BAD (a response outside the memory or
 * over 1 MiB), LOAD_ERROR (the module does not load), DESCRIBE (the
 * module's imports and exports, world.h). CALL modes: 0 instantiate only,
 * 1 call an export, 2 describe.
 *
 * What it must never do: read a frame longer than the bound the reader
 * gives, or block past the caller's deadline on the worker side.
 */
#ifndef SPORE_WASM_PROTOCOL_H
#define SPORE_WASM_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    SP_FRAME_MODULE = 'M',
    SP_FRAME_CALL = 'C',
    SP_FRAME_REPLY = 'R',
    SP_FRAME_IMPORT = 'I',
    SP_FRAME_LOG = 'L',
    SP_FRAME_DONE = 'D',
    SP_FRAME_READY = 'K',
    SP_FRAME_TRAP = 'T',
    SP_FRAME_BAD = 'B',
    SP_FRAME_LOAD_ERROR = 'E',
    SP_FRAME_DESCRIBE = 'S',
};

#define SP_FRAME_HEADER 5
#define SP_JAIL_MODULE_MAX (64u << 20)   /* a sealed module */
#define SP_JAIL_MESSAGE_MAX (1u << 20)   /* a request, reply or response */
#define SP_JAIL_FRAME_MAX (SP_JAIL_MESSAGE_MAX + 4096u)
#define SP_JAIL_LOG_MAX 4096u            /* one log line from the runner */

/* Write one frame (header, then a, then b). deadline_ms = 0: block;
 * otherwise a CLOCK_MONOTONIC millisecond deadline for a non-blocking fd.
 * 0, or -1 (errno; ETIMEDOUT past the deadline). */
int sp_frame_write(int fd, uint8_t type, const void *a, size_t alen, const void *b, size_t blen,
                   uint64_t deadline_ms);

/* Read one frame, blocking, of at most `max` payload bytes (child side).
 * The payload is malloc'd (NUL-terminated, not counted). 0, or -1. */
int sp_frame_read(int fd, uint8_t *type, char **payload, size_t *len, size_t max);

/* Incremental reader for a non-blocking fd (worker side). */
typedef struct sp_frame_reader {
    unsigned char header[SP_FRAME_HEADER];
    size_t header_got;
    char *payload;
    size_t need, got, max;
} sp_frame_reader;

/* Read what is available: 1 a frame is complete (type and payload handed
 * over, payload malloc'd and NUL-terminated), 0 need more, -1 EOF, error or
 * a frame over the bound. */
int sp_frame_feed(sp_frame_reader *r, int fd, uint8_t *type, char **payload, size_t *len);
void sp_frame_reader_free(sp_frame_reader *r);

void sp_put_u32(unsigned char *p, uint32_t v);
uint32_t sp_get_u32(const unsigned char *p);

#endif
