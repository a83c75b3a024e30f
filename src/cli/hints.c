/*
 * hints.c - the next step for a run, for people and scripts (see hints.h).
 */
#include "cli/hints.h"

#include "engine/stateview.h"

#include <string.h>

#include "json/json.h"

typedef struct run_hint {
    char next[4400];  /* the command that moves the run on, "" when none */
    char claim[4400]; /* an external step: how its actor claims it, "" when none */
    const char *actor;
} run_hint;

/* The first invocation that needs a person: a 0.1 run's one, or the first
 * unknown or stuck one of a 0.2 run; a stuck one is retried with `retry`. */
static void hint_intervention(const cli *c, const sp_run_view *v, run_hint *h)
{
    sv_state st;
    sp_error err = {0};
    const sv_invocation *inv = NULL;
    bool parsed = v->snapshot && sv_parse(v->snapshot, v->snapshot_len, &st, &err) == 0;
    sp_error_clear(&err);
    for (size_t i = 0; parsed && !inv && i < st.ninvocations; i++)
        if (st.invocations[i].state != SV_SCHEDULED)
            inv = &st.invocations[i];
    if (inv && inv->state == SV_STUCK)
        cli_next_command(c, h->next, sizeof h->next,
                         "retry %s   (or: spore resolve %s %s --complete <outcome> | --fail "
                         "<message>)",
                         v->key.run_id, v->key.run_id, inv->invocation_id);
    else
        cli_next_command(c, h->next, sizeof h->next,
                         "resolve %s %s --complete <outcome> | --retry | --fail <message>",
                         v->key.run_id, inv ? inv->invocation_id : "<invocationId>");
    if (parsed)
        sv_free(&st);
}

static void hint_external(const cli *c, const sp_run_view *v, const json_t *step, run_hint *h)
{
    const char *kind = json_string_value(json_object_get(step, "kind"));
    const char *state = json_string_value(json_object_get(step, "state"));
    if (!kind || strcmp(kind, "external") != 0 || !state)
        return;
    h->actor = json_string_value(json_object_get(step, "actor"));
    if (strcmp(state, "ready") == 0) {
        if (h->actor)
            cli_next_command(c, h->claim, sizeof h->claim, "step claim %s --actor %s",
                             v->key.run_id, h->actor);
        else
            cli_next_command(c, h->claim, sizeof h->claim, "step claim %s", v->key.run_id);
        snprintf(h->next, sizeof h->next, "%s", h->claim);
    }
}

static void hint_of(const cli *c, const sp_run_view *v, const json_t *snap, const json_t *step,
                    const json_t *wait, run_hint *h)
{
    memset(h, 0, sizeof *h);
    const char *status = json_string_value(json_object_get(snap, "status"));
    if (v->quarantined) {
        cli_next_command(c, h->next, sizeof h->next, "release %s", v->key.run_id);
        return;
    }
    if (!status) { /* created: nothing committed yet */
        cli_next_command(c, h->next, sizeof h->next, "resume %s", v->key.run_id);
        return;
    }
    if (strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
        strcmp(status, "cancelled") == 0)
        return;
    if (json_is_object(wait)) {
        const char *outcome =
            json_string_value(json_array_get(json_object_get(wait, "outcomes"), 0));
        cli_next_command(c, h->next, sizeof h->next, "signal %s %s%s%s", v->key.run_id,
                         json_string_value(json_object_get(wait, "signal")),
                         outcome ? " --outcome " : "", outcome ? outcome : "");
        return;
    }
    if (strcmp(status, "needs-intervention") == 0) {
        hint_intervention(c, v, h);
        return;
    }
    hint_external(c, v, step, h);
    if (!h->next[0])
        cli_next_command(c, h->next, sizeof h->next, "resume %s", v->key.run_id);
}

static void print_text(FILE *out, const json_t *wait, const run_hint *h)
{
    if (json_is_object(wait)) {
        fprintf(out, "%-12s signal %s at %s (outcomes:", "waiting for",
                json_string_value(json_object_get(wait, "signal")),
                json_string_value(json_object_get(wait, "nodeId")));
        const json_t *outcomes = json_object_get(wait, "outcomes");
        for (size_t i = 0; i < json_array_size(outcomes); i++)
            fprintf(out, " %s", json_string_value(json_array_get(outcomes, i)));
        fprintf(out, ")\n");
    }
    if (h->claim[0])
        fprintf(out, "%-12s %s: %s  (then spore step complete|fail <token>)\n", "claim",
                h->actor ? h->actor : "any actor", h->claim);
    if (h->next[0])
        fprintf(out, "%-12s %s\n", "next", h->next);
}

void hints_add(session *s, const sp_run_view *v, const json_t *step, json_t *status_json,
               FILE *text)
{
    json_t *snap = v->snapshot ? sp_json_parse(v->snapshot, v->snapshot_len, NULL) : NULL;
    json_t *wait = sp_engine_wait_view(s->engine, v);
    run_hint h;
    hint_of(s->c, v, snap, step, wait, &h);
    if (status_json) {
        json_object_set(status_json, "waitingFor", wait);
        json_object_set_new(status_json, "next", h.next[0] ? json_string(h.next) : json_null());
        if (h.claim[0])
            json_object_set_new(status_json, "claim",
                                json_pack("{s:o,s:s}", "actor",
                                          h.actor ? json_string(h.actor) : json_null(),
                                          "command", h.claim));
    }
    if (text)
        print_text(text, wait, &h);
    json_decref(wait);
    json_decref(snap);
}
