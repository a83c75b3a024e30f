/*
 * error.c - filling and releasing sp_error values (see error.h).
 * Must never allocate for code or message, never print.
 */
#include "base/error.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void set_code(sp_error *err, const char *code)
{
    size_t n = strlen(code);
    if (n >= SP_CODE_MAX)
        n = SP_CODE_MAX - 1;
    memcpy(err->code, code, n);
    err->code[n] = '\0';
}

static void set_message(sp_error *err, const char *fmt, va_list ap)
{
    vsnprintf(err->message, SP_MESSAGE_MAX, fmt, ap);
}

/* Fill `err` (details ownership taken); always -1. */
static int fill(sp_error *err, const char *code, json_t *details, const char *fmt, va_list ap)
{
    if (!err) {
        json_decref(details);
        return -1;
    }
    json_decref(err->details);
    err->details = details;
    set_code(err, code);
    set_message(err, fmt, ap);
    return -1;
}

int sp_fail(sp_error *err, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fill(err, code, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

int sp_fail_details(sp_error *err, const char *code, json_t *details, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fill(err, code, details, fmt, ap);
    va_end(ap);
    return -1;
}

void sp_error_clear(sp_error *err)
{
    if (!err)
        return;
    json_decref(err->details);
    err->details = NULL;
    err->code[0] = '\0';
    err->message[0] = '\0';
}

void sp_error_move(sp_error *dst, sp_error *src)
{
    if (!dst) {
        sp_error_clear(src);
        return;
    }
    json_decref(dst->details);
    memcpy(dst->code, src->code, SP_CODE_MAX);
    memcpy(dst->message, src->message, SP_MESSAGE_MAX);
    dst->details = src->details;
    src->details = NULL;
    src->code[0] = '\0';
    src->message[0] = '\0';
}

int sp_oom(sp_error *err)
{
    return sp_fail(err, "runtime.out-of-memory", "out of memory");
}
