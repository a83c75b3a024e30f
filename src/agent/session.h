/*
 * session.h - one step-CLI exchange as the runner sees it: the protocol
 * reader, the stderr log and the kept events, fed incrementally, then
 * classified. The one code path shared by the agent runner (bytes as they
 * arrive from the sandbox) and `spore agent classify` (bytes from captured
 * files), so both give the same outcome for the same exchange.
 *
 * What it must never do: classify differently depending on where the bytes
 * came from or how they were chunked, or read result.json unless the ending
 * calls for it.
 */
#ifndef SPORE_AGENT_SESSION_H
#define SPORE_AGENT_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/events.h"
#include "agent/outcome.h"
#include "agent/reader.h"
#include "agent/redact.h"
#include "agent/stderr_log.h"

typedef struct sp_agent_session {
    char step_id[41];
    const sp_redactor *redactor;
    sp_agent_reader reader;
    sp_agent_stderr err;
    sp_agent_events events;
} sp_agent_session;

typedef struct sp_agent_session_cfg {
    const char *step_id;
    const sp_redactor *redactor; /* may be NULL */
    const char *node_id;         /* for kept events */
    uint32_t attempt;
    sp_agent_event_sink sink; /* may be NULL */
    void *sink_ctx;
} sp_agent_session_cfg;

/* 0, or -1 (invalid step ID, out of memory). */
int sp_agent_session_init(sp_agent_session *s, const sp_agent_session_cfg *cfg);
void sp_agent_session_free(sp_agent_session *s);

/* stdout bytes; false at the first violation (stop reading, kill the step). */
bool sp_agent_session_stdout(sp_agent_session *s, const char *data, size_t len);
void sp_agent_session_stderr(sp_agent_session *s, const char *data, size_t len);

/* The exchange ended: flush the kept events and classify. `result_path`
 * is read only when the ending calls for it (NULL = absent); when the
 * runner cannot reach the step's run directory at all (a remote transport
 * without hostWorkRoot), `reachable` is false and the file is
 * "unreadable". */
void sp_agent_session_finish(sp_agent_session *s, const sp_agent_end *end,
                             const char *result_path, bool reachable, sp_agent_outcome *o);

#endif
