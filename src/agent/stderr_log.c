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
    s->ring = malloc(SP_AGENT_STDERR_RING);
    return s->ring ? 0 : -1;
}

void sp_agent_stderr_free(sp_agent_stderr *s)
{
    free(s->ring);
    s->ring = NULL;
}

static void ring_put(sp_agent_stderr *s, const char *data, size_t n)
{
    const size_t cap = SP_AGENT_STDERR_RING;
    if (n > cap) {
        s->total += n - cap;
        data += n - cap;
        n = cap;
    }
    size_t pos = (size_t)(s->total % cap);
    size_t first = n < cap - pos ? n : cap - pos;
    memcpy(s->ring + pos, data, first);
    memcpy(s->ring, data + first, n - first);
    s->total += n;
}

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
    if (s->ring)
        ring_put(s, data, len);
    else
        s->total += len;
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
    const size_t cap = SP_AGENT_STDERR_RING;
    size_t n = s->total < cap ? (size_t)s->total : cap;
    char *window = malloc(n + 1);
    if (!window)
        return NULL;
    if (s->ring) {
        size_t start = s->total < cap ? 0 : (size_t)(s->total % cap);
        memcpy(window, s->ring + start, n - start);
        memcpy(window + (n - start), s->ring, start);
    } else {
        n = 0;
    }
    size_t skip = s->total > cap ? sp_utf8_skip_partial(window, n) : 0;
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
    size_t from = red_len > SP_AGENT_STDERR_TAIL ? red_len - SP_AGENT_STDERR_TAIL : 0;
    while (from < red_len && ((unsigned char)red[from] & 0xC0) == 0x80)
        from++;
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
