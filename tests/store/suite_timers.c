/*
 * suite_timers.c - T01, the commands of format 0.2 on every adapter
 * (docs/format-0.2.md): timer.start stores a timer, scan_timers lists it
 * only once due, fire_timer appends timer.fired exactly once (never early,
 * never for a cancelled or fired timer), timer.cancel deletes it;
 * activity.cancel settles the invocation so nothing claims it again and
 * takes the lease of its running attempt; timer.fired is a reserved kind;
 * one decision with 80 commands lands whole, also when its writes are more
 * than a pipelining driver keeps pending (80 cancels: 160 writes, no read).
 *
 * What it must never do: look at an adapter's tables (views only).
 */
#include "suite_util.h"

#define TIMER_A "tmr_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define TIMER_B "tmr_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static sp_command_rec command(const char *id, const char *kind, const char *payload)
{
    return (sp_command_rec){id, "wait/1", kind, payload, strlen(payload), NULL};
}

/* Append a signal and commit its turn with `cmds` instead of the kernel's
 * (the store stores what a decision says; it does not re-run the kernel). */
static sp_store_rc commit_with(store_env *e, const sp_run_key *k, const char *message,
                               sp_command_rec *cmds, size_t n, sp_error *err)
{
    sp_append_event_res a;
    EXPECT_OK(fx_signal(e->a, k, message, "noise", &a, err), err);
    fx_decision d;
    if (!fx_decide(e->a, k, &d))
        return SP_STORE_NOT_FOUND;
    sp_commit_turn_req req = d.req;
    req.commands = cmds;
    req.ncommands = n;
    sp_commit_turn_res r;
    sp_store_rc rc = sp_store_commit_turn(e->a, &req, &r, err);
    fx_decision_free(&d);
    return rc;
}

static size_t due_timers(store_env *e, const char *id)
{
    sp_timer_page p;
    sp_error err = {0};
    EXPECT_OK(sp_store_scan_timers(e->a, 0, &p, &err), &err);
    size_t n = 0;
    for (size_t i = 0; i < p.n; i++)
        n += !id || strcmp(p.items[i].timer_id, id) == 0;
    sp_timer_page_free(&p);
    return n;
}

static sp_store_rc fire(store_env *e, const sp_run_key *k, const char *request_id,
                        const char *timer_id, sp_append_event_res *res, sp_error *err)
{
    sp_fire_timer_req req = {*k, request_id, timer_id};
    return sp_store_fire_timer(e->a, &req, res, err);
}

/* The commits come first: a fired timer leaves a timer.fired event pending,
 * which the fixture's 0.1 kernel cannot decide. */
static void t01_timer_commands(store_env *e, const sp_run_key *k)
{
    sp_error err = {0};
    sp_command_rec cmds[] = {
        command("cmd_t01_a", "timer.start",
                "{\"activationId\":\"wait/1\",\"dueAtMs\":\"5000\",\"timerId\":\"" TIMER_A "\"}"),
        command("cmd_t01_b", "timer.start",
                "{\"activationId\":\"wait/2\",\"dueAtMs\":\"6000\",\"timerId\":\"" TIMER_B "\"}"),
    };
    EXPECT_OK(commit_with(e, k, "t1", cmds, 2, &err), &err);
    uint64_t next = 0;
    EXPECT_OK(sp_store_next_timer(e->a, k, &next, &err), &err);
    CHECK_INT(next, 5000);
    /* starting a stored timer again is refused; a bad payload too */
    sp_command_rec again = command("cmd_t01_c", "timer.start",
                                   "{\"activationId\":\"wait/2\",\"dueAtMs\":\"7000\","
                                   "\"timerId\":\"" TIMER_B "\"}");
    EXPECT(commit_with(e, k, "t2", &again, 1, &err), &err, SP_STORE_CONFLICT, "timer.exists");
    sp_command_rec bad = command("cmd_t01_e", "timer.start", "{\"timerId\":\"tmr_short\"}");
    EXPECT(commit_with(e, k, "t2", &bad, 1, &err), &err, SP_STORE_CONFLICT, "command.invalid");
    /* cancelling one deletes it */
    sp_command_rec cancel = command("cmd_t01_d", "timer.cancel", "{\"timerId\":\"" TIMER_B "\"}");
    EXPECT_OK(commit_with(e, k, "t2", &cancel, 1, &err), &err);
    EXPECT_OK(sp_store_next_timer(e->a, k, &next, &err), &err);
    CHECK_INT(next, 5000);
}

static void t01_fire(store_env *e, const sp_run_key *k)
{
    sp_error err = {0};
    CHECK_INT(due_timers(e, NULL), 0); /* now = 1000 */
    sp_append_event_res f;
    EXPECT(fire(e, k, "fire/a", TIMER_A, &f, &err), &err, SP_STORE_STALE, "timer.not-due");
    manual_clock_set(&e->clock, 5000);
    CHECK_INT(due_timers(e, TIMER_A), 1);
    EXPECT_OK(fire(e, k, "fire/a", TIMER_A, &f, &err), &err);
    CHECK(f.disposition == SP_APPLIED);
    CHECK_INT(fx_event_count(e->a, k, "tmr:" TIMER_A), 1);
    uint64_t seq = f.sequence;
    EXPECT_OK(fire(e, k, "fire/a", TIMER_A, &f, &err), &err); /* the same request: duplicate */
    CHECK(f.disposition == SP_DUPLICATE && f.sequence == seq);
    EXPECT(fire(e, k, "fire/a2", TIMER_A, &f, &err), &err, SP_STORE_STALE, "timer.not-found");
    CHECK_INT(fx_event_count(e->a, k, "tmr:" TIMER_A), 1);
    manual_clock_set(&e->clock, 9000); /* the cancelled timer never comes due */
    CHECK_INT(due_timers(e, NULL), 0);
    EXPECT(fire(e, k, "fire/b", TIMER_B, &f, &err), &err, SP_STORE_STALE, "timer.not-found");
    uint64_t next = 1;
    EXPECT_OK(sp_store_next_timer(e->a, k, &next, &err), &err);
    CHECK_INT(next, 0);
}

static const char *invocation_status(store_env *e, const sp_run_key *k, const char *inv)
{
    static char status[32];
    sp_invocation_list l;
    sp_error err = {0};
    status[0] = 0;
    EXPECT_OK(sp_store_list_invocations(e->a, k, &l, &err), &err);
    for (size_t i = 0; i < l.n; i++)
        if (strcmp(l.items[i].invocation_id, inv) == 0)
            snprintf(status, sizeof status, "%s", l.items[i].status);
    sp_invocation_list_free(&l);
    return status;
}

static void t01_cancel(store_env *e, const sp_run_key *k, sp_claim *claim)
{
    sp_error err = {0};
    const char *inv = claim->attempt.invocation_id;
    char payload[128];
    snprintf(payload, sizeof payload, "{\"invocationId\":\"%s\"}", inv);
    sp_command_rec missing = command("cmd_t01_f", "activity.cancel",
                                     "{\"invocationId\":\"inv_00000000000000000000000000000000\"}");
    EXPECT(commit_with(e, k, "c0", &missing, 1, &err), &err, SP_STORE_CONFLICT,
           "invocation.cancel-invalid");
    sp_command_rec cancel = command("cmd_t01_g", "activity.cancel", payload);
    EXPECT_OK(commit_with(e, k, "c1", &cancel, 1, &err), &err);
    CHECK_STR(invocation_status(e, k, inv), "settled");
    sp_heartbeat_req hb = {claim->attempt, "beat/t01", 10000};
    sp_heartbeat_res hr;
    EXPECT(sp_store_heartbeat(e->a, &hb, &hr, &err), &err, SP_STORE_STALE, "lease.lost");
    CHECK(!due_has(e, inv)); /* nothing claims it again */
    sp_command_rec twice = command("cmd_t01_h", "activity.cancel", payload);
    EXPECT_OK(commit_with(e, k, "c2", &twice, 1, &err), &err); /* settled: nothing changes */
}

/* One decision with more writes than a pipelining driver keeps pending
 * (PostgreSQL: 64): every one of them lands. */
enum { MANY_TIMERS = 80 };

static void t01_many_commands(store_env *e, const sp_run_key *k)
{
    static char ids[MANY_TIMERS][16], payloads[MANY_TIMERS][160];
    sp_command_rec cmds[MANY_TIMERS];
    for (int i = 0; i < MANY_TIMERS; i++) {
        snprintf(ids[i], sizeof ids[i], "cmd_t01_m%02d", i);
        snprintf(payloads[i], sizeof payloads[i],
                 "{\"activationId\":\"wait/%d\",\"dueAtMs\":\"1000\","
                 "\"timerId\":\"tmr_%032d\"}",
                 i + 10, i);
        cmds[i] = command(ids[i], "timer.start", payloads[i]);
    }
    sp_error err = {0};
    EXPECT_OK(commit_with(e, k, "t5", cmds, MANY_TIMERS, &err), &err);
    CHECK_INT(due_timers(e, NULL), MANY_TIMERS); /* due now (1000) */
    /* cancelling them reads nothing: 160 writes without a read between */
    static char cancel_ids[MANY_TIMERS][16], cancels[MANY_TIMERS][80];
    for (int i = 0; i < MANY_TIMERS; i++) {
        snprintf(cancel_ids[i], sizeof cancel_ids[i], "cmd_t01_c%02d", i);
        snprintf(cancels[i], sizeof cancels[i], "{\"timerId\":\"tmr_%032d\"}", i);
        cmds[i] = command(cancel_ids[i], "timer.cancel", cancels[i]);
    }
    EXPECT_OK(commit_with(e, k, "t6", cmds, MANY_TIMERS, &err), &err);
    CHECK_INT(due_timers(e, NULL), 0);
}

void store_t01_timers_and_cancel(store_env *e)
{
    sp_run_key k = fx_key("run_t01");
    sp_claim claim;
    drive_to_claim(e, &k, "w1", 100000, &claim);
    t01_cancel(e, &k, &claim);
    t01_timer_commands(e, &k);
    t01_many_commands(e, &k);
    t01_fire(e, &k);
    sp_error err = {0};
    fx_body body = fx_body_of("{\"timerId\":\"" TIMER_A "\"}");
    sp_append_event_req fake = {k, "fake/1", "tmr:fake", "timer.fired", fx_evidence(&body)};
    sp_append_event_res a;
    EXPECT(sp_store_append_event(e->a, &fake, &a, &err), &err, SP_STORE_CONFLICT,
           "event.reserved-kind");
    fx_body_free(&body);
    sp_claim_free(&claim);
}
