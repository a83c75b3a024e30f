/*
 * steplog.c - from the last bytes of a stream to a kept log stream (see
 * steplog.h): cut, redact, repair, bound. Never keeps a byte it did not
 * redact.
 */
#include "runners/steplog.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/tail.h"
#include "base/utf8.h"

size_t sp_steplog_ring(const sp_redactor *r)
{
    size_t form = sp_redactor_longest_form(r);
    return SP_STEPLOG_KEEP + (form < SP_STEPLOG_KEEP ? form : SP_STEPLOG_KEEP);
}

/* What to skip at the window's start when earlier bytes are gone: the end
 * of a secret the window's edge may have cut (shorter than its longest
 * form), then the rest of a character cut in half. */
static size_t cut_at_start(const char *window, size_t len, const sp_redactor *r)
{
    size_t form = sp_redactor_longest_form(r);
    size_t skip = form > 1 ? form - 1 : 0;
    if (skip > len)
        skip = len;
    return skip + sp_utf8_skip_partial(window + skip, len - skip);
}

int sp_steplog_stream(const char *window, size_t len, uint64_t total, const sp_redactor *r,
                      sp_log_stream *out)
{
    memset(out, 0, sizeof *out);
    uint64_t before = total > len ? total - len : 0;
    size_t skip = before ? cut_at_start(window, len, r) : 0;
    size_t red_len = 0, fixed_len = 0;
    char *red = sp_redact(r, window + skip, len - skip, SP_REDACT_PATTERNS, &red_len);
    char *fixed = red ? sp_utf8_lossy(red, red_len, &fixed_len) : NULL;
    free(red);
    if (!fixed)
        return -1;
    size_t from = sp_utf8_tail_start(fixed, fixed_len, SP_STEPLOG_KEEP);
    memmove(fixed, fixed + from, fixed_len - from + 1);
    out->text = fixed;
    out->len = fixed_len - from;
    out->dropped = before + skip + from;
    return 0;
}

int sp_steplog_tail(const sp_tail *t, const sp_redactor *r, sp_log_stream *out)
{
    memset(out, 0, sizeof *out);
    size_t n;
    char *window = sp_tail_copy(t, &n);
    int rc = window ? sp_steplog_stream(window, n, t->total, r, out) : -1;
    free(window);
    return rc;
}

int sp_steplog_file(const char *path, const sp_redactor *r, sp_log_stream *out)
{
    memset(out, 0, sizeof *out);
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) : -1;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return sp_steplog_stream("", 0, 0, r, out);
    }
    size_t want = sp_steplog_ring(r);
    uint64_t size = (uint64_t)st.st_size;
    off_t from = size > want ? (off_t)(size - want) : 0;
    char *window = malloc(want);
    size_t n = 0;
    while (window && n < want) {
        ssize_t got = pread(fd, window + n, want - n, from + (off_t)n);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    int rc = window ? sp_steplog_stream(window, n, (uint64_t)from + n, r, out) : -1;
    free(window);
    return rc;
}

/* A stream without text (none, or out of memory) as an empty one. */
static bool text_or_empty(sp_log_stream *s)
{
    if (!s->text)
        *s = (sp_log_stream){strdup(""), 0, s->dropped};
    return s->text != NULL;
}

sp_attempt_logs *sp_steplog_pair(sp_log_stream *out, sp_log_stream *err)
{
    bool out_ok = text_or_empty(out); /* both, whatever the first answers */
    bool texts = text_or_empty(err) && out_ok;
    sp_attempt_logs *l = texts ? malloc(sizeof *l) : NULL;
    if (l) {
        l->out = *out;
        l->err = *err;
    } else {
        free(out->text);
        free(err->text);
    }
    memset(out, 0, sizeof *out);
    memset(err, 0, sizeof *err);
    return l;
}
