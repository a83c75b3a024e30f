/*
 * openai.c - the wire of OpenAI's Chat Completions (`POST {baseUrl}/chat/
 * completions`), which Ollama, vLLM, llama.cpp's server, LM Studio, LiteLLM
 * and OpenRouter speak too: messages with a system message first, tools as
 * functions, tool_calls with JSON-text arguments, tool messages for the
 * results, response_format json_schema for structured output, usage as
 * prompt_tokens / completion_tokens.
 *
 * Must never trust a reply's shape: every member read is checked, tool
 * arguments are parsed with the strict parser and bounded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "step/step.h"

#define ARGS_MAX (256u * 1024)

static const char *const HEADERS[] = {"Content-Type: application/json",
                                      "Accept: application/json", NULL};

static json_t *tools_of(const json_t *tools)
{
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        json_array_append_new(
            out, json_pack("{s:s,s:{s:O,s:O,s:O}}", "type", "function", "function", "name",
                           json_object_get(t, "name"), "description",
                           json_object_get(t, "description"), "parameters",
                           json_object_get(t, "input_schema")));
    }
    return out;
}

static json_t *request(const step_config *c, const char *system, const json_t *messages,
                       const json_t *tools, const json_t *schema)
{
    json_t *all = json_array();
    json_array_append_new(all, json_pack("{s:s,s:s}", "role", "system", "content", system));
    json_array_extend(all, (json_t *)messages);
    json_t *body = json_pack("{s:s,s:o}", "model", c->model, "messages", all);
    if (json_array_size(tools))
        json_object_set_new(body, "tools", tools_of(tools));
    if (c->max_output_tokens)
        json_object_set_new(body, "max_tokens", json_integer(c->max_output_tokens));
    if (c->temperature[0])
        json_object_set_new(body, "temperature", json_real(strtod(c->temperature, NULL)));
    if (step_schema_wanted(schema))
        json_object_set_new(body, "response_format",
                            json_pack("{s:s,s:{s:s,s:O}}", "type", "json_schema", "json_schema",
                                      "name", "output", "schema", schema));
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

static bool parse_call(const json_t *tc, step_call *call)
{
    const json_t *fn = json_object_get(tc, "function");
    if (!copy(call->id, sizeof call->id, json_object_get(tc, "id")) ||
        !copy(call->name, sizeof call->name, json_object_get(fn, "name")))
        return false;
    const json_t *args = json_object_get(fn, "arguments");
    char rule[120];
    if (!json_is_string(args) || json_string_length(args) > ARGS_MAX)
        snprintf(call->bad, sizeof call->bad, "the arguments are not a JSON text of at most 256 KiB");
    else if (!(call->input = step_parse_json(json_string_value(args), json_string_length(args),
                                             rule, sizeof rule)))
        snprintf(call->bad, sizeof call->bad, "the arguments are not valid JSON (%s)", rule);
    else if (!json_is_object(call->input)) {
        json_decref(call->input);
        call->input = NULL;
        snprintf(call->bad, sizeof call->bad, "the arguments are not a JSON object");
    }
    return true;
}

static bool parse(const json_t *reply, step_turn *t, char *reason, size_t len)
{
    const json_t *choice = json_array_get(json_object_get(reply, "choices"), 0);
    const json_t *msg = json_object_get(choice, "message");
    if (!json_is_object(msg))
        return why(reason, len, "no choices[0].message");
    const json_t *content = json_object_get(msg, "content"), *calls = json_object_get(msg, "tool_calls");
    if (content && !json_is_string(content) && !json_is_null(content))
        return why(reason, len, "message.content is neither a string nor null");
    if (calls && !json_is_array(calls) && !json_is_null(calls))
        return why(reason, len, "message.tool_calls is not an array");
    if (json_array_size(calls) > STEP_CALLS_MAX)
        return why(reason, len, "more than 32 tool calls in one turn");
    t->text = strdup(json_is_string(content) ? json_string_value(content) : "");
    for (size_t i = 0; i < json_array_size(calls); i++)
        if (!parse_call(json_array_get(calls, i), &t->calls[t->ncalls++]))
            return why(reason, len, "a tool call without id or function.name");
    const json_t *usage = json_object_get(reply, "usage");
    t->input_tokens = json_integer_value(json_object_get(usage, "prompt_tokens"));
    t->output_tokens = json_integer_value(json_object_get(usage, "completion_tokens"));
    copy(t->model, sizeof t->model, json_object_get(reply, "model"));
    return t->text != NULL || why(reason, len, "out of memory");
}

static bool add_assistant(json_t *messages, const json_t *reply)
{
    const json_t *msg = json_object_get(json_array_get(json_object_get(reply, "choices"), 0),
                                        "message");
    json_t *m = json_pack("{s:s}", "role", "assistant");
    const json_t *content = json_object_get(msg, "content"), *calls = json_object_get(msg, "tool_calls");
    json_object_set(m, "content", content ? (json_t *)content : json_null());
    if (json_array_size(calls))
        json_object_set(m, "tool_calls", (json_t *)calls);
    return json_array_append_new(messages, m) == 0;
}

static bool add_results(json_t *messages, const step_tool_result *r, size_t n)
{
    bool ok = true;
    for (size_t i = 0; i < n; i++)
        ok = ok && json_array_append_new(messages, json_pack("{s:s,s:s,s:s}", "role", "tool",
                                                             "tool_call_id", r[i].call_id,
                                                             "content", r[i].text)) == 0;
    return ok;
}

static bool add_user(json_t *messages, const char *text)
{
    return json_array_append_new(messages, json_pack("{s:s,s:s}", "role", "user", "content",
                                                     text)) == 0;
}

const step_wire step_wire_openai = {
    .path = "/chat/completions",
    .headers = HEADERS,
    .credential_prefix = "Authorization: Bearer ",
    .request = request,
    .parse = parse,
    .add_assistant = add_assistant,
    .add_results = add_results,
    .add_user = add_user,
};
