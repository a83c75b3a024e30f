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
    atomic_init(&s->fired, false);
    s->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->fd < 0)
        return sp_fail(err, "runtime", "cannot create an eventfd for the stop signal");
    return 0;
}

void sp_stop_fire(sp_stop_signal *s)
{
    if (atomic_exchange(&s->fired, true))
        return;
    if (s->fd >= 0) {
        uint64_t one = 1;
        if (write(s->fd, &one, sizeof one) < 0) {
            /* the flag is set; pollers fall back to it */
        }
    }
}

bool sp_stop_fired(sp_stop_signal *s) { return atomic_load(&s->fired); }

void sp_stop_destroy(sp_stop_signal *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
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
