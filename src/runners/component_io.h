/*
 * component_io.h - the bounded I/O behind the runner host's imports
 * (runners.md §3): a socket reply read with the 1 MiB cap enforced as the
 * bytes arrive, and file and folder reads confined below a granted folder
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS).
 *
 * What it must never do: keep reading a reply that has passed the cap
 * (wherever its newline would fall), open a path that leaves its root
 * ("..", absolute symlinks, symlinks that lead out), take a root that
 * resolves to / or the home directory, or block past the caller's
 * deadline.
 */
#ifndef SPORE_RUNNERS_COMPONENT_IO_H
#define SPORE_RUNNERS_COMPONENT_IO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_SOCKET_REPLY_MAX (1u << 20)
#define SP_FILE_READ_MAX (1u << 20)
#define SP_DIR_ENTRIES_MAX 10000

typedef enum sp_io_status {
    SP_IO_OK,
    SP_IO_TOO_LARGE, /* more than the cap arrived before a newline */
    SP_IO_TIMEOUT,
    SP_IO_ERROR,     /* errno-style reason in the message */
} sp_io_status;

/* Read from a connected socket until the first '\n' or EOF; the reply (the
 * newline excluded) is malloc'd. SP_IO_TOO_LARGE as soon as more than
 * SP_SOCKET_REPLY_MAX bytes have arrived without a newline.
 * deadline_ms: CLOCK_MONOTONIC. */
sp_io_status sp_socket_read_line(int fd, uint64_t deadline_ms, char **out, size_t *len);

/* Connect to the Unix socket `path`, send data, read the reply line. */
sp_io_status sp_socket_request(const char *path, const char *data, size_t len,
                               uint64_t deadline_ms, char **out, size_t *out_len, char *why,
                               size_t n);

/* Open `rest` (relative, normalized) below the folder `root` for reading,
 * confined with openat2. The root itself is resolved and pinned first
 * (sandbox/pin.h): one that resolves to / or to the home directory (or
 * above it) is refused as "escapes". -1 with a reason in `why` ("escapes:
 * ...", "not-found: ...", "unreadable: ..."). */
int sp_open_beneath(const char *root, const char *rest, bool directory, char *why, size_t n);

/* Read at most `length` (<= SP_FILE_READ_MAX) bytes at `offset` of a regular
 * file below root. 0 with malloc'd data and *eof; -1 with a reason. */
int sp_file_read_beneath(const char *root, const char *rest, uint64_t offset, size_t length,
                         char **data, size_t *len, bool *eof, char *why, size_t n);

/* The entries of a folder below root: [{"name", "type"}] sorted by name,
 * type "file" | "dir" | "symlink" | "other". NULL with a reason. */
json_t *sp_dir_list_beneath(const char *root, const char *rest, char *why, size_t n);

#endif
