/*
 * action.h - the `agent` action (agent-step.md §1): its closed member set,
 * parsed into a plain struct shared by validation and the runner.
 *
 * Members: kind, stepCli (required: argv of the step CLI, no shell),
 * systemPrompt (string, default ""), outputSchema (object, default {}),
 * timeoutMs (decimal string, default "300000"), provider (breaker key,
 * default stepCli[0]), sandbox (below), mcpServers, secrets, allowedTools,
 * deniedTools (accepted, never sent: dropped with a warning naming the keys),
 * env (extra environment, names only letters, digits and '_', not SPORE_*),
 * description, and the kernel's effect, outcomes (must include "ok" when
 * given), retry.
 *
 * Real providers (agent-providers.md §1): model (string), baseUrl (http(s)
 * URL without credentials, query or fragment; default
 * https://api.openai.com/v1 for provider "openai", https://api.anthropic.com
 * for "anthropic"), maxTurns (integer 1..200), maxOutputTokens (integer
 * 1..1000000), temperature (a decimal string 0..2), tools (names of
 * spore-step's built-in tools), runPrograms (what the `run` tool may start:
 * names or absolute paths). model and baseUrl need provider "openai" or
 * "anthropic"; with either of them given the step uses a real provider
 * (`api`), and a local step reaches it through the model gateway (the key,
 * the secret PROVIDER_API_KEY, stays outside the sandbox).
 *
 * sandbox: transport ("local" default | "exec"), network ("none" default |
 * "host"), reuse ("none" default | "run"), readable and writable (paths,
 * relative to the engine's base directory or absolute, no "..", not a path
 * the sandbox provides itself (sp_sandbox_path_reserved), mounted at the
 * same absolute path, read-only / read-write; their symlinks are resolved
 * and checked when the sandbox is built, see sandbox.h), maxMessageBytes (decimal
 * string, default 1 MiB). exec only: command (the prefix argv, required),
 * lostStreamExit (integer 1..255, default 255), workRoot (absolute, default
 * /tmp), hostWorkRoot (absolute: where workRoot is visible on this machine,
 * for result.json; optional).
 *
 * An MCP server is either HTTP, {name, url, headers} as below, or stdio,
 * {name, command}: argv of a server spore-step starts inside the sandbox
 * (command[0] a program name or an absolute path; the name [A-Za-z0-9_-],
 * at most 32, since its tools are offered as <server>.<tool>).
 *
 * secrets: {"NAME": {"file": "<path>"}}; NAME is [A-Za-z0-9][A-Za-z0-9_.-]*
 * (at most 64 bytes, "mcp" reserved). mcpServers: [{name, url, headers:
 * [{name, source: "Secret", secretName}]}]; a header with a plain `value` is
 * recorded (plain_headers) so the runner refuses the step with
 * agent.mcp-plain-headers, naming the server only; a secretName must be a
 * key of `secrets`.
 *
 * What it must never do: accept a member it does not know, keep a header's
 * plain value, or accept a path that exec or bwrap would read differently
 * than written (NUL bytes, "..").
 */
#ifndef SPORE_AGENT_ACTION_H
#define SPORE_AGENT_ACTION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define SP_AGENT_TIMEOUT_DEFAULT_MS 300000u
#define SP_AGENT_MESSAGE_DEFAULT (1024u * 1024)
#define SP_AGENT_ARGV_MAX 256
#define SP_AGENT_PATHS_MAX 64
#define SP_AGENT_SERVERS_MAX 32
#define SP_AGENT_HEADERS_MAX 32
#define SP_AGENT_ENV_MAX 64

typedef enum sp_agent_transport { SP_AGENT_LOCAL, SP_AGENT_EXEC } sp_agent_transport;

/* The HTTP API of a real provider; NONE when the step brings its own. */
typedef enum sp_agent_api { SP_AGENT_API_NONE, SP_AGENT_API_OPENAI, SP_AGENT_API_ANTHROPIC } sp_agent_api;

#define SP_AGENT_KEY_SECRET "PROVIDER_API_KEY" /* the secret the gateway adds as the credential */
#define SP_AGENT_TURNS_MAX 200

typedef struct sp_agent_secret {
    char *name;
    char *file;
    bool mcp; /* referenced by an MCP header */
} sp_agent_secret;

typedef struct sp_agent_sandbox {
    sp_agent_transport transport;
    bool network_host;
    bool reuse_run;
    char **readable, **writable; /* NULL-terminated */
    uint64_t max_message_bytes;
    char **exec_command; /* NULL-terminated; exec only */
    int lost_stream_exit;
    char *work_root;      /* exec only */
    char *host_work_root; /* exec only; may be NULL */
} sp_agent_sandbox;

typedef struct sp_agent_action {
    char **step_cli; /* NULL-terminated */
    size_t nstep_cli;
    char *system_prompt;
    json_t *output_schema;
    uint64_t timeout_ms;
    char *provider;
    sp_agent_sandbox sandbox;
    sp_agent_secret *secrets;
    size_t nsecrets;
    json_t *mcp_servers;        /* the servers without plain values (for the step), or NULL */
    char plain_header_server[129]; /* the first server with a plain header value, "" if none */
    bool has_allowed_tools, has_denied_tools;
    char **env; /* NAME, value, NAME, value, ..., NULL */
    /* real providers */
    sp_agent_api api;          /* NONE unless provider is openai/anthropic and model or baseUrl is given */
    char *model;               /* NULL when not given */
    char *base_url;            /* without a trailing '/'; NULL when api is NONE */
    unsigned max_turns;        /* 0: not given (spore-step's default, 20) */
    unsigned max_output_tokens; /* 0: not given */
    char temperature[32];      /* "" when not given */
    char **tools;              /* NULL when not given (the read-only tools) */
    char **run_programs;       /* NULL-terminated, possibly empty */
} sp_agent_action;

/* Parse `action` (action.invalid naming the action and the member). */
int sp_agent_action_parse(const char *action_id, const json_t *action, sp_agent_action *out,
                          sp_error *err);
void sp_agent_action_free(sp_agent_action *a);

/* The validation the registry runs at validate/start: parse, and refuse
 * plain MCP header values there already. */
int sp_agent_action_validate(const char *action_id, const json_t *action, sp_error *err);

/* ---- a `secrets` member, shared with command actions ---- */

#define SP_SECRETS_MAX 64

/* One entry, borrowed from the action. */
typedef struct sp_secret_ref {
    const char *name;
    const char *file;
} sp_secret_ref;

/* `secrets` ({"NAME": {"file": "<path>"}}, at most SP_SECRETS_MAX; NULL:
 * none) into a new array (*out, free() it; NULL when there is none) of *n
 * entries. `name_ok` is the kind's rule for names, `name_rule` says it in
 * the error. action.invalid naming the action. */
int sp_secrets_parse(const char *action_id, const json_t *secrets, bool (*name_ok)(const char *),
                     const char *name_rule, sp_secret_ref **out, size_t *n, sp_error *err);

#endif
