/*
 * anthropic.c - the wire of Anthropic's Messages API (`POST {baseUrl}/v1/
 * messages`, `anthropic-version: 2023-06-01`): a top-level system prompt,
 * max_tokens (required: 4096 unless maxOutputTokens says otherwise), tools
 * with input_schema, content blocks `text` and `tool_use` in replies,
 * `tool_result` blocks in a user message for the results, usage as
 * input_tokens / output_tokens. Structured output is asked for in the
 * system prompt (the loop does that for every wire) and checked by spore.
 *
 * Must never trust a reply's shape: every block is checked before use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "step/step.h"

#define DEFAULT_MAX_TOKENS 4096

static const char *const HEADERS[] = {"Content-Type: application/json",
                                      "Accept: application/json",
                                      "anthropic-version: 2023-06-01", NULL};

static json_t *request(const step_config *c, const char *system, const json_t *messages,
                       const json_t *tools, const json_t *schema)
{
    (void)schema; /* asked for in the system prompt */
    json_t *body = json_pack("{s:s,s:i,s:s,s:O}", "model", c->model, "max_tokens",
                             c->max_output_tokens ? (int)c->max_output_tokens : DEFAULT_MAX_TOKENS,
                             "system", system, "messages", messages);
    if (json_array_size(tools))
        json_object_set(body, "tools", (json_t *)tools); /* already {name, description, input_schema} */
    if (c->temperature[0])
        json_object_set_new(body, "temperature", json_real(strtod(c->temperature, NULL)));
    return body;
}

static bool why(char *out, size_t len, const char *text)
{
    snprintf(out, len, "%s", text);
    return false;
}

static bool copy(char *dst, size_t cap, const json_t *v)
{
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= cap)
        return false;
    snprintf(dst, cap, "%s", json_string_value(v));
    return true;
}

static bool parse_block(const json_t *b, step_turn *t, sp_buf *text)
{
    const char *type = json_string_value(json_object_get(b, "type"));
    if (!type)
        return false;
    if (strcmp(type, "text") == 0) {
        const json_t *s = json_object_get(b, "text");
        if (!json_is_string(s))
            return false;
        if (text->len)
            sp_buf_append_char(text, '\n');
        sp_buf_append(text, json_string_value(s), json_string_length(s));
        return true;
    }
    if (strcmp(type, "tool_use") != 0)
        return true; /* thinking and other blocks: not ours to run */
    if (t->ncalls == STEP_CALLS_MAX)
        return false;
    step_call *call = &t->calls[t->ncalls++];
    if (!copy(call->id, sizeof call->id, json_object_get(b, "id")) ||
        !copy(call->name, sizeof call->name, json_object_get(b, "name")))
        return false;
    const json_t *input = json_object_get(b, "input");
    if (json_is_object(input))
        call->input = json_incref((json_t *)input);
    else
        snprintf(call->bad, sizeof call->bad, "the input is not a JSON object");
    return true;
}

static bool parse(const json_t *reply, step_turn *t, char *reason, size_t len)
{
    const json_t *content = json_object_get(reply, "content");
    if (!json_is_array(content))
        return why(reason, len, "no content array");
    sp_buf text = SP_BUF_INIT;
    for (size_t i = 0; i < json_array_size(content); i++)
        if (!parse_block(json_array_get(content, i), t, &text)) {
            sp_buf_free(&text);
            return why(reason, len, "a content block of the wrong shape (or more than 32 tool uses)");
        }
    sp_buf_append(&text, "", 0);
    t->text = sp_buf_ok(&text) ? sp_buf_take(&text, NULL) : NULL;
    sp_buf_free(&text);
    const json_t *usage = json_object_get(reply, "usage");
    t->input_tokens = json_integer_value(json_object_get(usage, "input_tokens"));
    t->output_tokens = json_integer_value(json_object_get(usage, "output_tokens"));
    copy(t->model, sizeof t->model, json_object_get(reply, "model"));
    return t->text != NULL || why(reason, len, "out of memory");
}

static bool add_assistant(json_t *messages, const json_t *reply)
{
    return json_array_append_new(messages, json_pack("{s:s,s:O}", "role", "assistant", "content",
                                                     json_object_get(reply, "content"))) == 0;
}

static bool add_results(json_t *messages, const step_tool_result *r, size_t n)
{
    json_t *blocks = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(blocks, json_pack("{s:s,s:s,s:s,s:b}", "type", "tool_result",
                                                "tool_use_id", r[i].call_id, "content", r[i].text,
                                                "is_error", r[i].is_error));
    return json_array_append_new(messages, json_pack("{s:s,s:o}", "role", "user", "content",
                                                     blocks)) == 0;
}

static bool add_user(json_t *messages, const char *text)
{
    return json_array_append_new(messages, json_pack("{s:s,s:s}", "role", "user", "content",
                                                     text)) == 0;
}

const step_wire step_wire_anthropic = {
    .path = "/v1/messages",
    .headers = HEADERS,
    .credential_prefix = "x-api-key: ",
    .request = request,
    .parse = parse,
    .add_assistant = add_assistant,
    .add_results = add_results,
    .add_user = add_user,
};
