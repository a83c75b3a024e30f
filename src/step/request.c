/*
 * request.c - spore-step's side of the step request (agent-step.md §2):
 * at most 983,040 bytes of stdin, parsed with the protocol's own strict
 * parser (src/agent/jsontape.c), then the closed member set and each
 * member's type. Every problem is exit 2 with a reason on stderr.
 *
 * Must never accept an unknown member, read more than the bound, or echo a
 * value from the request into its message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/jsontape.h"
#include "agent/reader.h"
#include "agent/request.h"
#include "step/step.h"

static int invalid(const char *why)
{
    fprintf(stderr, "spore-step: request invalid: %s\n", why);
    return STEP_EXIT_REQUEST;
}

static bool clean_absolute(const char *p)
{
    if (p[0] != '/')
        return false;
    for (const char *s = p; *s;) {
        const char *slash = strchr(s, '/');
        size_t n = slash ? (size_t)(slash - s) : strlen(s);
        if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return false;
        if (!slash)
            break;
        s = slash + 1;
    }
    return true;
}

static int check(step_request *r, const sp_jt *t)
{
    static const char *const known[] = {"query",      "context", "systemPrompt", "outputSchema",
                                        "timeout_ms", "stepId",  "runDir",       "traceparent"};
    if (sp_jt_at(t, 0)->type != SP_JT_OBJECT)
        return invalid("the request is not a JSON object");
    for (size_t k = sp_jt_first(t, 0); k; k = sp_jt_next(t, 0, k)) {
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0] && !ok; i++)
            ok = sp_jt_str_eq(t, k, known[i]);
        if (!ok)
            return invalid("the request has an unknown member");
    }
    size_t q = sp_jt_get(t, 0, "query"), ctx = sp_jt_get(t, 0, "context");
    size_t sys = sp_jt_get(t, 0, "systemPrompt"), schema = sp_jt_get(t, 0, "outputSchema");
    size_t timeout = sp_jt_get(t, 0, "timeout_ms"), step = sp_jt_get(t, 0, "stepId");
    size_t dir = sp_jt_get(t, 0, "runDir"), tp = sp_jt_get(t, 0, "traceparent");
    if (!q || !sys || !schema || !timeout || !step || !dir)
        return invalid("a required member is missing (query, systemPrompt, outputSchema, "
                       "timeout_ms, stepId, runDir)");
    if (sp_jt_at(t, q)->type != SP_JT_STRING)
        return invalid("query is not a string");
    if (ctx && sp_jt_at(t, ctx)->type != SP_JT_OBJECT)
        return invalid("context is not an object");
    if (sp_jt_at(t, sys)->type != SP_JT_STRING)
        return invalid("systemPrompt is not a string");
    if (sp_jt_at(t, schema)->type != SP_JT_OBJECT)
        return invalid("outputSchema is not an object");
    uint64_t ms;
    if (!sp_jt_uint53(t, timeout, &ms) || ms == 0)
        return invalid("timeout_ms is not an integer in 1..2^53-1");
    r->timeout_ms = ms;
    sp_buf b = SP_BUF_INIT;
    if (sp_jt_at(t, step)->type != SP_JT_STRING || sp_jt_at(t, step)->len > 40)
        return invalid("stepId does not match ^[a-z0-9-]{1,40}$");
    sp_jt_str_decode(t, step, &b);
    sp_buf_append(&b, "", 0);
    bool step_ok = sp_buf_ok(&b) && strlen(b.data) == b.len && sp_agent_step_id_valid(b.data);
    if (step_ok)
        snprintf(r->step_id, sizeof r->step_id, "%s", b.data);
    sp_buf_free(&b);
    if (!step_ok)
        return invalid("stepId does not match ^[a-z0-9-]{1,40}$");
    if (sp_jt_at(t, dir)->type != SP_JT_STRING || sp_jt_at(t, dir)->len > 4096)
        return invalid("runDir is not an absolute path");
    sp_jt_str_decode(t, dir, &b);
    sp_buf_append(&b, "", 0);
    bool dir_ok = sp_buf_ok(&b) && strlen(b.data) == b.len && clean_absolute(b.data) &&
                  b.len <= 4096;
    if (dir_ok)
        snprintf(r->run_dir, sizeof r->run_dir, "%s", b.data);
    sp_buf_free(&b);
    if (!dir_ok)
        return invalid("runDir is not an absolute path without \".\" or \"..\"");
    if (tp) {
        if (sp_jt_at(t, tp)->type != SP_JT_STRING || sp_jt_at(t, tp)->len != 55)
            return invalid("traceparent is not a W3C traceparent");
        sp_jt_str_decode(t, tp, &b);
        sp_buf_append(&b, "", 0);
        bool tp_ok = sp_buf_ok(&b) && sp_agent_traceparent_valid(b.data);
        if (tp_ok)
            snprintf(r->traceparent, sizeof r->traceparent, "%s", b.data);
        sp_buf_free(&b);
        if (!tp_ok)
            return invalid("traceparent is not a W3C traceparent");
    }
    r->doc = sp_jt_to_json(t, 0);
    if (!r->doc) {
        fprintf(stderr, "spore-step: out of memory\n");
        return STEP_EXIT_INTERNAL;
    }
    r->query = json_object_get(r->doc, "query");
    r->context = json_object_get(r->doc, "context");
    r->system_prompt = json_object_get(r->doc, "systemPrompt");
    r->output_schema = json_object_get(r->doc, "outputSchema");
    return 0;
}

int step_read_request(step_request *r)
{
    memset(r, 0, sizeof *r);
    size_t cap = SP_AGENT_REQUEST_MAX + 1, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fprintf(stderr, "spore-step: out of memory\n");
        return STEP_EXIT_INTERNAL;
    }
    for (;;) {
        ssize_t n = read(0, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            return invalid("stdin cannot be read");
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == cap) {
            free(buf);
            return invalid("the request is larger than 983040 bytes");
        }
    }
    /* one object, then EOF; a single trailing LF is tolerated */
    size_t body = len > 0 && buf[len - 1] == '\n' ? len - 1 : len;
    sp_jt t = {0};
    int rc;
    if (!sp_jt_parse(&t, buf, body)) {
        char why[128];
        snprintf(why, sizeof why, "the request is not strict JSON (%s at byte %zu)", t.rule,
                 t.err_offset);
        rc = invalid(why);
    } else {
        rc = check(r, &t);
    }
    sp_jt_free(&t);
    free(buf);
    if (rc)
        step_request_free(r);
    return rc;
}

void step_request_free(step_request *r)
{
    json_decref(r->doc);
    r->doc = NULL;
}
