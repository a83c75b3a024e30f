/*
 * step.h - spore-step, the reference step CLI (agent-step.md §9): what its
 * modules share.
 *
 * spore-step reads at most 983,040 bytes of stdin, validates the request
 * strictly (exit 2), creates runDir (0700, refusing symlinks; exit 3 when it
 * cannot), moves its real stdout to a private descriptor and points fd 1 at
 * stderr, writes `start`, runs the provider, writes result.json atomically
 * (temp file, fsync, rename, fsync of the directory) and then the result
 * line (exit 4 when that line cannot be written), and ends with 128+N on
 * SIGTERM, SIGINT or SIGHUP, without a result.
 *
 * What it must never do: write anything but protocol records to the
 * private stdout, print a secret on its own account, or exit 0 without a
 * result line.
 */
#ifndef SPORE_STEP_STEP_H
#define SPORE_STEP_STEP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/buf.h"
#include "schema/schema.h"

#define STEP_EXIT_OK 0
#define STEP_EXIT_INTERNAL 1
#define STEP_EXIT_REQUEST 2
#define STEP_EXIT_PRECONDITION 3
#define STEP_EXIT_UNVERIFIED 4

typedef struct step_request {
    json_t *query;   /* string */
    json_t *context; /* object or NULL */
    json_t *system_prompt;
    json_t *output_schema;
    unsigned long long timeout_ms;
    char step_id[41];
    char run_dir[4097];
    char traceparent[64]; /* "" when absent */
    json_t *doc;          /* owns the values above */
} step_request;

/* request.c: read stdin (bounded) and validate; 0, or an exit code after
 * printing the reason to stderr. */
int step_read_request(step_request *r);
void step_request_free(step_request *r);

/* emit.c: the protocol writer over the private stdout descriptor. */
typedef struct step_out {
    int fd;
    const char *step_id;
    unsigned long long seq;
} step_out;

bool step_emit_start(step_out *o);
bool step_emit_event(step_out *o, const char *kind, json_t *data); /* takes data */
bool step_emit_raw(step_out *o, const char *line);                 /* a line as is (+LF) */
bool step_emit_result(step_out *o, int status, json_t *body);      /* borrows body */
/* result.json in runDir: temp file, fsync, rename, fsync of the directory. */
bool step_write_result_file(const char *run_dir, const char *step_id, int status,
                            const json_t *body);
/* The ending with a result (takes body): result.json first, then the result
 * line; with close_first the stdout is closed in between (exit 4). */
int step_finish(const step_request *r, step_out *out, int status, json_t *body, bool close_first);

/* ---- util.c: what several modules share ---- */

/* A whole file of at most `max` bytes (NUL-terminated), or NULL. */
char *step_read_bounded(const char *path, size_t max, size_t *len);
/* The same from an open descriptor (not closed). */
char *step_read_fd_bounded(int fd, size_t max, size_t *len);
/* All of data, retrying short writes and EINTR. */
bool step_write_all(int fd, const char *data, size_t len);
/* Strict JSON (the protocol's parser, src/agent/jsontape.c; any RFC 8259
 * whitespace, depth at most 64): a new value, or NULL with the broken rule
 * in `why`. */
json_t *step_parse_json(const char *text, size_t len, char *why, size_t why_len);
/* Compact JSON text (caller frees), NULL when out of memory. */
char *step_dump(const json_t *v);
long long step_now_ms(void);
void step_sleep_ms(long long ms);
/* A coded error on stderr: "spore-step: <code>: <message>"; returns `exit_code`. */
int step_fail(int exit_code, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- config.c: the agent configuration ----
 *
 * The step request is closed (agent-step.md §2), so what the action adds
 * for real providers reaches spore-step as $SPORE_AGENT_CONFIG, one JSON
 * object the runner writes (at most 64 KiB): provider, model, baseUrl or
 * gateway (the model gateway's Unix socket inside the sandbox), maxTurns,
 * maxOutputTokens, temperature (a decimal string), tools, programs (what
 * `run` may start), readable and writable (absolute paths inside). */
typedef enum step_tool_id {
    STEP_TOOL_READ_FILE,
    STEP_TOOL_LIST_FILES,
    STEP_TOOL_SEARCH_FILES,
    STEP_TOOL_WRITE_FILE,
    STEP_TOOL_EDIT_FILE,
    STEP_TOOL_RUN,
    STEP_TOOL_COUNT
} step_tool_id;

#define STEP_MAX_TURNS_DEFAULT 20
#define STEP_MAX_TURNS_MAX 200
#define STEP_PATHS_MAX 64

typedef struct step_config {
    char provider[16];
    char model[256];
    char base_url[2049];  /* "" when the gateway is used */
    char gateway[256];    /* the gateway's socket inside, "" when not used */
    unsigned max_turns;
    unsigned max_output_tokens; /* 0: the provider's default (anthropic: 4096) */
    char temperature[32];       /* "" when not set */
    bool tools[STEP_TOOL_COUNT];
    char **programs; /* NULL-terminated */
    char **readable, **writable;
    char cwd[4097];
    char *api_key; /* direct access only (no gateway): $PROVIDER_API_KEY_FILE */
    json_t *doc;
} step_config;

/* Read $SPORE_AGENT_CONFIG (defaults when unset) with `provider` from the
 * command line overriding its provider; 0, or an exit code (3) after the
 * reason on stderr. */
int step_config_load(step_config *c, const char *provider);
void step_config_free(step_config *c);

/* ---- util.c: JSON against a schema, through src/schema (the project's
 * subset: docs/output-schemas.md) ---- */

/* Compiled, or NULL when `doc` is outside the subset ("<path>: <rule>"
 * in `why`). */
sp_schema *step_schema_compile(const json_t *doc, char *why, size_t why_len);
/* true when `v` matches; otherwise false and "<path>: <rule> (<sentence>)"
 * in `why`, never a part of the value. */
bool step_schema_check(const sp_schema *s, const json_t *v, char *why, size_t why_len);
/* true when the schema asks for something (not {}): structured output. */
bool step_schema_wanted(const json_t *doc);

/* ---- tools (tools.c, tool_path.c, tool_files.c, tool_edit.c, tool_run.c) ---- */

#define STEP_TOOL_OUTPUT_MAX (64u * 1024)

typedef struct step_tool_out {
    sp_buf text;        /* at most STEP_TOOL_OUTPUT_MAX (step_tool_append), then a note */
    size_t dropped;     /* bytes the bound dropped */
    bool is_error;      /* refused or failed: told to the model as an error */
    bool bad_arguments; /* ... because the arguments did not fit the tool's schema */
} step_tool_out;

typedef struct step_tool_ctx {
    const step_config *config;
    const char *run_dir;
    long long deadline_ms; /* the step's own deadline (monotonic) */
} step_tool_ctx;

/* The enabled tools in the wire-neutral shape [{name, description,
 * input_schema}] (a new array). */
json_t *step_tools_offered(const step_config *c);
/* Run one tool call; `args` is checked against the tool's schema first. */
void step_tool_call(const step_tool_ctx *ctx, const char *name, const json_t *args,
                    step_tool_out *out);
bool step_tool_name(const char *name, step_tool_id *id);
const char *step_tool_name_of(step_tool_id id);
void step_tool_out_free(step_tool_out *o);
/* The output made valid UTF-8, with the note saying how much was cut. */
void step_tool_seal(step_tool_out *o);
/* tool_path.c: a path of a tool call, opened inside the roots it may use
 * (reads: the working directory, runDir, readable, writable; writes: runDir
 * and writable), no "..", no symlink anywhere below the root. A descriptor,
 * or -1 with the reason in `o` (is_error). */
int step_path_open(const step_tool_ctx *ctx, const char *path, int flags, mode_t mode, bool write,
                   step_tool_out *o);
/* The same for a directory to create a file in: the parent's descriptor and
 * the last component. */
int step_path_parent(const step_tool_ctx *ctx, const char *path, char *leaf, size_t leaf_len,
                     step_tool_out *o);
void step_tool_error(step_tool_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Output within the bound: what does not fit is counted in `dropped`. */
void step_tool_append(step_tool_out *o, const char *data, size_t len);
void step_tool_printf(step_tool_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A string member of the arguments without NUL bytes, or NULL. */
const char *step_tool_arg(const json_t *args, const char *name);
void step_tool_read_file(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o);
void step_tool_list_files(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o);
void step_tool_search_files(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o);
void step_tool_write_file(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o);
void step_tool_edit_file(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o);
void step_tool_run(const step_tool_ctx *ctx, const json_t *args, step_tool_out *o);
/* A program name (looked up in /usr/local/bin, /usr/bin, /bin) or an
 * absolute path, to an executable regular file (tool_run.c). */
bool step_program_resolve(const char *name, char *out, size_t len);

/* ---- mcp.c: MCP servers over stdio ---- */

typedef struct step_mcp step_mcp;

/* Start the stdio servers of $SPORE_MCP_SERVERS (initialize, tools/list);
 * *out NULL-safe to use when there are none. 0, or an exit code (3). */
int step_mcp_start(const step_config *c, long long deadline_ms, step_mcp **out);
/* Their tools appended in the neutral shape, named <server>__<tool>. */
void step_mcp_offer(const step_mcp *m, json_t *tools);
/* When `wire` names one of their tools: run the call and true. */
bool step_mcp_call(step_mcp *m, const char *wire, const json_t *args, long long deadline_ms,
                   step_tool_out *out);
/* "<server>.<tool>" for a wire name of theirs, else the name itself. */
const char *step_mcp_display(step_mcp *m, const char *wire);
void step_mcp_stop(step_mcp *m);

/* ---- http.c: one POST through libcurl, bounded ---- */

typedef enum step_http_end {
    STEP_HTTP_DONE,      /* an HTTP status and a complete body */
    STEP_HTTP_TRANSPORT, /* no answer: connection refused, reset, ... */
    STEP_HTTP_TIMEOUT,   /* the time given ran out */
    STEP_HTTP_TOO_LARGE, /* the body passed max_bytes */
} step_http_end;

typedef struct step_http_reply {
    step_http_end end;
    long status;
    sp_buf body;
    char error[256];
} step_http_reply;

/* POST `body` to the config's gateway socket or baseUrl + `path`, with the
 * given header lines, at most `timeout_ms`, at most `max_bytes` of reply. */
void step_http_post(const step_config *c, const char *path, const char *const *headers,
                    const char *body, size_t len, long long timeout_ms, size_t max_bytes,
                    step_http_reply *out);
void step_http_reply_free(step_http_reply *r);

/* ---- providers ---- */

#define STEP_CALLS_MAX 32

typedef struct step_call {
    char id[128];
    char name[128];
    json_t *input;   /* an object, or NULL when the arguments were bad */
    char bad[160];   /* why the arguments were refused ("" when fine) */
} step_call;

/* One model turn, parsed from a reply. */
typedef struct step_turn {
    char *text; /* the assistant's text ("" when none) */
    step_call calls[STEP_CALLS_MAX];
    size_t ncalls;
    long long input_tokens, output_tokens;
    char model[128];
} step_turn;

void step_turn_free(step_turn *t);

typedef struct step_tool_result {
    const char *call_id;
    const char *text;
    bool is_error;
} step_tool_result;

/* The wire of one HTTP API (openai.c, anthropic.c): how a conversation,
 * a request and a reply look. The tool loop (loop.c) is the same for all. */
typedef struct step_wire {
    const char *path;              /* below baseUrl */
    const char *const *headers;    /* fixed header lines */
    const char *credential_prefix; /* the header line the key follows */
    /* the request body for this turn (a new object) */
    json_t *(*request)(const step_config *c, const char *system, const json_t *messages,
                       const json_t *tools, const json_t *schema);
    /* a reply into a turn; false with the reason when its shape is wrong */
    bool (*parse)(const json_t *reply, step_turn *t, char *why, size_t why_len);
    /* the conversation grows: the assistant's reply, the tool results, a user text */
    bool (*add_assistant)(json_t *messages, const json_t *reply);
    bool (*add_results)(json_t *messages, const step_tool_result *r, size_t n);
    bool (*add_user)(json_t *messages, const char *text);
} step_wire;

extern const step_wire step_wire_openai;
extern const step_wire step_wire_anthropic;

/* The provider's error code in an error reply ("" when none): error.code,
 * else error.type; never the message, which may quote the prompt. */
void step_provider_error_code(const json_t *reply, char *out, size_t len);

/* loop.c: the tool loop over one wire. Returns the exit code. */
int step_agent_run(const step_request *r, const step_config *c, const step_wire *w,
                   step_out *out);

/* One provider of spore-step (provider.c): fake (fake.c), or an HTTP API's
 * wire through the tool loop. `run` returns the exit code. */
typedef struct step_provider {
    const char *name;
    const step_wire *wire; /* NULL for fake */
    int (*run)(const struct step_provider *self, const step_request *r, const step_config *c,
               const char *scenario, step_out *out);
} step_provider;

const step_provider *step_provider_find(const char *name);

/* fake.c: the scripted provider. Returns the exit code. */
int step_fake_run(const step_request *r, const char *scenario_path, step_out *out);

#endif
