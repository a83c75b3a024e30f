/*
 * files.h - bounded reading and careful writing of the files a folder
 * build and an artifact touch.
 *
 * What it is for: one reader that never reads more than its bound nor
 * anything but a regular file, and one writer that puts bytes in place
 * whole (a temporary file beside the target, renamed over it) or not at all.
 *
 * What it must never do: follow a read past `max` bytes, leave a partial
 * target file behind, or write a file others may change.
 */
#ifndef SPORE_AUTHORING_FILES_H
#define SPORE_AUTHORING_FILES_H

#include <stddef.h>

#include "base/error.h"

typedef enum sp_file_status {
    SP_FILE_OK,
    SP_FILE_MISSING,     /* cannot be opened */
    SP_FILE_NOT_REGULAR, /* a folder, a device, a socket ... */
    SP_FILE_TOO_LARGE,   /* more than max bytes */
    SP_FILE_IO,          /* a read failed, or out of memory */
} sp_file_status;

/* The whole regular file at `path` (malloc'd, NUL-terminated), at most
 * `max` bytes; NULL with *status set otherwise. */
char *sp_file_read(const char *path, size_t max, size_t *len, sp_file_status *status);

/* The same, failing with file.unreadable / file.too-large naming `path`. */
char *sp_file_read_or_fail(const char *path, size_t max, size_t *len, sp_error *err);

/* Write `len` bytes to `path` whole: a temporary file in the same folder
 * (mode 0644 less the umask), fsync'd, renamed over `path`. file.unwritable. */
int sp_file_write_whole(const char *path, const void *bytes, size_t len, sp_error *err);

#endif
