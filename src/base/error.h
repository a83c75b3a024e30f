/*
 * error.h - error values shared by every spore component.
 *
 * What it is for: a failure is a value with a stable dotted code (D10), a
 * message for people and optional JSON details. Functions that can fail take
 * an `sp_error *` and return -1 after filling it, 0 on success.
 *
 * What it must never do: allocate for the code or message (they live in fixed
 * buffers so that reporting an out-of-memory error cannot itself fail), or
 * print anything. Printing is the CLI's job.
 */
#ifndef SPORE_BASE_ERROR_H
#define SPORE_BASE_ERROR_H

#include <stddef.h>

struct json_t;

#define SP_CODE_MAX 64
#define SP_MESSAGE_MAX 512

typedef struct sp_error {
    char code[SP_CODE_MAX];       /* stable dotted code, "" when no error */
    char message[SP_MESSAGE_MAX]; /* human text; never part of a contract */
    struct json_t *details;       /* optional JSON details, owned; may be NULL */
} sp_error;

/* Fill `err` (if non-NULL) and return -1. The message is printf-formatted and
 * truncated to fit. Any details previously held are released. */
int sp_fail(sp_error *err, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like sp_fail, and attach `details` (ownership is taken, may be NULL). */
int sp_fail_details(sp_error *err, const char *code, struct json_t *details,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Release the details and reset to "no error". Safe on a zeroed value. */
void sp_error_clear(sp_error *err);

/* Move `src` into `dst` (dst's previous details are released). */
void sp_error_move(sp_error *dst, sp_error *src);

/* Report an allocation failure. Always returns -1. */
int sp_oom(sp_error *err);

#endif
