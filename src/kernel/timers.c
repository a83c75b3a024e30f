/*
 * timers.c - durable timers (workflows-0.2.md §5, docs/format-0.2.md):
 * `sleep` (durationMs from logical now, or `until` mapped to an epoch-ms
 * decimal string), the timeout of an await-signal, the commands
 * timer.start / timer.cancel and the event timer.fired. A timer's ID is
 * derived from its activation: `tmr_` + 32 hex of hash("timer", [tenant,
 * runId, activationId]).
 *
 * Must never read a clock (due times are logical now + duration, or the
 * mapped time), let a timer fire a transition twice (K14: a fired or
 * cancelled timer is gone from the state, and a timer.fired that matches
 * no live timer is only the diagnostic timer.stale), or invent an ID.
 */
#include <string.h>

#include "json/decimal.h"
#include "json/json.h"
#include "kernel/run02.h"

static const char MSG_UNTIL[] = "sleep until is not a decimal epoch-ms string";

void t02_timer_id(kt *t, const char *activation, char out[SP_ID_LEN + 1])
{
    const char *tenant = kt_str(t, "tenant"), *run = kt_str(t, "runId");
    sp_part p[3] = {{tenant, strlen(tenant)}, {run, strlen(run)}, {activation, strlen(activation)}};
    sp_derive_id("tmr_", "timer", p, 3, out);
}

int t02_start(kt *t, const char *activation, uint64_t due_at_ms)
{
    char id[SP_ID_LEN + 1], due[SP_DECIMAL_MAX_LEN + 1];
    t02_timer_id(t, activation, id);
    sp_decimal_format(due_at_ms, due);
    kt_obj_set(t, kt_st(t, "timers"), id,
               json_pack("{s:s,s:s,s:s}", "timerId", id, "activationId", activation, "dueAtMs",
                         due));
    if (t->oom)
        return k_oom(t);
    return k_command(t, "timer.start", activation, "timer.start",
                     json_pack("{s:s,s:s,s:s}", "activationId", activation, "dueAtMs", due,
                               "timerId", id));
}

int t02_cancel(kt *t, const char *timer_id)
{
    json_t *timer = json_object_get(kt_st(t, "timers"), timer_id);
    if (!timer)
        return 0;
    char id[SP_ID_LEN + 1];
    snprintf(id, sizeof id, "%s", timer_id);
    int rc = k_command(t, "timer.cancel", json_string_value(json_object_get(timer, "activationId")),
                       "timer.cancel", json_pack("{s:s}", "timerId", id));
    json_object_del(kt_st(t, "timers"), id);
    return rc;
}

/* The due time of a sleep: now + durationMs, or `until` evaluated. Returns
 * 1 when `until` ended the run. */
static int due_time(kt *t, const sp_node *node, uint64_t *due)
{
    if (node->has_duration) {
        if (node->duration_ms > SP_U63_MAX - t->now)
            return k_budget(t, "budget.counter-range", "dueAtMs would pass 2^63-1");
        *due = t->now + node->duration_ms;
        return 0;
    }
    json_t *until, *error;
    int rc = k_evaluate(t, node, node->until, NULL, -1, &until, &error);
    if (rc)
        return rc < 0 ? -1 : r02_terminate_failed(t, error) ? -1 : 1;
    bool ok = sp_decimal_from_json(until, due);
    json_t *details = ok ? NULL : json_pack("{s:O}", "until", until);
    json_decref(until);
    if (ok)
        return 0;
    return r02_terminate_failed(t, k_error_info("timer.until-invalid", MSG_UNTIL, node->id,
                                                details)) ? -1 : 1;
}

int t02_enter_sleep(kt *t, const char *sid, const sp_node *node, const char *activation,
                    uint32_t visit)
{
    uint64_t due = 0;
    int rc = due_time(t, node, &due);
    if (rc)
        return rc < 0 ? -1 : 0;
    s02_set_pos(t, sid, node, activation, visit);
    return t->oom ? k_oom(t) : t02_start(t, activation, due);
}

int t02_on_fired(kt *t, khop *next)
{
    const json_t *id = t->ev->timer_id;
    json_t *timer = strlen(json_string_value(id)) == json_string_length(id)
                        ? json_object_get(kt_st(t, "timers"), json_string_value(id))
                        : NULL;
    if (!timer)
        return k_diagnose(t, "timer.stale", NULL, json_pack("{s:O}", "timerId", id));
    char activation[160], sid[SID_MAX];
    snprintf(activation, sizeof activation, "%s",
             json_string_value(json_object_get(timer, "activationId")));
    json_object_del(kt_st(t, "timers"), json_string_value(id));
    const json_t *pos = s02_find(t, activation, sid) ? s02_pos(t, sid) : NULL;
    const sp_node *node = pos ? s02_pos_node(t, pos) : NULL;
    if (!node || (node->kind != SP_NODE_SLEEP && node->kind != SP_NODE_AWAIT_SIGNAL))
        return k_invariant(t, "a live timer without its activation");
    const char *outcome = node->kind == SP_NODE_SLEEP ? "ok" : "timeout";
    if (node->kind == SP_NODE_AWAIT_SIGNAL)
        r02_wait_drop(t, activation);
    khop_set(t, next, sid, node, s02_pos_visit(pos), json_string(outcome), json_null());
    return t->oom ? k_oom(t) : 0;
}
