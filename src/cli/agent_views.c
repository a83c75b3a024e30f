/*
 * agent_views.c - kept agent events for status and events (see
 * agent_views.h). Reads the audit trail through store/audit.h.
 */
#include "cli/agent_views.h"

#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "store/audit.h"

#define KIND "agent.event"
#define TEXT_MAX 120

static json_t *load_all(sp_store *store, const sp_run_key *key)
{
    json_t *all = json_array();
    uint64_t after = 0;
    for (;;) {
        sp_audit_list page;
        sp_error err = {0};
        if (sp_store_list_audit(store, key, KIND, after, SP_STORE_PAGE_MAX, &page, &err) !=
            SP_STORE_OK) {
            sp_error_clear(&err);
            break;
        }
        for (size_t i = 0; i < page.n; i++) {
            json_t *v = json_loadb(page.rows[i].evidence, page.rows[i].evidence_len, 0, NULL);
            if (json_is_object(v))
                json_array_append_new(all, v);
            else
                json_decref(v);
            after = page.rows[i].audit_id;
        }
        size_t n = page.n;
        sp_audit_list_free(&page);
        if (n < SP_STORE_PAGE_MAX)
            break;
    }
    return all;
}

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* A short line for a person: the kind's main text, cut. */
static void describe(const json_t *e, char *out, size_t cap)
{
    const json_t *d = json_object_get(e, "data");
    const char *kind = str(e, "kind");
    char raw[1024];
    if (strcmp(kind, "tool_call") == 0)
        snprintf(raw, sizeof raw, "%s %s", str(d, "name"), str(d, "input"));
    else if (strcmp(kind, "tool_result") == 0)
        snprintf(raw, sizeof raw, "%s", str(d, "output"));
    else if (strcmp(kind, "result") == 0)
        snprintf(raw, sizeof raw, "%s (%lld in, %lld out tokens)", str(d, "text"),
                 (long long)json_integer_value(json_object_get(d, "input_tokens")),
                 (long long)json_integer_value(json_object_get(d, "output_tokens")));
    else if (strcmp(kind, "error") == 0)
        snprintf(raw, sizeof raw, "%s", str(d, "message"));
    else
        snprintf(raw, sizeof raw, "%s", str(d, "text"));
    for (char *p = raw; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    sp_utf8_clean(out, cap < TEXT_MAX + 1 ? cap : TEXT_MAX + 1, raw);
}

json_t *view_agent_events(sp_store *store, const sp_run_key *key, json_t *obj, FILE *text)
{
    if (!obj && !text)
        return NULL;
    json_t *all = load_all(store, key);
    if (obj && json_array_size(all))
        json_object_set(obj, "agentEvents", all);
    for (size_t i = 0; text && i < json_array_size(all); i++) {
        const json_t *e = json_array_get(all, i);
        if (json_object_get(e, "events")) {
            fprintf(text, "%-12s %s attempt %lld (%s): %lld events, %lld kept\n", "agent",
                    str(e, "nodeId"), (long long)json_integer_value(json_object_get(e, "attempt")),
                    str(e, "stepId"), (long long)json_integer_value(json_object_get(e, "events")),
                    (long long)json_integer_value(json_object_get(e, "kept")));
            continue;
        }
        char line[TEXT_MAX + 1];
        describe(e, line, sizeof line);
        fprintf(text, "%-12s %s attempt %lld #%lld %-11s %s\n", "agent", str(e, "nodeId"),
                (long long)json_integer_value(json_object_get(e, "attempt")),
                (long long)json_integer_value(json_object_get(e, "seq")), str(e, "kind"), line);
    }
    json_decref(all);
    return obj;
}
