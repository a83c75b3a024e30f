/*
 * result_file.c - reading result.json into the fixed-vocabulary diagnostic
 * (see result_file.h). Never copies a string out of the file.
 */
#define _GNU_SOURCE
#include "agent/result_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/jsontape.h"

const char *const SP_AGENT_RESULT_FILE_KEY_NAMES[SP_AGENT_RESULT_FILE_KEYS] = {
    "success", "summary", "error", "output", "options",
    "actionRequired", "diagnosis", "actionsTaken", "checks", "content",
};

static void reset(sp_agent_result_file *d, const char *file)
{
    memset(d, 0, sizeof *d);
    d->file = file;
    d->success = -1;
    d->step_id_match = -1;
}

void sp_agent_result_file_describe_absent(sp_agent_result_file *out) { reset(out, "absent"); }

void sp_agent_result_file_describe_unreachable(sp_agent_result_file *out)
{
    reset(out, "unreadable");
}

void sp_agent_result_file_describe(const char *data, size_t len, const char *step_id,
                                   sp_agent_result_file *out)
{
    reset(out, "invalid-json");
    out->bytes = len;
    sp_jt t = {0};
    t.allow_lf = true; /* a file may end with a newline; CR stays forbidden */
    if (!sp_jt_parse(&t, data, len)) {
        sp_jt_free(&t);
        return;
    }
    out->file = "invalid-record";
    if (sp_jt_at(&t, 0)->type != SP_JT_OBJECT) {
        sp_jt_free(&t);
        return;
    }
    for (size_t k = sp_jt_first(&t, 0); k; k = sp_jt_next(&t, 0, k)) {
        bool known = sp_jt_str_eq(&t, k, "stepId") || sp_jt_str_eq(&t, k, "status");
        for (int i = 0; i < SP_AGENT_RESULT_FILE_KEYS; i++)
            if (sp_jt_str_eq(&t, k, SP_AGENT_RESULT_FILE_KEY_NAMES[i])) {
                out->has[i] = known = true;
            }
        out->other_keys += !known;
    }
    size_t step = sp_jt_get(&t, 0, "stepId"), status = sp_jt_get(&t, 0, "status");
    size_t success = sp_jt_get(&t, 0, "success"), summary = sp_jt_get(&t, 0, "summary");
    size_t error = sp_jt_get(&t, 0, "error");
    out->step_id_match = step && sp_jt_str_eq(&t, step, step_id);
    uint64_t code = 0;
    if (sp_jt_uint53(&t, status, &code) && (code == 200 || code == 502))
        out->status = (int)code;
    if (success && (sp_jt_at(&t, success)->type == SP_JT_TRUE ||
                    sp_jt_at(&t, success)->type == SP_JT_FALSE))
        out->success = sp_jt_at(&t, success)->type == SP_JT_TRUE;
    bool error_ok = !error || sp_jt_at(&t, error)->type == SP_JT_STRING;
    bool valid = out->step_id_match == 1 && error_ok &&
                 ((out->status == 200 && out->success >= 0 && summary &&
                   sp_jt_at(&t, summary)->type == SP_JT_STRING) ||
                  (out->status == 502 && error && !success));
    if (valid)
        out->file = "present";
    sp_jt_free(&t);
}

void sp_agent_result_file_read(const char *path, const char *step_id, sp_agent_result_file *out)
{
    reset(out, "unreadable");
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            out->file = "absent";
        return;
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return;
    }
    if ((uint64_t)st.st_size > SP_AGENT_RESULT_FILE_MAX) {
        out->file = "oversize";
        out->bytes = (uint64_t)st.st_size;
        close(fd);
        return;
    }
    char *data = malloc(SP_AGENT_RESULT_FILE_MAX + 1);
    size_t len = 0;
    bool failed = !data;
    while (!failed && len <= SP_AGENT_RESULT_FILE_MAX) {
        ssize_t n = read(fd, data + len, SP_AGENT_RESULT_FILE_MAX + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            failed = true;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (failed) {
        free(data);
        return;
    }
    if (len > SP_AGENT_RESULT_FILE_MAX) { /* it grew while we read */
        out->file = "oversize";
        out->bytes = len;
        free(data);
        return;
    }
    sp_agent_result_file_describe(data, len, step_id, out);
    free(data);
}

json_t *sp_agent_result_file_json(const sp_agent_result_file *d)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "file", json_string(d->file));
    json_object_set_new(o, "bytes", json_integer((json_int_t)d->bytes));
    json_object_set_new(o, "status", d->status ? json_integer(d->status) : json_null());
    json_object_set_new(o, "success", d->success < 0 ? json_null() : json_boolean(d->success));
    json_object_set_new(o, "stepIdMatch",
                        d->step_id_match < 0 ? json_null() : json_boolean(d->step_id_match));
    for (int i = 0; i < SP_AGENT_RESULT_FILE_KEYS; i++) {
        char name[40];
        snprintf(name, sizeof name, "has_%s", SP_AGENT_RESULT_FILE_KEY_NAMES[i]);
        json_object_set_new(o, name, json_boolean(d->has[i]));
    }
    json_object_set_new(o, "otherKeys", json_integer((json_int_t)d->other_keys));
    return o;
}
