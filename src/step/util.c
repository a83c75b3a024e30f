/*
 * util.c - what several spore-step modules share: bounded file reads and
 * writes, strict JSON parsing of untrusted text, compact dumps, schema
 * checks through src/schema, the monotonic clock, sleeping, coded error
 * lines on stderr.
 *
 * Must never read more than the bound it is given, or print a value it was
 * not handed explicitly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/jsontape.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "step/step.h"

char *step_read_fd_bounded(int fd, size_t max, size_t *len)
{
    char *buf = malloc(max + 1);
    size_t n = buf ? sp_read_upto(fd, buf, max + 1) : 0;
    if (!buf || n > max) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

char *step_read_bounded(const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return NULL;
    char *buf = step_read_fd_bounded(fd, max, len);
    close(fd);
    return buf;
}

bool step_write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        data += n;
        len -= (size_t)n;
    }
    return true;
}

json_t *step_parse_json(const char *text, size_t len, char *why, size_t why_len)
{
    sp_jt t = {0};
    t.allow_lf = true;
    t.allow_cr = true;
    json_t *v = NULL;
    if (len > SP_JT_MAX_INPUT)
        snprintf(why, why_len, "%s", SP_JT_RULE_TOO_LARGE);
    else if (!sp_jt_parse(&t, text, len))
        snprintf(why, why_len, "%s at byte %zu", t.rule, t.err_offset);
    else if (!(v = sp_jt_to_json(&t, 0)))
        snprintf(why, why_len, "%s", SP_JT_RULE_MEMORY);
    sp_jt_free(&t);
    return v;
}

char *step_dump(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY |
                             JSON_REAL_PRECISION(15));
}

long long step_now_ms(void) { return (long long)sp_mono_ms(); }

void step_sleep_ms(long long ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

int step_fail(int exit_code, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "spore-step: %s: ", code);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return exit_code;
}

sp_schema *step_schema_compile(const json_t *doc, char *why, size_t why_len)
{
    sp_schema *s = NULL;
    sp_schema_error e;
    memset(&e, 0, sizeof e);
    int rc = sp_schema_compile(doc, &s, &e);
    if (rc == -2)
        snprintf(why, why_len, "out of memory");
    else if (rc)
        snprintf(why, why_len, "%s: %s", e.path[0] ? e.path : "(the root)", e.rule);
    return rc ? NULL : s;
}

bool step_schema_check(const sp_schema *s, const json_t *v, char *why, size_t why_len)
{
    sp_schema_error e;
    memset(&e, 0, sizeof e);
    int rc = sp_schema_check(s, v, &e);
    if (rc == 1)
        snprintf(why, why_len, "%s: %s (%s)", e.path[0] ? e.path : "(the value)", e.rule,
                 e.message);
    else if (rc)
        snprintf(why, why_len, "out of memory");
    return rc == 0;
}

bool step_schema_wanted(const json_t *doc)
{
    return json_is_object(doc) && json_object_size(doc) > 0;
}
