/*
 * tools.c - spore-step's built-in tools (agent-providers.md §2): their
 * names, descriptions and input schemas as offered to the model, the
 * dispatch of a call (the tool enabled by the action's `tools`, the
 * arguments checked against its schema first, with src/schema: the schemas
 * here stay inside the project's subset), and the bounded output every
 * tool writes through (64 KiB, then a note saying how much was cut; made
 * valid UTF-8 before it goes back to the model).
 *
 * Default tools (no `tools` in the action): read_file, list_files,
 * search_files. write_file, edit_file and run must be asked for.
 *
 * Must never run a tool that is not enabled, or hand a tool arguments that
 * do not fit its schema.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "step/step.h"

typedef void (*tool_fn)(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o);

typedef struct tool {
    step_tool_id id;
    const char *name;
    const char *description;
    const char *schema;
    tool_fn run;
} tool;

#define PATH_PROP "\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096}"

static const tool TOOLS[STEP_TOOL_COUNT] = {
    {STEP_TOOL_READ_FILE, "read_file",
     "Read a text file (at most 64 KiB per call; offset and limit in bytes page through larger "
     "files). Paths are relative to the working directory or absolute inside the granted folders.",
     "{\"type\":\"object\",\"properties\":{" PATH_PROP ",\"offset\":{\"type\":\"integer\","
     "\"minimum\":0},\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65536}},"
     "\"required\":[\"path\"],\"additionalProperties\":false}",
     step_tool_read_file},
    {STEP_TOOL_LIST_FILES, "list_files",
     "List a directory (default: the working directory); recursive lists up to 8 levels. "
     "Directories end with '/', symlinks with '@' (never followed).",
     "{\"type\":\"object\",\"properties\":{" PATH_PROP ",\"recursive\":{\"type\":\"boolean\"}},"
     "\"additionalProperties\":false}",
     step_tool_list_files},
    {STEP_TOOL_SEARCH_FILES, "search_files",
     "Search the text files below a directory for a literal string, or a POSIX extended regular "
     "expression with regex: true. Answers path:line: text, bounded.",
     "{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\",\"minLength\":1,"
     "\"maxLength\":1000}," PATH_PROP ",\"regex\":{\"type\":\"boolean\"},\"ignoreCase\":"
     "{\"type\":\"boolean\"}},\"required\":[\"pattern\"],\"additionalProperties\":false}",
     step_tool_search_files},
    {STEP_TOOL_WRITE_FILE, "write_file",
     "Create or replace a file with the given content (at most 1 MiB), in the run directory or "
     "a writable folder.",
     "{\"type\":\"object\",\"properties\":{" PATH_PROP ",\"content\":{\"type\":\"string\","
     "\"maxLength\":1048576}},\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
     step_tool_write_file},
    {STEP_TOOL_EDIT_FILE, "edit_file",
     "Replace the one occurrence of old_string in a file with new_string (exact text; refused "
     "when old_string occurs zero or several times).",
     "{\"type\":\"object\",\"properties\":{" PATH_PROP ",\"old_string\":{\"type\":\"string\","
     "\"minLength\":1,\"maxLength\":1048576},\"new_string\":{\"type\":\"string\","
     "\"maxLength\":1048576}},\"required\":[\"path\",\"old_string\",\"new_string\"],"
     "\"additionalProperties\":false}",
     step_tool_edit_file},
    {STEP_TOOL_RUN, "run",
     "Run a program (argv, no shell) in the working directory, with stdin empty; answers the exit "
     "status and the output (stdout and stderr, at most 64 KiB). Only the programs the workflow "
     "grants can be run.",
     "{\"type\":\"object\",\"properties\":{\"argv\":{\"type\":\"array\",\"minItems\":1,"
     "\"maxItems\":256,\"items\":{\"type\":\"string\",\"maxLength\":65536}},\"timeoutMs\":"
     "{\"type\":\"integer\",\"minimum\":1,\"maximum\":600000}},\"required\":[\"argv\"],"
     "\"additionalProperties\":false}",
     step_tool_run},
};

bool step_tool_name(const char *name, step_tool_id *id)
{
    for (size_t i = 0; i < STEP_TOOL_COUNT; i++)
        if (strcmp(TOOLS[i].name, name) == 0) {
            *id = TOOLS[i].id;
            return true;
        }
    return false;
}

const char *step_tool_name_of(step_tool_id id) { return TOOLS[id].name; }

json_t *step_tools_offered(const step_config *c)
{
    json_t *out = json_array();
    for (size_t i = 0; out && i < STEP_TOOL_COUNT; i++) {
        if (!c->tools[TOOLS[i].id])
            continue;
        json_error_t e;
        json_t *schema = json_loads(TOOLS[i].schema, 0, &e);
        if (!schema || json_array_append_new(out, json_pack("{s:s,s:s,s:o}", "name", TOOLS[i].name,
                                                            "description", TOOLS[i].description,
                                                            "input_schema", schema))) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

void step_tool_append(step_tool_out *o, const char *data, size_t len)
{
    size_t room = o->text.len < STEP_TOOL_OUTPUT_MAX ? STEP_TOOL_OUTPUT_MAX - o->text.len : 0;
    size_t keep = len < room ? len : room;
    sp_buf_append(&o->text, data, keep);
    o->dropped += len - keep;
}

void step_tool_printf(step_tool_out *o, const char *fmt, ...)
{
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n >= 0)
        step_tool_append(o, text, (size_t)n);
    free(text);
}

void step_tool_error(step_tool_out *o, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    sp_buf_reset(&o->text);
    o->dropped = 0;
    step_tool_printf(o, "error: %s", text);
    o->is_error = true;
}

const char *step_tool_arg(const json_t *args, const char *name)
{
    const json_t *v = json_object_get(args, name);
    return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v)
               ? json_string_value(v)
               : NULL;
}

/* Valid UTF-8, and the note when something was cut. */
void step_tool_seal(step_tool_out *o)
{
    size_t n;
    char *clean = sp_utf8_lossy(o->text.data ? o->text.data : "", o->text.len, &n);
    sp_buf_reset(&o->text);
    if (clean)
        sp_buf_append(&o->text, clean, n);
    free(clean);
    if (o->dropped)
        sp_buf_printf(&o->text, "\n[output cut: %zu more bytes were not shown]", o->dropped);
    sp_buf_append(&o->text, "", 0);
}

void step_tool_call(const step_tool_ctx *ctx, const char *name, const json_t *args,
                    step_tool_out *out)
{
    step_tool_id id;
    char why[300];
    bool known = step_tool_name(name, &id) && ctx->config->tools[id];
    json_t *doc = known ? json_loads(TOOLS[id].schema, 0, NULL) : NULL;
    sp_schema *schema = doc ? step_schema_compile(doc, why, sizeof why) : NULL;
    json_decref(doc);
    if (!known) {
        step_tool_error(out, "there is no tool \"%.100s\" in this step", name);
        out->bad_arguments = true;
    } else if (!schema) {
        step_tool_error(out, "%s cannot check its arguments (%s)", name, why);
    } else if (!step_schema_check(schema, args, why, sizeof why)) {
        step_tool_error(out, "bad arguments for %s: %s", name, why);
        out->bad_arguments = true;
    } else {
        TOOLS[id].run(ctx, args, out);
    }
    sp_schema_free(schema);
    step_tool_seal(out);
}

void step_tool_out_free(step_tool_out *o)
{
    sp_buf_free(&o->text);
}
