/*
 * output.c - building and releasing sp_activity_output values, and the stop
 * signal (see runner.h). Never loses an error's code.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "runners/runner.h"

int sp_stop_init(sp_stop_signal *s, sp_error *err)
{
    (void)err;
    atomic_init(&s->fired, false);
    atomic_init(&s->fd, -1);
    return 0;
}

static void wake(int fd)
{
    uint64_t one = 1;
    if (write(fd, &one, sizeof one) < 0) {
        /* the flag is set; pollers fall back to it */
    }
}

void sp_stop_fire(sp_stop_signal *s)
{
    if (atomic_exchange(&s->fired, true))
        return;
    int fd = atomic_load(&s->fd);
    if (fd >= 0)
        wake(fd);
}

bool sp_stop_fired(sp_stop_signal *s) { return atomic_load(&s->fired); }

/* Fired and made may race: the flag is set before the descriptor is read
 * there and the descriptor published before the flag is read here, so one
 * of the two sides wakes it (both is harmless: a counter). */
int sp_stop_fd(sp_stop_signal *s)
{
    int fd = atomic_load(&s->fd);
    if (fd >= 0)
        return fd;
    int made = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (made < 0)
        return -1;
    int none = -1;
    if (!atomic_compare_exchange_strong(&s->fd, &none, made)) {
        close(made);
        return none;
    }
    if (atomic_load(&s->fired))
        wake(made);
    return made;
}

void sp_stop_destroy(sp_stop_signal *s)
{
    int fd = atomic_exchange(&s->fd, -1);
    if (fd >= 0)
        close(fd);
}

void sp_attempt_logs_free(sp_attempt_logs *l)
{
    if (!l)
        return;
    free(l->out.text);
    free(l->err.text);
    free(l);
}

void sp_activity_output_free(sp_activity_output *o)
{
    sp_attempt_logs_free(o->logs);
    free(o->outcome);
    json_decref(o->output);
    json_decref(o->error);
    json_decref(o->handle);
    memset(o, 0, sizeof *o);
}

void sp_output_held(sp_activity_output *o, json_t *handle)
{
    memset(o, 0, sizeof *o);
    o->kind = SP_OUTPUT_HELD;
    o->handle = handle;
}

void sp_output_success(sp_activity_output *o, const char *outcome, json_t *output)
{
    memset(o, 0, sizeof *o);
    o->kind = SP_OUTPUT_SUCCESS;
    o->outcome = outcome ? strdup(outcome) : NULL;
    o->output = output;
}

static json_t *error_value(const char *code, json_t *details, const char *fmt, va_list ap)
{
    char message[1024];
    vsnprintf(message, sizeof message, fmt, ap);
    return json_pack("{s:s,s:s,s:n,s:o}", "code", code, "message", message, "nodeId", "details",
                     details ? details : json_null());
}

void sp_output_failure(sp_activity_output *o, const char *code, bool retryable, json_t *details,
                       const char *fmt, ...)
{
    memset(o, 0, sizeof *o);
    o->kind = SP_OUTPUT_FAILURE;
    o->retryable = retryable;
    va_list ap;
    va_start(ap, fmt);
    o->error = error_value(code, details, fmt, ap);
    va_end(ap);
}

void sp_output_unknown(sp_activity_output *o, const char *code, json_t *details, const char *fmt,
                       ...)
{
    memset(o, 0, sizeof *o);
    o->kind = SP_OUTPUT_UNKNOWN;
    o->retryable = true;
    va_list ap;
    va_start(ap, fmt);
    o->error = error_value(code, details, fmt, ap);
    va_end(ap);
}
