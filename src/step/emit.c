/*
 * emit.c - spore-step's protocol writer: records as compact JSON lines on
 * the private stdout descriptor, and result.json written atomically.
 *
 * Must never write a partial record on purpose, or leave a temporary file
 * behind when it can remove it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "step/step.h"

static bool emit(step_out *o, json_t *record)
{
    char *text = record ? json_dumps(record, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))
                        : NULL;
    json_decref(record);
    if (!text)
        return false;
    size_t n = strlen(text);
    text[n] = '\n';
    bool ok = step_write_all(o->fd, text, n + 1);
    free(text);
    return ok;
}

static json_t *envelope(step_out *o, const char *type)
{
    return json_pack("{s:i,s:s,s:s}", "v", 1, "type", type, "stepId", o->step_id);
}

bool step_emit_start(step_out *o) { return emit(o, envelope(o, "start")); }

static void timestamp(char out[40])
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 40, "%s.%03dZ", date, (int)(tv.tv_usec / 1000));
}

bool step_emit_event(step_out *o, const char *kind, json_t *data)
{
    json_t *r = envelope(o, "event");
    char ts[40];
    timestamp(ts);
    if (!r || !data) {
        json_decref(r);
        json_decref(data);
        return false;
    }
    json_object_set_new(r, "seq", json_integer((json_int_t)++o->seq));
    json_object_set_new(r, "ts", json_string(ts));
    json_object_set_new(r, "kind", json_string(kind));
    json_object_set_new(r, "data", data);
    return emit(o, r);
}

bool step_emit_raw(step_out *o, const char *line)
{
    return step_write_all(o->fd, line, strlen(line)) && step_write_all(o->fd, "\n", 1);
}

bool step_emit_result(step_out *o, int status, json_t *body)
{
    json_t *r = envelope(o, "result");
    if (!r)
        return false;
    json_object_set_new(r, "status", json_integer(status));
    json_object_set(r, "body", body);
    return emit(o, r);
}

bool step_write_result_file(const char *run_dir, const char *step_id, int status,
                            const json_t *body)
{
    json_t *doc = json_pack("{s:s,s:i}", "stepId", step_id, "status", status);
    if (!doc)
        return false;
    json_object_update(doc, (json_t *)body);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (!text)
        return false;
    char tmp[4200], final[4200];
    snprintf(tmp, sizeof tmp, "%s/.result.json.%ld.tmp", run_dir, (long)getpid());
    snprintf(final, sizeof final, "%s/result.json", run_dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && step_write_all(fd, text, strlen(text)) && step_write_all(fd, "\n", 1) &&
              fsync(fd) == 0;
    free(text);
    if (fd >= 0 && close(fd) != 0)
        ok = false;
    if (ok)
        ok = rename(tmp, final) == 0;
    if (!ok) {
        unlink(tmp);
        return false;
    }
    int dir = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        fsync(dir);
        close(dir);
    }
    return true;
}

int step_finish(const step_request *r, step_out *out, int status, json_t *body, bool close_first)
{
    if (!body || !step_write_result_file(r->run_dir, r->step_id, status, body)) {
        fprintf(stderr, "spore-step: cannot write result.json in the run directory\n");
        json_decref(body);
        return STEP_EXIT_INTERNAL;
    }
    if (close_first) {
        close(out->fd); /* the fake provider's failure mode: stdout is gone */
        out->fd = -1;
    }
    bool ok = out->fd >= 0 && step_emit_result(out, status, body);
    json_decref(body);
    if (!ok) {
        fprintf(stderr, "spore-step: the result line could not be written (result.json holds "
                        "the result)\n");
        return STEP_EXIT_UNVERIFIED;
    }
    return STEP_EXIT_OK;
}
