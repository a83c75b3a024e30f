/*
 * component_host.h - the runner host (runners.md §3): the worker side of
 * every host import of one runner call, each with its grant check.
 *
 * Reply rules: an import answers the reply length, -1 when the reply does
 * not fit the runner's buffer, -2 for a malformed request, -3 when the
 * operation failed (the reply, {"error": {"code", "message"}}, explains
 * when it fits). An ungranted request never answers: the call ends and the
 * step fails with component.not-granted, details {grant, value}.
 *
 * Decision the spec leaves open: -1 promises that "the host performed
 * nothing", yet a started process or a socket exchange cannot be undone.
 * So a reply that does not fit is kept for the rest of the call, and the
 * identical request repeated (same import, same bytes) gets the kept reply
 * without the operation being performed again.
 *
 * What it must never do: perform anything before the grant check, let a
 * runner name a process it did not get from process_start of this very
 * step (handles are sealed, component_handle.h), or keep more than the
 * bounds of a log.
 */
#ifndef SPORE_RUNNERS_COMPONENT_HOST_H
#define SPORE_RUNNERS_COMPONENT_HOST_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "runners/component_spec.h"
#include "runners/runner.h"
#include "wasm/jail.h"

#define SP_LOG_LINE_MAX 4096
#define SP_LOG_CALL_MAX (64u * 1024)

typedef struct sp_host {
    const sp_runner_ctx *ctx;
    const sp_component_spec *spec;
    /* how the call ended early */
    bool not_granted;
    sp_grant_kind grant;
    char *value; /* as requested */
    bool artifact_failed;
    char artifact_message[SP_MESSAGE_MAX];
    /* a reply that did not fit */
    int kept_import;
    char *kept_request, *kept_reply;
    size_t kept_request_len, kept_reply_len;
    /* the attempt's log */
    int log_fd;
    char log_path[PATH_MAX];
    size_t log_bytes;
    /* the store's secret, once asked for */
    unsigned char key[32];
    bool have_key;
} sp_host;

void sp_host_init(sp_host *h, const sp_runner_ctx *ctx, const sp_component_spec *spec);
void sp_host_free(sp_host *h);

/* The callbacks the jail calls (host->ctx = h). */
sp_jail_host sp_host_jail(sp_host *h);

/* The attempt's log file (component_cache.h: logs/<runId>/<invocationId>-
 * <attempt>.log, its folder created): the runner's `log` lines and the
 * output of the processes it started. False when it has no place. */
bool sp_host_log_path(const sp_runner_ctx *ctx, char *out, size_t n);

/* Serve one import (also what the jail calls). */
int sp_host_import(void *h, int import, const char *request, size_t len, uint32_t cap,
                   uint64_t deadline_ms, int32_t *status, char **reply, size_t *reply_len);

#endif
