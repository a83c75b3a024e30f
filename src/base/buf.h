/*
 * buf.h - a growable byte buffer with a sticky out-of-memory flag.
 *
 * What it is for: building encodings (canonical JSON, digests' inputs, CLI
 * output) without checking every append: an allocation failure sets `oom`
 * and later appends do nothing; the owner checks `oom` once at the end.
 *
 * What it must never do: grow past `limit` when one is set (appends beyond it
 * set `over_limit` instead), or leave `data` unterminated: data[len] is
 * always '\0' once anything was appended, so text can be used as a C string.
 */
#ifndef SPORE_BASE_BUF_H
#define SPORE_BASE_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sp_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t limit;    /* 0 = unlimited */
    bool oom;        /* an allocation failed */
    bool over_limit; /* an append would have passed `limit` */
} sp_buf;

#define SP_BUF_INIT {0}

void sp_buf_append(sp_buf *b, const void *data, size_t len);
void sp_buf_append_str(sp_buf *b, const char *s);
void sp_buf_append_char(sp_buf *b, char c);
void sp_buf_printf(sp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Make room for `extra` more bytes at once (false: out of memory or past
 * the limit, flagged as an append would be). */
bool sp_buf_reserve(sp_buf *b, size_t extra);
/* Grow by `len` bytes and return where they start, for the caller to fill
 * (data[len] is '\0'); NULL when out of memory or past the limit. */
char *sp_buf_extend(sp_buf *b, size_t len);
void sp_buf_reset(sp_buf *b);
void sp_buf_free(sp_buf *b);
/* True when every append so far succeeded. */
static inline bool sp_buf_ok(const sp_buf *b) { return !b->oom && !b->over_limit; }
/* Hand the bytes to the caller (NUL-terminated, possibly NULL when empty). */
char *sp_buf_take(sp_buf *b, size_t *len);

#endif
