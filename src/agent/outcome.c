/*
 * outcome.c - the outcome table of agent-step.md §5 (see outcome.h for the
 * order). Every text that leaves here went through the redactor; details
 * hold rules, numbers, the redacted stderr tail and the fixed-vocabulary
 * result.json diagnostic, nothing else from the sandbox.
 */
#include "agent/outcome.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "json/json.h"

const char *sp_agent_status_name(sp_agent_status s)
{
    return s == SP_AGENT_SUCCESS ? "success" : s == SP_AGENT_FAILURE ? "failure" : "unknown";
}

void sp_agent_outcome_free(sp_agent_outcome *o)
{
    free(o->error);
    json_decref(o->output);
    json_decref(o->details);
    memset(o, 0, sizeof *o);
}

static void set(sp_agent_outcome *o, sp_agent_status status, const char *code, bool retryable,
                bool taint, sp_breaker_effect breaker)
{
    o->status = status;
    snprintf(o->code, sizeof o->code, "%s", code);
    o->retryable = retryable;
    o->taint = taint;
    o->breaker = breaker;
}

static void vmessage(sp_agent_outcome *o, const char *fmt, va_list ap)
{
    char raw[2048], clean[SP_AGENT_MESSAGE_MAX + 1];
    vsnprintf(raw, sizeof raw, fmt, ap);
    sp_utf8_clean(clean, sizeof clean, raw);
    free(o->error);
    o->error = strdup(clean);
}

__attribute__((format(printf, 2, 3))) static void message(sp_agent_outcome *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(o, fmt, ap);
    va_end(ap);
}

void sp_agent_outcome_fail(sp_agent_outcome *o, const char *code, bool retryable, bool taint,
                           sp_breaker_effect breaker, json_t *details, const char *fmt, ...)
{
    memset(o, 0, sizeof *o);
    set(o, SP_AGENT_FAILURE, code, retryable, taint, breaker);
    o->details = details ? details : json_object();
    va_list ap;
    va_start(ap, fmt);
    vmessage(o, fmt, ap);
    va_end(ap);
}

bool sp_agent_end_needs_result_file(const sp_agent_end *end)
{
    return end->kind == SP_AGENT_LOST || (end->kind == SP_AGENT_EXITED && end->exit_code == 4);
}

/* ---- details ---- */

static void put(json_t *o, const char *name, json_t *v)
{
    if (o && v)
        json_object_set_new(o, name, v);
    else
        json_decref(v);
}

static json_t *base_details(const sp_agent_reader *reader, const sp_agent_stderr *err,
                            const sp_agent_end *end, const char *step_id)
{
    json_t *d = json_object();
    long long pid;
    put(d, "stepId", json_string(step_id));
    put(d, "exitCode", end->kind == SP_AGENT_EXITED ? json_integer(end->exit_code) : json_null());
    put(d, "signal", end->kind == SP_AGENT_SIGNALED ? json_integer(end->signal) : json_null());
    put(d, "stepPid", err && sp_agent_stderr_pid(err, &pid) ? json_integer(pid) : json_null());
    uint64_t out_bytes = 0;
    if (reader)
        out_bytes = reader->consumed +
                    (reader->state == SP_READER_VIOLATED ? 0 : (uint64_t)reader->line_len);
    put(d, "stdoutBytes", json_integer((json_int_t)out_bytes));
    put(d, "stderrBytes", json_integer(err ? (json_int_t)sp_agent_stderr_total(err) : 0));
    put(d, "events", json_integer(reader ? (json_int_t)reader->events : 0));
    return d;
}

static void add_tail(json_t *d, const sp_agent_stderr *err, const sp_redactor *r)
{
    size_t n;
    char *tail = err ? sp_agent_stderr_tail(err, r, &n) : NULL;
    put(d, "stderrTail", tail ? json_stringn_nocheck(tail, n) : json_string(""));
    free(tail);
}

static void add_violation(json_t *d, const char *rule, uint64_t line)
{
    put(d, "rule", json_string(rule));
    put(d, "line", json_integer((json_int_t)line));
}

/* A text from the step (body.error, summary, 502 error): redacted with
 * both layers, made valid, cut to the message bound. */
static char *step_text(const sp_redactor *r, const char *s)
{
    size_t n;
    char *red = sp_redact(r, s, strlen(s), SP_REDACT_PATTERNS, &n);
    if (!red)
        return NULL;
    char clean[SP_AGENT_MESSAGE_MAX + 1];
    sp_utf8_clean(clean, sizeof clean, red);
    free(red);
    return strdup(clean);
}

/* ---- the success path ---- */

static void succeed(sp_agent_outcome *o, const sp_agent_result *res, const sp_redactor *r)
{
    if (res->body_too_large || !res->body) {
        set(o, SP_AGENT_FAILURE, "agent.output-too-large", false, false, SP_BREAKER_NONE);
        message(o, "the step's structured output is larger than spore can record");
        return;
    }
    json_t *body = json_deep_copy(res->body);
    if (body)
        json_object_del(body, "success");
    bool collision = false;
    json_t *output = body ? sp_redact_json(r, body, &collision) : NULL;
    json_decref(body);
    if (!output) {
        set(o, SP_AGENT_FAILURE, "agent.output-invalid", false, false, SP_BREAKER_NONE);
        message(o, collision ? "two output member names became equal after redaction"
                             : "out of memory while reading the step's output");
        put(o->details, "problem", json_string(collision ? "redaction-collision" : "memory"));
        return;
    }
    sp_buf b = SP_BUF_INIT;
    b.limit = SP_AGENT_OUTPUT_MAX;
    sp_error err = {0};
    int rc = sp_json_encode(output, &b, &err);
    sp_buf_free(&b);
    if (rc) {
        bool large = strcmp(err.code, "canonical.too-large") == 0;
        set(o, SP_AGENT_FAILURE, large ? "agent.output-too-large" : "agent.output-invalid",
            false, false, SP_BREAKER_NONE);
        if (large)
            message(o, "the step's structured output is over %u bytes", SP_AGENT_OUTPUT_MAX);
        else
            message(o, "the step's structured output is outside spore's JSON domain (%s): "
                       "use strings for fractional numbers", err.code);
        put(o->details, "problem", json_string(err.code));
        sp_error_clear(&err);
        json_decref(output);
        return;
    }
    set(o, SP_AGENT_SUCCESS, "", false, false, SP_BREAKER_SUCCESS);
    o->output = output;
}

/* ---- the table ---- */

static void violation(sp_agent_outcome *o, const char *rule, uint64_t line)
{
    set(o, SP_AGENT_FAILURE, "agent.protocol-violation", false, true, SP_BREAKER_NONE);
    add_violation(o->details, rule, line);
    message(o, "the step broke the protocol: %s at line %llu", rule, (unsigned long long)line);
}

static void exited_zero(sp_agent_outcome *o, const sp_agent_reader *reader,
                        const sp_redactor *r)
{
    uint64_t line = 0;
    const char *rule = sp_agent_reader_eof_rule(reader, &line);
    if (rule) {
        violation(o, rule, line);
        return;
    }
    const sp_agent_result *res = &reader->result;
    if (res->status == 502) {
        set(o, SP_AGENT_FAILURE, "agent.infra-transient", true, false, SP_BREAKER_FAILURE);
        char *text = step_text(r, res->error ? res->error : "");
        message(o, "the step reported a transient failure (502): %s", text ? text : "");
        free(text);
        return;
    }
    if (res->success) {
        succeed(o, res, r);
        return;
    }
    set(o, SP_AGENT_FAILURE, "agent.failed", false, false, SP_BREAKER_FAILURE);
    char *text = step_text(r, res->error ? res->error : res->summary ? res->summary : "");
    message(o, "%s", text && *text ? text : "the step reported failure");
    free(text);
}

static void exited(sp_agent_outcome *o, int code, const sp_agent_stderr *err,
                   const sp_redactor *r, const sp_agent_result_file *file)
{
    switch (code) {
    case 1:
        set(o, SP_AGENT_FAILURE, "agent.internal-error", false, false, SP_BREAKER_FAILURE);
        add_tail(o->details, err, r);
        message(o, "the step CLI failed with an internal error (exit 1)");
        return;
    case 2:
        set(o, SP_AGENT_FAILURE, "agent.request-invalid", false, false, SP_BREAKER_FAILURE);
        add_tail(o->details, err, r);
        message(o, "the step CLI refused the request (exit 2)");
        return;
    case 3:
        set(o, SP_AGENT_FAILURE, "agent.precondition-failed", false, false, SP_BREAKER_NONE);
        add_tail(o->details, err, r);
        message(o, "the step CLI could not start: a precondition failed (exit 3)");
        return;
    case 4: {
        json_t *diag = file ? sp_agent_result_file_json(file) : NULL;
        put(o->details, "resultFile", diag);
        if (file && strcmp(file->file, "present") == 0) {
            set(o, SP_AGENT_FAILURE, "agent.result-unverified", false, true, SP_BREAKER_NONE);
            message(o, "the step wrote result.json but no result line (exit 4): "
                       "a result that cannot be verified");
        } else {
            char rule[64];
            snprintf(rule, sizeof rule, "result-file.%s", file ? file->file : "absent");
            set(o, SP_AGENT_FAILURE, "agent.protocol-violation", false, true, SP_BREAKER_NONE);
            put(o->details, "rule", json_string(rule));
            message(o, "the step exited 4 without a valid result.json (%s)",
                    file ? file->file : "absent");
        }
        return;
    }
    case 124:
        set(o, SP_AGENT_FAILURE, "agent.deadline", false, true, SP_BREAKER_FAILURE);
        message(o, "the transport's deadline ended the step (exit 124)");
        return;
    default:
        if (code >= 129 && code <= 159) {
            set(o, SP_AGENT_FAILURE, "agent.killed", false, true, SP_BREAKER_NONE);
            put(o->details, "killedBySignal", json_integer(code - 128));
            message(o, "the step was killed by signal %d (exit %d)", code - 128, code);
        } else {
            set(o, SP_AGENT_FAILURE, "agent.unexpected-exit", false, true, SP_BREAKER_NONE);
            message(o, "the step CLI exited with %d, which the protocol does not define", code);
        }
    }
}

void sp_agent_classify(const sp_agent_reader *reader, const sp_agent_stderr *err,
                       const sp_redactor *r, const sp_agent_end *end,
                       const sp_agent_result_file *file, const char *step_id,
                       sp_agent_outcome *o)
{
    memset(o, 0, sizeof *o);
    o->details = base_details(reader, err, end, step_id);
    switch (end->kind) {
    case SP_AGENT_SANDBOX_FAILED: {
        set(o, SP_AGENT_FAILURE, "agent.sandbox-unavailable", false, true, SP_BREAKER_NONE);
        char *first = err ? sp_agent_stderr_first_line(err, r) : NULL;
        message(o, "the sandbox could not be built: %s%s%s", end->message,
                first && *first ? ": " : "", first ? first : "");
        free(first);
        return;
    }
    case SP_AGENT_SPAWN_FAILED:
        set(o, SP_AGENT_FAILURE, "agent.exec-unavailable", true, true, SP_BREAKER_FAILURE);
        message(o, "the transport could not start the step: %s", end->message);
        return;
    case SP_AGENT_STOPPED:
        set(o, SP_AGENT_UNKNOWN, "agent.stopped", true, true, SP_BREAKER_NONE);
        message(o, "the engine stopped the step (lease lost or shutdown)");
        return;
    default:
        break;
    }
    if (reader->state == SP_READER_VIOLATED) {
        violation(o, reader->rule, reader->rule_line);
        return;
    }
    if (end->kind == SP_AGENT_LOST) {
        set(o, SP_AGENT_FAILURE, "agent.result-unverified", false, true, SP_BREAKER_NONE);
        put(o->details, "lostStream", json_true());
        put(o->details, "resultLineSeen", json_boolean(reader->state == SP_READER_DONE));
        put(o->details, "resultFile", file ? sp_agent_result_file_json(file) : NULL);
        message(o, "the transport lost the stream after the step started: "
                   "its result cannot be verified");
        return;
    }
    if (end->kind == SP_AGENT_EXITED && end->exit_code == 0) {
        exited_zero(o, reader, r);
        return;
    }
    if (reader->state == SP_READER_DONE) {
        violation(o, SP_RULE_RESULT_WITH_EXIT, reader->result.line);
        return;
    }
    if (end->kind == SP_AGENT_TIMED_OUT) {
        set(o, SP_AGENT_FAILURE, "agent.deadline", false, true, SP_BREAKER_FAILURE);
        message(o, "the step ran past its deadline and was killed");
        return;
    }
    if (end->kind == SP_AGENT_SIGNALED) {
        exited(o, 128 + end->signal, err, r, file);
        return;
    }
    exited(o, end->exit_code, err, r, file);
}

json_t *sp_agent_outcome_json(const sp_agent_outcome *o)
{
    return json_pack("{s:s,s:o,s:b,s:b,s:s,s:o,s:O,s:O}", "status",
                     sp_agent_status_name(o->status), "code",
                     o->code[0] ? json_string(o->code) : json_null(), "retryable", o->retryable,
                     "taint", o->taint, "breaker", sp_breaker_effect_name(o->breaker), "error",
                     o->error ? json_string(o->error) : json_null(), "output",
                     o->output ? o->output : json_null(), "details",
                     o->details ? o->details : json_null());
}
