/*
 * reader.c - the incremental protocol reader (see reader.h): line assembly
 * with bounds, the preamble, the envelope and per-kind closed schemas, seq
 * continuity, record order.
 *
 * Must never keep more than one line, go on after a violation, or put a byte
 * of the stream into a rule.
 */
#include "agent/reader.h"

#include <stdlib.h>
#include <string.h>

bool sp_agent_step_id_valid(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > SP_AGENT_STEP_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') || id[i] == '-'))
            return false;
    return true;
}

int sp_agent_reader_init(sp_agent_reader *r, const char *step_id, sp_reader_event_fn on_event,
                         void *ctx)
{
    memset(r, 0, sizeof *r);
    if (!sp_agent_step_id_valid(step_id))
        return -1;
    strcpy(r->step_id, step_id);
    r->next_seq = 1;
    r->on_event = on_event;
    r->ctx = ctx;
    return 0;
}

void sp_agent_reader_free(sp_agent_reader *r)
{
    free(r->line);
    free(r->result.summary);
    free(r->result.error);
    json_decref(r->result.body);
    sp_jt_free(&r->tape);
    memset(r, 0, sizeof *r);
}

static bool violate(sp_agent_reader *r, const char *rule, uint64_t line)
{
    if (r->state != SP_READER_VIOLATED) {
        r->state = SP_READER_VIOLATED;
        r->rule = rule;
        r->rule_line = line;
    }
    return false;
}

/* ---- closed schemas ---- */

typedef struct member {
    const char *name;
    bool required;
} member;

/* Every member of `obj` is in `names`, every required one is present.
 * Returns NULL, SP_RULE_UNKNOWN or SP_RULE_MISSING. */
static const char *closed(const sp_jt *t, size_t obj, const member *names, size_t nnames)
{
    unsigned seen = 0;
    for (size_t k = sp_jt_first(t, obj); k; k = sp_jt_next(t, obj, k)) {
        bool known = false;
        for (size_t i = 0; i < nnames && !known; i++)
            if (sp_jt_str_eq(t, k, names[i].name)) {
                known = true;
                seen |= 1u << i;
            }
        if (!known)
            return SP_RULE_UNKNOWN;
    }
    for (size_t i = 0; i < nnames; i++)
        if (names[i].required && !(seen & (1u << i)))
            return SP_RULE_MISSING;
    return NULL;
}

static bool is_type(const sp_jt *t, size_t i, sp_jt_type type)
{
    return i && sp_jt_at(t, i)->type == type;
}

static bool opt_type(const sp_jt *t, size_t i, sp_jt_type type)
{
    return !i || sp_jt_at(t, i)->type == type;
}

static bool opt_uint53(const sp_jt *t, size_t i)
{
    uint64_t v;
    return !i || sp_jt_uint53(t, i, &v);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The data object of an event of kind `kind` (closed per kind). */
static bool data_ok(const sp_jt *t, size_t kind, size_t data)
{
    if (!is_type(t, data, SP_JT_OBJECT))
        return false;
    if (sp_jt_str_eq(t, kind, "thinking")) {
        static const member m[] = {{"text", true}};
        return !closed(t, data, m, N(m)) && is_type(t, sp_jt_get(t, data, "text"), SP_JT_STRING);
    }
    if (sp_jt_str_eq(t, kind, "tool_call")) {
        static const member m[] = {{"name", true}, {"input", true}, {"call_id", false}};
        return !closed(t, data, m, N(m)) &&
               is_type(t, sp_jt_get(t, data, "name"), SP_JT_STRING) &&
               opt_type(t, sp_jt_get(t, data, "call_id"), SP_JT_STRING);
    }
    if (sp_jt_str_eq(t, kind, "tool_result")) {
        static const member m[] = {{"output", true}, {"call_id", false}};
        return !closed(t, data, m, N(m)) &&
               opt_type(t, sp_jt_get(t, data, "call_id"), SP_JT_STRING);
    }
    if (sp_jt_str_eq(t, kind, "result")) {
        static const member m[] = {{"text", true},           {"input_tokens", true},
                                   {"output_tokens", true},  {"cost_usd", false},
                                   {"reasoning_tokens", false}, {"response_model", false}};
        uint64_t v;
        size_t cost = sp_jt_get(t, data, "cost_usd");
        return !closed(t, data, m, N(m)) &&
               is_type(t, sp_jt_get(t, data, "text"), SP_JT_STRING) &&
               sp_jt_uint53(t, sp_jt_get(t, data, "input_tokens"), &v) &&
               sp_jt_uint53(t, sp_jt_get(t, data, "output_tokens"), &v) &&
               (!cost || sp_jt_nonneg_number(t, cost)) &&
               opt_uint53(t, sp_jt_get(t, data, "reasoning_tokens")) &&
               opt_type(t, sp_jt_get(t, data, "response_model"), SP_JT_STRING);
    }
    if (sp_jt_str_eq(t, kind, "error")) {
        static const member m[] = {{"message", true}};
        return !closed(t, data, m, N(m)) &&
               is_type(t, sp_jt_get(t, data, "message"), SP_JT_STRING);
    }
    return false;
}

static bool kind_known(const sp_jt *t, size_t kind)
{
    static const char *const kinds[] = {"thinking", "tool_call", "tool_result", "result", "error"};
    for (size_t i = 0; i < N(kinds); i++)
        if (sp_jt_str_eq(t, kind, kinds[i]))
            return true;
    return false;
}

static char *decode_alloc(const sp_jt *t, size_t i)
{
    sp_buf b = SP_BUF_INIT;
    sp_jt_str_decode(t, i, &b);
    sp_buf_append(&b, "", 0);
    if (!sp_buf_ok(&b)) {
        sp_buf_free(&b);
        return NULL;
    }
    char *s = sp_buf_take(&b, NULL);
    return s ? s : strdup("");
}

/* The result record's own members: status, body. */
static const char *check_result(sp_agent_reader *r, size_t rec, uint64_t no)
{
    const sp_jt *t = &r->tape;
    size_t status = sp_jt_get(t, rec, "status"), body = sp_jt_get(t, rec, "body");
    uint64_t code;
    if (!sp_jt_uint53(t, status, &code) || (code != 200 && code != 502))
        return SP_RULE_STATUS;
    if (!is_type(t, body, SP_JT_OBJECT))
        return SP_RULE_BODY;
    sp_agent_result *res = &r->result;
    if (code == 502) {
        static const member m[] = {{"error", true}};
        size_t err = sp_jt_get(t, body, "error");
        if (closed(t, body, m, N(m)) || !is_type(t, err, SP_JT_STRING))
            return SP_RULE_BODY;
        res->error = decode_alloc(t, err);
    } else {
        size_t success = sp_jt_get(t, body, "success"), summary = sp_jt_get(t, body, "summary");
        size_t err = sp_jt_get(t, body, "error");
        if ((!is_type(t, success, SP_JT_TRUE) && !is_type(t, success, SP_JT_FALSE)) ||
            !is_type(t, summary, SP_JT_STRING) || !opt_type(t, err, SP_JT_STRING))
            return SP_RULE_BODY;
        res->success = sp_jt_at(t, success)->type == SP_JT_TRUE;
        res->summary = decode_alloc(t, summary);
        res->error = err ? decode_alloc(t, err) : NULL;
        const sp_jt_node *b = sp_jt_at(t, body);
        size_t span = (b->end < t->n ? t->nodes[b->end].start : t->len) - b->start;
        if (span > SP_AGENT_BODY_CONVERT_MAX)
            res->body_too_large = true;
        else
            res->body = sp_jt_to_json(t, body);
    }
    res->status = (int)code;
    res->line = (size_t)no;
    r->state = SP_READER_DONE;
    return NULL;
}

/* A parsed line that is a record attempt: the envelope, then the kind. */
static const char *check_record(sp_agent_reader *r, size_t n, uint64_t no)
{
    const sp_jt *t = &r->tape;
    if (sp_jt_at(t, 0)->type != SP_JT_OBJECT)
        return SP_RULE_NOT_OBJECT;
    size_t v = sp_jt_get(t, 0, "v"), type = sp_jt_get(t, 0, "type");
    size_t step = sp_jt_get(t, 0, "stepId");
    uint64_t version;
    if (!v || !type || !step)
        return SP_RULE_MISSING;
    if (!sp_jt_uint53(t, v, &version) || version != 1)
        return SP_RULE_VERSION;
    bool start = sp_jt_str_eq(t, type, "start"), event = sp_jt_str_eq(t, type, "event");
    bool result = sp_jt_str_eq(t, type, "result");
    if (!start && !event && !result)
        return SP_RULE_TYPE;
    if (!sp_jt_str_eq(t, step, r->step_id))
        return SP_RULE_STEP_ID;
    static const member start_m[] = {{"v", true}, {"type", true}, {"stepId", true}};
    static const member event_m[] = {{"v", true},   {"type", true}, {"stepId", true},
                                     {"seq", true}, {"ts", true},   {"kind", true},
                                     {"data", true}};
    static const member result_m[] = {{"v", true},      {"type", true}, {"stepId", true},
                                      {"status", true}, {"body", true}};
    const char *rule = start ? closed(t, 0, start_m, N(start_m))
                       : event ? closed(t, 0, event_m, N(event_m))
                               : closed(t, 0, result_m, N(result_m));
    if (rule)
        return rule;
    if (!result && n > SP_AGENT_LINE_MAX)
        return SP_RULE_LINE_TOO_LONG;
    if (start) {
        if (r->saw_start)
            return SP_RULE_ORDER;
        r->saw_start = true;
        r->state = SP_READER_STARTED;
        return NULL;
    }
    if (!r->saw_start)
        return SP_RULE_ORDER;
    if (result)
        return check_result(r, 0, no);
    uint64_t seq;
    size_t ts = sp_jt_get(t, 0, "ts"), kind = sp_jt_get(t, 0, "kind");
    size_t data = sp_jt_get(t, 0, "data");
    if (!sp_jt_uint53(t, sp_jt_get(t, 0, "seq"), &seq) || seq != r->next_seq)
        return SP_RULE_SEQ;
    if (!is_type(t, ts, SP_JT_STRING) || sp_jt_str_chars(t, ts) > 40)
        return SP_RULE_TS;
    if (!is_type(t, kind, SP_JT_STRING) || !kind_known(t, kind))
        return SP_RULE_KIND;
    if (!data_ok(t, kind, data))
        return SP_RULE_DATA;
    r->next_seq++;
    r->events++;
    return NULL;
}

/* A preamble line is a record attempt when it is a JSON object whose
 * "type" names a record. */
static bool record_attempt(const sp_jt *t)
{
    if (sp_jt_at(t, 0)->type != SP_JT_OBJECT)
        return false;
    size_t type = sp_jt_get(t, 0, "type");
    return type && (sp_jt_str_eq(t, type, "start") || sp_jt_str_eq(t, type, "event") ||
                    sp_jt_str_eq(t, type, "result"));
}

static bool process_line(sp_agent_reader *r, const char *s, size_t n)
{
    uint64_t no = ++r->lines;
    r->lines_bytes += n + 1;
    if (r->state == SP_READER_PREAMBLE) {
        bool parsed = n > 0 && sp_jt_parse(&r->tape, s, n);
        if (!parsed || !record_attempt(&r->tape)) {
            r->preamble += n;
            if (r->preamble > SP_AGENT_PREAMBLE_MAX)
                return violate(r, SP_RULE_PREAMBLE_TOO_LONG, no);
            return true;
        }
    } else {
        if (n == 0)
            return violate(r, SP_RULE_BLANK_LINE, no);
        if (!sp_jt_parse(&r->tape, s, n))
            return violate(r, r->tape.rule, no);
    }
    uint64_t seq = r->next_seq;
    const char *rule = check_record(r, n, no);
    if (rule)
        return violate(r, rule, no);
    if (r->next_seq != seq && r->on_event)
        r->on_event(r->ctx, &r->tape, 0, sp_jt_get(&r->tape, 0, "data"), seq, s, n);
    return true;
}

static bool append(sp_agent_reader *r, const char *data, size_t n)
{
    if (r->line_len + n > r->line_cap) {
        size_t cap = r->line_cap ? r->line_cap : 4096;
        while (cap < r->line_len + n)
            cap *= 2;
        if (cap > SP_AGENT_RESULT_LINE_MAX)
            cap = SP_AGENT_RESULT_LINE_MAX;
        char *line = realloc(r->line, cap);
        if (!line)
            return false;
        r->line = line;
        r->line_cap = cap;
    }
    memcpy(r->line + r->line_len, data, n);
    r->line_len += n;
    return true;
}

static bool feed(sp_agent_reader *r, const char *data, size_t len)
{
    while (len > 0) {
        if (r->state == SP_READER_VIOLATED)
            return false;
        if (r->state == SP_READER_DONE)
            return violate(r, SP_RULE_AFTER_RESULT, r->lines + 1);
        const char *lf = memchr(data, '\n', len);
        size_t seg = lf ? (size_t)(lf - data) : len;
        size_t limit = r->state == SP_READER_PREAMBLE ? SP_AGENT_LINE_MAX
                                                       : SP_AGENT_RESULT_LINE_MAX;
        if (r->line_len + seg > limit)
            return violate(r, SP_RULE_LINE_TOO_LONG, r->lines + 1);
        if (lf && r->line_len == 0) {
            process_line(r, data, seg); /* the whole line is here: no copy */
        } else {
            if (!append(r, data, seg))
                return violate(r, SP_JT_RULE_MEMORY, r->lines + 1);
            if (lf) {
                process_line(r, r->line, r->line_len);
                r->line_len = 0;
            }
        }
        size_t used = seg + (lf ? 1 : 0);
        if (lf && r->state != SP_READER_VIOLATED)
            r->consumed = r->lines_bytes;
        data += used;
        len -= used;
    }
    return r->state != SP_READER_VIOLATED;
}

bool sp_agent_reader_feed(sp_agent_reader *r, const char *data, size_t len)
{
    if (r->state == SP_READER_VIOLATED)
        return false;
    size_t room = r->total < SP_AGENT_STDOUT_MAX ? (size_t)(SP_AGENT_STDOUT_MAX - r->total) : 0;
    size_t take = len < room ? len : room;
    r->total += take;
    if (!feed(r, data, take))
        return false;
    if (take < len)
        return violate(r, SP_RULE_STDOUT_TOO_LARGE, r->lines + 1);
    return true;
}

const char *sp_agent_reader_eof_rule(const sp_agent_reader *r, uint64_t *line)
{
    if (r->state == SP_READER_VIOLATED)
        return NULL;
    *line = r->lines + 1;
    if (r->line_len > 0)
        return SP_RULE_FINAL_LF;
    *line = r->lines;
    if (!r->saw_start)
        return SP_RULE_NO_START;
    if (r->state != SP_READER_DONE)
        return SP_RULE_NO_RESULT;
    return NULL;
}
