/*
 * mcp_server.c - a stdio MCP server for the provider tests: JSON-RPC 2.0
 * over newline-delimited stdin/stdout. It answers initialize, ignores
 * notifications, lists two tools (lookup {key} and broken {}), answers
 * tools/call of lookup with "value of <key> is 42", of broken with
 * isError, and anything else with a JSON-RPC error; before each response
 * it sends a log notification, which a client must skip.
 *
 * Must never write anything but JSON-RPC lines on stdout.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void send_line(json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    printf("%s\n", text ? text : "{}");
    fflush(stdout);
    free(text);
    json_decref(msg);
}

static json_t *tools(void)
{
    return json_pack("{s:[{s:s,s:s,s:{s:s,s:{s:{s:s}},s:[s]}},{s:s,s:s,s:{s:s}}]}", "tools",
                     "name", "lookup", "description", "Look a key up in the knowledge base.",
                     "inputSchema", "type", "object", "properties", "key", "type", "string",
                     "required", "key", "name", "broken", "description", "Always fails.",
                     "inputSchema", "type", "object");
}

static json_t *call(const json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    const json_t *args = json_object_get(params, "arguments");
    if (name && strcmp(name, "lookup") == 0) {
        char text[300];
        snprintf(text, sizeof text, "value of %s is 42",
                 json_string_value(json_object_get(args, "key")) ?: "?");
        return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text, "isError", 0);
    }
    if (name && strcmp(name, "broken") == 0)
        return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text",
                         "the broken tool failed", "isError", 1);
    return NULL;
}

int main(void)
{
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        json_error_t e;
        json_t *m = json_loads(line, 0, &e);
        const char *method = json_string_value(json_object_get(m, "method"));
        json_t *id = json_object_get(m, "id");
        if (!method || !id) {
            json_decref(m);
            continue; /* a notification */
        }
        send_line(json_pack("{s:s,s:s,s:{s:s,s:s}}", "jsonrpc", "2.0", "method",
                            "notifications/message", "params", "level", "info", "data", method));
        json_t *result = NULL;
        if (strcmp(method, "initialize") == 0)
            result = json_pack("{s:s,s:{s:{}},s:{s:s,s:s}}", "protocolVersion", "2024-11-05",
                               "capabilities", "tools", "serverInfo", "name", "test-kb", "version",
                               "1.0");
        else if (strcmp(method, "tools/list") == 0)
            result = tools();
        else if (strcmp(method, "tools/call") == 0)
            result = call(json_object_get(m, "params"));
        if (result)
            send_line(json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result));
        else
            send_line(json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                                -32601, "message", "unknown method or tool"));
        json_decref(m);
    }
    free(line);
    return 0;
}
