/*
 * stderr_log.c - first line, ring buffer, redact-then-truncate tail (see
 * stderr_log.h). Never holds more than the ring plus the first line.
 */
#include "agent/stderr_log.h"

#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

int sp_agent_stderr_init(sp_agent_stderr *s)
{
    memset(s, 0, sizeof *s);
    return sp_tail_init(&s->tail, SP_AGENT_STDERR_RING);
}

void sp_agent_stderr_free(sp_agent_stderr *s) { sp_tail_free(&s->tail); }

void sp_agent_stderr_feed(sp_agent_stderr *s, const char *data, size_t len)
{
    if (!s->first_done) {
        const char *lf = memchr(data, '\n', len);
        size_t upto = lf ? (size_t)(lf - data) : len;
        size_t room = SP_AGENT_FIRST_LINE_MAX - s->first_len;
        size_t take = upto < room ? upto : room;
        memcpy(s->first + s->first_len, data, take);
        s->first_len += take;
        s->first[s->first_len] = '\0';
        if (upto > take)
            s->first_cut = true;
        if (lf)
            s->first_done = true;
    }
    sp_tail_put(&s->tail, data, len);
}

bool sp_agent_stderr_pid(const sp_agent_stderr *s, long long *pid)
{
    static const char prefix[] = "step-pid=";
    size_t plen = sizeof prefix - 1;
    if (!s->first_done || s->first_cut || s->first_len <= plen || s->first_len > plen + 10 ||
        memcmp(s->first, prefix, plen) != 0)
        return false;
    long long v = 0;
    for (size_t i = plen; i < s->first_len; i++) {
        char c = s->first[i];
        if (c < '0' || c > '9' || (i == plen && c == '0' && s->first_len > plen + 1))
            return false;
        v = v * 10 + (c - '0');
    }
    if (v <= 0 || v > 0x7fffffff)
        return false;
    *pid = v;
    return true;
}

char *sp_agent_stderr_tail(const sp_agent_stderr *s, const sp_redactor *r, size_t *len)
{
    size_t n;
    char *window = sp_tail_copy(&s->tail, &n);
    if (!window)
        return NULL;
    size_t skip = sp_tail_dropped(&s->tail) ? sp_utf8_skip_partial(window, n) : 0;
    size_t lossy_len;
    char *lossy = sp_utf8_lossy(window + skip, n - skip, &lossy_len);
    free(window);
    if (!lossy)
        return NULL;
    size_t red_len;
    char *red = sp_redact(r, lossy, lossy_len, SP_REDACT_PATTERNS, &red_len);
    free(lossy);
    if (!red)
        return NULL;
    size_t from = sp_utf8_tail_start(red, red_len, SP_AGENT_STDERR_TAIL);
    memmove(red, red + from, red_len - from + 1);
    if (len)
        *len = red_len - from;
    return red;
}

char *sp_agent_stderr_first_line(const sp_agent_stderr *s, const sp_redactor *r)
{
    size_t n;
    char *lossy = sp_utf8_lossy(s->first, s->first_len, &n);
    if (!lossy)
        return NULL;
    size_t red_len;
    char *red = sp_redact(r, lossy, n, SP_REDACT_PATTERNS, &red_len);
    free(lossy);
    if (red)
        red[sp_utf8_cut(red, red_len, 200)] = '\0';
    return red;
}
