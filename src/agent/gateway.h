/*
 * gateway.h - the model gateway of local agent steps (agent-providers.md
 * §3): the provider key never enters the sandbox. Per attempt the runner
 * starts a gateway on the host side, listening on a Unix socket that is
 * bound into the sandbox (which keeps network "none"); spore-step sends its
 * model requests there without any credential, and the gateway forwards
 * them to baseUrl with the credential header added.
 *
 * What it accepts: POST of exactly the provider's API path (openai:
 * /chat/completions, anthropic: /v1/messages), a JSON body with a
 * Content-Length of at most 8 MiB, headers of at most 16 KiB, at most
 * max_requests requests. It refuses every other method, path or target
 * (404/405), any request carrying a credential of its own (Authorization,
 * x-api-key, api-key, proxy-authorization, cookie: 403), chunked bodies
 * (411), and requests past the count (400 gateway.request-limit). It
 * forwards Content-Type, Accept and (anthropic) anthropic-version /
 * anthropic-beta only, answers with the upstream status, Content-Type and
 * body (at most 8 MiB, else 502 gateway.reply-too-large), and 502 / 504
 * when the upstream cannot be reached in time. Each request is logged as
 * one metadata line (method, path, status, bytes each way, milliseconds).
 *
 * What it must never do: forward to anything but baseUrl, log a body, a
 * header or the key, pass a client's credential on, or outlive
 * sp_gateway_stop.
 */
#ifndef SPORE_AGENT_GATEWAY_H
#define SPORE_AGENT_GATEWAY_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef enum sp_gateway_api { SP_GATEWAY_OPENAI, SP_GATEWAY_ANTHROPIC } sp_gateway_api;

#define SP_GATEWAY_BODY_MAX (8u * 1024 * 1024)
#define SP_GATEWAY_HEAD_MAX (16u * 1024)

typedef void (*sp_gateway_log_fn)(void *ctx, const char *line);

typedef struct sp_gateway_cfg {
    const char *socket_path; /* on the host; created here, removed at stop */
    const char *base_url;
    sp_gateway_api api;
    const char *key; /* NULL or "": no credential (a local server) */
    unsigned max_requests;
    uint64_t timeout_ms; /* the attempt's: no request is forwarded past it */
    sp_gateway_log_fn log;
    void *log_ctx;
} sp_gateway_cfg;

typedef struct sp_gateway sp_gateway;

/* Listen and serve in a thread of its own. NULL + agent.gateway-unavailable
 * when the socket cannot be made. The key is copied. */
sp_gateway *sp_gateway_start(const sp_gateway_cfg *cfg, sp_error *err);
/* Stop serving, remove the socket, wipe the key; returns the number of
 * requests forwarded. */
unsigned sp_gateway_stop(sp_gateway *g);

/* The API path a provider's requests must use. */
const char *sp_gateway_path(sp_gateway_api api);

#endif
