/*
 * loop.c - the tool loop of spore-step's HTTP providers (agent-providers.md
 * §1, §2), the same over every wire: the conversation starts with the
 * query (and the context), each turn sends it with the offered tools, a
 * reply's tool calls are run and answered, and a reply without tool calls
 * is the final answer, checked against outputSchema (src/schema, the
 * project's subset; a schema outside it only asks for a JSON object) with
 * one repair turn.
 *
 * Bounds and the error mapping:
 * - maxTurns model turns; past them a 200 with success false
 *   (step.max-turns).
 * - HTTP 429, 5xx and transport failures: retried with exponential backoff
 *   and jitter (RETRIES attempts per turn), then a 502 (provider.unavailable:
 *   transient, so the runner's retry policy and breaker apply).
 * - The step's own timeout_ms (less a reserve): a 502 (provider.timeout),
 *   before the runner's deadline.
 * - 401 / 403: exit 3 (provider.credentials-refused); other 4xx: exit 1
 *   (provider.request-refused) with the provider's error code, never the
 *   message (it may quote the prompt).
 * - A reply over REPLY_MAX, or one that does not parse or has the wrong
 *   shape: asked again, at most BAD_REPLIES times in the step, then exit 1
 *   (provider.reply-too-large / provider.reply-malformed).
 * - A tool call with bad arguments is answered to the model as a tool
 *   error, at most BAD_CALLS times in the step, then exit 1
 *   (tool.bad-arguments).
 * Every model turn and tool call is a protocol event: thinking (the text
 * beside tool calls), tool_call, tool_result, error (a retry, a refusal, a
 * repair), result (the final text with token counts).
 *
 * Must never send the key anywhere but the wire's credential header, print
 * a prompt, a reply body or a provider's message on stderr, or end without
 * a result except through the exit codes above.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/utf8.h"
#include "step/step.h"

#define REPLY_MAX (4u * 1024 * 1024)
#define RETRIES 4
#define BACKOFF_BASE_MS 200
#define BAD_REPLIES 2
#define BAD_CALLS 5
#define EVENT_TEXT_MAX (32u * 1024)
#define RESERVE_MAX_MS 1000

typedef enum turn_end { TURN_NEXT, TURN_DONE } turn_end;

typedef struct loop {
    const step_request *r;
    const step_config *c;
    const step_wire *w;
    step_out *out;
    long long deadline;
    json_t *messages, *tools;
    step_mcp *mcp; /* the stdio MCP servers, NULL when none */
    sp_schema *schema; /* outputSchema compiled; NULL: none, or outside the subset */
    char *system;
    char *headers[8];
    long long in_tokens, out_tokens;
    char model[128];
    unsigned bad_replies, bad_calls;
    bool repaired;
    int exit_code; /* with TURN_DONE */
} loop;

/* ---- events ---- */

static json_t *cut_string(const char *s)
{
    size_t len = strlen(s), keep = sp_utf8_cut(s, len, EVENT_TEXT_MAX);
    json_t *v = sp_utf8_lossy_json(s, keep);
    if (v && keep < len) {
        char note[64];
        snprintf(note, sizeof note, "\n[cut: %zu bytes in all]", len);
        json_t *both = json_sprintf("%s%s", json_string_value(v), note);
        json_decref(v);
        v = both;
    }
    return v;
}

static void event_error(loop *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void event_error(loop *l, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    step_emit_event(l->out, "error", json_pack("{s:s}", "message", text));
}

/* ---- endings ---- */

static turn_end done(loop *l, int code)
{
    l->exit_code = code;
    return TURN_DONE;
}

static turn_end transient(loop *l, const char *code, const char *message)
{
    step_fail(0, code, "%s", message);
    char text[400];
    snprintf(text, sizeof text, "%s: %s", code, message);
    return done(l, step_finish(l->r, l->out, 502, json_pack("{s:s}", "error", text), false));
}

static turn_end finish_200(loop *l, json_t *body)
{
    return done(l, step_finish(l->r, l->out, 200, body, false));
}

/* ---- one model call, with the retries ---- */

static long long backoff_ms(int attempt)
{
    unsigned r = 0;
    if (getrandom(&r, sizeof r, 0) != sizeof r)
        r = 0;
    long long full = (long long)BACKOFF_BASE_MS << (attempt - 1);
    return full / 2 + (long long)(r % (unsigned)(full / 2 + 1)); /* [full/2, full] */
}

static bool retryable_status(long s) { return s == 429 || s == 408 || s >= 500; }

/* An HTTP error that ends the step: 401/403 exit 3, the rest exit 1. */
static turn_end refused(loop *l, const step_http_reply *res)
{
    char why[80], code[96] = "";
    json_t *reply = step_parse_json(res->body.data ? res->body.data : "", res->body.len, why,
                                    sizeof why);
    step_provider_error_code(reply, code, sizeof code);
    json_decref(reply);
    if (res->status == 401 || res->status == 403)
        return done(l, step_fail(STEP_EXIT_PRECONDITION, "provider.credentials-refused",
                                 "the provider answered HTTP %ld (provider error code \"%s\"): "
                                 "the credentials are missing or refused",
                                 res->status, code));
    return done(l, step_fail(STEP_EXIT_INTERNAL, "provider.request-refused",
                             "the provider answered HTTP %ld (provider error code \"%s\")",
                             res->status, code));
}

/* A reply we cannot use: asked again while the budget lasts. */
static bool bad_reply(loop *l, const char *code, const char *why)
{
    if (++l->bad_replies > BAD_REPLIES) {
        l->exit_code = step_fail(STEP_EXIT_INTERNAL, code, "%s (%u times)", why, l->bad_replies);
        return false;
    }
    event_error(l, "%s: %s; asking again", code, why);
    return true;
}

/* What one HTTP answer means for the turn. */
typedef enum http_step {
    HTTP_GOT,   /* a reply to parse */
    HTTP_RETRY, /* transient: after a backoff, the next of RETRIES attempts */
    HTTP_AGAIN, /* a bad reply: asked again at once (the budget is BAD_REPLIES) */
    HTTP_END,   /* the step ends (l->exit_code) */
} http_step;

static http_step timed_out(loop *l)
{
    transient(l, "provider.timeout", "the model did not answer before timeout_ms");
    return HTTP_END;
}

/* A transient failure: wait and retry, or a 502 once the attempts are used. */
static http_step backoff(loop *l, int attempt, const char *why)
{
    if (attempt >= RETRIES) {
        char msg[300];
        snprintf(msg, sizeof msg, "the provider failed %d times in a row, the last: %s", attempt,
                 why);
        transient(l, "provider.unavailable", msg);
        return HTTP_END;
    }
    long long wait = backoff_ms(attempt), left = l->deadline - step_now_ms();
    event_error(l, "%s: retrying in %lld ms (attempt %d of %d)", why, wait, attempt + 1, RETRIES);
    step_sleep_ms(wait < left ? wait : left);
    return HTTP_RETRY;
}

static http_step judge(loop *l, const step_http_reply *res, int attempt, json_t **reply)
{
    char why[160] = "";
    switch (res->end) {
    case STEP_HTTP_TIMEOUT:
        return timed_out(l);
    case STEP_HTTP_TOO_LARGE:
        snprintf(why, sizeof why, "the reply is larger than %u bytes", REPLY_MAX);
        return bad_reply(l, "provider.reply-too-large", why) ? HTTP_AGAIN : HTTP_END;
    case STEP_HTTP_TRANSPORT:
        snprintf(why, sizeof why, "no answer (%.120s)", res->error);
        return backoff(l, attempt, why);
    case STEP_HTTP_DONE:
        break;
    }
    if (retryable_status(res->status)) {
        snprintf(why, sizeof why, "HTTP %ld", res->status);
        return backoff(l, attempt, why);
    }
    if (res->status < 200 || res->status > 299) {
        refused(l, res);
        return HTTP_END;
    }
    *reply = step_parse_json(res->body.data ? res->body.data : "", res->body.len, why, sizeof why);
    if (json_is_object(*reply))
        return HTTP_GOT;
    json_decref(*reply);
    *reply = NULL;
    char msg[200];
    snprintf(msg, sizeof msg, "the reply is not a JSON object (%s)", why[0] ? why : "shape");
    return bad_reply(l, "provider.reply-malformed", msg) ? HTTP_AGAIN : HTTP_END;
}

/* The reply of this turn in *reply (TURN_NEXT), or the step's end. */
static turn_end call_model(loop *l, json_t **reply)
{
    json_t *body = l->w->request(l->c, l->system, l->messages, l->tools, l->r->output_schema);
    char *text = body ? step_dump(body) : NULL;
    json_decref(body);
    *reply = NULL;
    if (!text)
        return done(l, step_fail(STEP_EXIT_INTERNAL, "step.out-of-memory", "out of memory"));
    http_step step = HTTP_RETRY;
    for (int attempt = 1; step == HTTP_RETRY || step == HTTP_AGAIN;) {
        long long left = l->deadline - step_now_ms();
        if (left <= 0) {
            step = timed_out(l);
            break;
        }
        step_http_reply res;
        step_http_post(l->c, l->w->path, (const char *const *)l->headers, text, strlen(text), left,
                       REPLY_MAX, &res);
        step = judge(l, &res, attempt, reply);
        step_http_reply_free(&res);
        attempt = step == HTTP_AGAIN ? 1 : attempt + 1;
    }
    free(text);
    return step == HTTP_GOT ? TURN_NEXT : TURN_DONE;
}

/* ---- the tool calls of one turn ---- */

static void emit_call(loop *l, const step_call *call)
{
    json_t *input = call->input ? json_incref(call->input) : json_object();
    char *dump = step_dump(input);
    if (dump && strlen(dump) > EVENT_TEXT_MAX) {
        json_decref(input);
        input = json_pack("{s:b,s:I}", "cut", 1, "bytes", (json_int_t)strlen(dump));
    }
    free(dump);
    step_emit_event(l->out, "tool_call",
                    json_pack("{s:s,s:o,s:s}", "name", step_mcp_display(l->mcp, call->name),
                              "input", input, "call_id", call->id));
}

static turn_end run_calls(loop *l, const step_turn *t)
{
    step_tool_ctx ctx = {l->c, l->r->run_dir, l->deadline};
    step_tool_result results[STEP_CALLS_MAX];
    step_tool_out outs[STEP_CALLS_MAX];
    memset(outs, 0, sizeof outs);
    for (size_t i = 0; i < t->ncalls; i++) {
        const step_call *call = &t->calls[i];
        emit_call(l, call);
        step_tool_out *o = &outs[i];
        if (call->bad[0])
            step_tool_error(o, "bad arguments: %s", call->bad);
        else if (!step_mcp_call(l->mcp, call->name, call->input, l->deadline, o))
            step_tool_call(&ctx, call->name, call->input, o);
        if (o->bad_arguments || call->bad[0])
            l->bad_calls++;
        sp_buf_append(&o->text, "", 0);
        results[i] = (step_tool_result){call->id, o->text.data ? o->text.data : "", o->is_error};
        step_emit_event(l->out, "tool_result",
                        json_pack("{s:o,s:s}", "output", cut_string(results[i].text), "call_id",
                                  call->id));
    }
    bool ok = l->w->add_results(l->messages, results, t->ncalls);
    for (size_t i = 0; i < t->ncalls; i++)
        step_tool_out_free(&outs[i]);
    if (l->bad_calls > BAD_CALLS)
        return done(l, step_fail(STEP_EXIT_INTERNAL, "tool.bad-arguments",
                                 "the model sent bad tool arguments %u times", l->bad_calls));
    if (!ok)
        return done(l, step_fail(STEP_EXIT_INTERNAL, "step.out-of-memory", "out of memory"));
    return TURN_NEXT;
}

/* ---- the final answer ---- */

/* The answer's JSON: the text, or the text inside a ``` fence. */
static json_t *answer_json(const char *text, char *why, size_t len)
{
    const char *start = text, *end = text + strlen(text);
    const char *fence = strstr(text, "```");
    if (fence) {
        const char *nl = strchr(fence, '\n'), *close = nl ? strstr(nl, "```") : NULL;
        if (nl && close) {
            start = nl + 1;
            end = close;
        }
    }
    json_t *v = step_parse_json(start, (size_t)(end - start), why, len);
    if (v && !json_is_object(v)) {
        json_decref(v);
        snprintf(why, len, "not a JSON object");
        return NULL;
    }
    return v;
}

static void emit_result_event(loop *l, const char *text)
{
    json_t *data = json_pack("{s:o,s:I,s:I}", "text", cut_string(text), "input_tokens",
                             (json_int_t)l->in_tokens, "output_tokens", (json_int_t)l->out_tokens);
    if (data && l->model[0])
        json_object_set_new(data, "response_model", json_string(l->model));
    step_emit_event(l->out, "result", data);
}

static turn_end final_answer(loop *l, const step_turn *t)
{
    if (!step_schema_wanted(l->r->output_schema)) {
        emit_result_event(l, t->text);
        return finish_200(l, json_pack("{s:b,s:s}", "success", 1, "summary", t->text));
    }
    char why[300] = "";
    json_t *v = answer_json(t->text, why, sizeof why);
    bool fits = v && (!l->schema || step_schema_check(l->schema, v, why, sizeof why));
    if (!fits && !l->repaired) {
        l->repaired = true;
        json_decref(v);
        event_error(l, "the answer does not match the outputSchema (%s): one repair turn", why);
        char ask[600];
        snprintf(ask, sizeof ask, "Your answer is not a JSON object matching the output schema "
                 "(%s). Answer again with only that JSON object.", why);
        return l->w->add_user(l->messages, ask) ? TURN_NEXT : TURN_DONE;
    }
    emit_result_event(l, t->text);
    if (!fits) {
        json_decref(v);
        char error[400];
        snprintf(error, sizeof error, "step.output-invalid: %s", why);
        return finish_200(l, json_pack("{s:b,s:s,s:s}", "success", 0, "summary",
                                       "the model's answer does not match the outputSchema "
                                       "(after one repair turn)", "error", error));
    }
    json_t *summary = json_object_get(v, "summary");
    if (!json_is_string(summary))
        json_object_set_new(v, "summary", json_string("structured output"));
    json_object_set_new(v, "success", json_true());
    return finish_200(l, v);
}

/* ---- the loop ---- */

static turn_end one_turn(loop *l, unsigned *turns)
{
    json_t *reply;
    if (call_model(l, &reply) == TURN_DONE)
        return TURN_DONE;
    step_turn t;
    memset(&t, 0, sizeof t);
    char why[200] = "";
    turn_end end = TURN_NEXT;
    if (!l->w->parse(reply, &t, why, sizeof why)) {
        if (!bad_reply(l, "provider.reply-malformed", why))
            end = TURN_DONE;
    } else {
        ++*turns;
        l->in_tokens += t.input_tokens;
        l->out_tokens += t.output_tokens;
        if (t.model[0])
            snprintf(l->model, sizeof l->model, "%s", t.model);
        if (!l->w->add_assistant(l->messages, reply))
            end = done(l, step_fail(STEP_EXIT_INTERNAL, "step.out-of-memory", "out of memory"));
        else if (t.ncalls) {
            if (t.text[0])
                step_emit_event(l->out, "thinking", json_pack("{s:o}", "text", cut_string(t.text)));
            end = run_calls(l, &t);
        } else {
            end = final_answer(l, &t);
        }
    }
    step_turn_free(&t);
    json_decref(reply);
    return end;
}

static char *system_text(const step_request *r)
{
    sp_buf b = SP_BUF_INIT;
    const char *given = json_string_value(r->system_prompt);
    sp_buf_append_str(&b, given && *given ? given
                                          : "You are one step of a workflow. Use the tools to do "
                                            "the task, then give your final answer.");
    if (step_schema_wanted(r->output_schema)) {
        char *schema = step_dump(r->output_schema);
        sp_buf_printf(&b, "\n\nWhen you have finished, answer with only one JSON object (no "
                          "prose, no code fence) matching this JSON Schema:\n%s",
                      schema ? schema : "{}");
        free(schema);
    }
    sp_buf_append(&b, "", 0);
    return sp_buf_ok(&b) ? sp_buf_take(&b, NULL) : (sp_buf_free(&b), NULL);
}

static json_t *first_message(const step_request *r)
{
    sp_buf b = SP_BUF_INIT;
    sp_buf_append_str(&b, json_string_value(r->query));
    if (r->context) {
        char *ctx = step_dump(r->context);
        sp_buf_printf(&b, "\n\nContext (JSON):\n%s", ctx ? ctx : "{}");
        free(ctx);
    }
    sp_buf_append(&b, "", 0);
    json_t *m = sp_buf_ok(&b) ? json_pack("[{s:s,s:s}]", "role", "user", "content", b.data) : NULL;
    sp_buf_free(&b);
    return m;
}

static int setup(loop *l)
{
    const step_config *c = l->c;
    if (!c->model[0])
        return step_fail(STEP_EXIT_PRECONDITION, "step.config-invalid",
                         "provider %s needs a model (the action's \"model\")", c->provider);
    if (!c->gateway[0] && !c->base_url[0])
        return step_fail(STEP_EXIT_PRECONDITION, "step.config-invalid",
                         "provider %s needs a baseUrl or the model gateway", c->provider);
    size_t n = 0;
    for (const char *const *h = l->w->headers; *h && n < 6; h++)
        l->headers[n++] = strdup(*h);
    if (c->api_key && asprintf(&l->headers[n++], "%s%s", l->w->credential_prefix, c->api_key) < 0)
        l->headers[--n] = NULL;
    long long reserve = (long long)l->r->timeout_ms / 10;
    reserve = reserve > RESERVE_MAX_MS ? RESERVE_MAX_MS : reserve;
    l->deadline = step_now_ms() + (long long)l->r->timeout_ms - reserve;
    l->system = system_text(l->r);
    l->messages = first_message(l->r);
    l->tools = step_tools_offered(c);
    if (!l->system || !l->messages || !l->tools)
        return step_fail(STEP_EXIT_INTERNAL, "step.out-of-memory", "out of memory");
    char why[300];
    if (step_schema_wanted(l->r->output_schema) &&
        !(l->schema = step_schema_compile(l->r->output_schema, why, sizeof why)))
        fprintf(stderr, "spore-step: the outputSchema is outside spore's schema subset (%s): the "
                        "answer is only checked to be a JSON object\n", why);
    int rc = step_mcp_start(c, l->deadline, &l->mcp);
    step_mcp_offer(l->mcp, l->tools);
    return rc;
}

static void teardown(loop *l)
{
    for (size_t i = 0; i < sizeof l->headers / sizeof l->headers[0]; i++) {
        if (l->headers[i])
            explicit_bzero(l->headers[i], strlen(l->headers[i]));
        free(l->headers[i]);
    }
    free(l->system);
    json_decref(l->messages);
    json_decref(l->tools);
    step_mcp_stop(l->mcp);
    sp_schema_free(l->schema);
}

int step_agent_run(const step_request *r, const step_config *c, const step_wire *w,
                   step_out *out)
{
    loop l;
    memset(&l, 0, sizeof l);
    l.r = r;
    l.c = c;
    l.w = w;
    l.out = out;
    int rc = setup(&l);
    if (!rc && !step_emit_start(out))
        rc = STEP_EXIT_INTERNAL;
    unsigned turns = 0;
    turn_end end = rc ? TURN_DONE : TURN_NEXT;
    while (end == TURN_NEXT && turns < c->max_turns)
        end = one_turn(&l, &turns);
    if (end == TURN_NEXT) {
        event_error(&l, "step.max-turns: no final answer after %u model turns", turns);
        char error[120];
        snprintf(error, sizeof error, "step.max-turns: no final answer after %u model turns",
                 turns);
        finish_200(&l, json_pack("{s:b,s:s,s:s}", "success", 0, "summary",
                                 "the model did not finish within maxTurns", "error", error));
    }
    teardown(&l);
    return rc ? rc : l.exit_code;
}
