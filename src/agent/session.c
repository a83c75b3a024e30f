/*
 * session.c - the shared exchange pipeline (see session.h).
 */
#include "agent/session.h"

#include <stdio.h>
#include <string.h>

static void on_event(void *ctx, const sp_jt *tape, size_t record, size_t data, uint64_t seq,
                     const char *line, size_t len)
{
    (void)data;
    (void)seq;
    sp_agent_session *s = ctx;
    sp_agent_events_add(&s->events, tape, record, line, len);
}

int sp_agent_session_init(sp_agent_session *s, const sp_agent_session_cfg *cfg)
{
    memset(s, 0, sizeof *s);
    if (!cfg->step_id || !sp_agent_step_id_valid(cfg->step_id))
        return -1;
    snprintf(s->step_id, sizeof s->step_id, "%s", cfg->step_id);
    s->redactor = cfg->redactor;
    if (sp_agent_reader_init(&s->reader, s->step_id, on_event, s))
        return -1;
    if (sp_agent_stderr_init(&s->err)) {
        sp_agent_reader_free(&s->reader);
        return -1;
    }
    sp_agent_events_init(&s->events, cfg->redactor, cfg->node_id, cfg->attempt, s->step_id,
                         cfg->sink, cfg->sink_ctx);
    return 0;
}

void sp_agent_session_free(sp_agent_session *s)
{
    sp_agent_reader_free(&s->reader);
    sp_agent_stderr_free(&s->err);
    sp_agent_events_free(&s->events);
}

bool sp_agent_session_stdout(sp_agent_session *s, const char *data, size_t len)
{
    return sp_agent_reader_feed(&s->reader, data, len);
}

void sp_agent_session_stderr(sp_agent_session *s, const char *data, size_t len)
{
    sp_agent_stderr_feed(&s->err, data, len);
}

void sp_agent_session_finish(sp_agent_session *s, const sp_agent_end *end,
                             const char *result_path, bool reachable, sp_agent_outcome *o)
{
    sp_agent_events_flush(&s->events);
    sp_agent_result_file file;
    const sp_agent_result_file *diag = NULL;
    if (sp_agent_end_needs_result_file(end) && s->reader.state != SP_READER_VIOLATED) {
        if (!reachable)
            sp_agent_result_file_describe_unreachable(&file);
        else if (result_path)
            sp_agent_result_file_read(result_path, s->step_id, &file);
        else
            sp_agent_result_file_describe_absent(&file);
        diag = &file;
    }
    sp_agent_classify(&s->reader, &s->err, s->redactor, end, diag, s->step_id, o);
}
