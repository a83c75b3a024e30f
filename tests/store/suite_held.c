/*
 * suite_held.c - X05 of the store conformance suite: what held (async and
 * external) attempts need from every adapter (engine.md §9, §11):
 * relative deadlines on claim and hold measured on the store's clock;
 * scan_held with the attempt, holder, bounds, action and package; outbox
 * items carrying the action and package; lease items flagging held attempts
 * with their deadline; scan_running never offering a held attempt to the
 * owner-dead takeover.
 */
#include "suite_util.h"

static void x05_relative_bounds(store_env *e, const sp_run_key *k, sp_claim *c)
{
    sp_error err = {0};
    char inv[SP_ID_LEN + 1] = "";
    CHECK(fx_invocation(e->a, k, inv));
    manual_clock_set(&e->clock, 10000);
    sp_claim_req req = {.key = *k,
                        .request_id = "claim/x05",
                        .invocation_id = inv,
                        .worker = "w-x05",
                        .lease_duration_ms = 500,
                        .host = {"host-x05", 42, 4242},
                        .deadline_in_ms = 3000};
    EXPECT_OK(sp_store_claim_attempt(e->a, &req, c, &err), &err);
    CHECK_INT(c->deadline_ms, 13000); /* now + deadline_in_ms */
    CHECK_INT(c->lease_until_ms, 10500);
    manual_clock_set(&e->clock, 10200);
    sp_hold_req hold = {.attempt = c->attempt,
                        .request_id = "hold/x05",
                        .holder = "{\"job\":5}",
                        .lease_in_ms = 1000,
                        .deadline_in_ms = 2000};
    sp_heartbeat_res h;
    EXPECT_OK(sp_store_hold_attempt(e->a, &hold, &h, &err), &err);
    CHECK_INT(h.lease_until_ms, 11200); /* now + lease_in_ms */
    hold.request_id = "hold/x05/cap";
    hold.lease_in_ms = 5000; /* beyond the new deadline 10200 + 2000 */
    EXPECT_OK(sp_store_hold_attempt(e->a, &hold, &h, &err), &err);
    CHECK_INT(h.lease_until_ms, 12200);
}

static void x05_scans(store_env *e, const sp_run_key *k, const sp_claim *c)
{
    sp_error err = {0};
    sp_held_page held;
    EXPECT_OK(sp_store_scan_held(e->a, NULL, 0, &held, &err), &err);
    CHECK_INT(held.n, 1);
    if (held.n == 1) {
        const sp_held_item *it = &held.items[0];
        CHECK_STR(it->attempt.attempt_id, c->attempt.attempt_id);
        CHECK_STR(it->attempt.owner, "w-x05");
        CHECK(it->attempt.fence == c->attempt.fence);
        CHECK_STR(it->holder, "{\"job\":5}");
        CHECK_INT(it->deadline_ms, 12200);
        CHECK_INT(it->lease_until_ms, 12200);
        CHECK_INT(it->attempt_number, 1);
        CHECK_STR(it->node_id, c->node_id);
        CHECK_STR(it->action_id, c->action_id);
        CHECK_STR(it->package_digest, fx_package_digest());
    }
    sp_held_page_free(&held);
    /* the owner-dead takeover never sees a held attempt */
    sp_due_page running;
    EXPECT_OK(sp_store_scan_running(e->a, "host-x05", NULL, 0, &running, &err), &err);
    CHECK_INT(running.n, 0);
    sp_due_page_free(&running);
    /* at the deadline, the lease item says held and carries the deadline */
    manual_clock_set(&e->clock, 12200);
    sp_due_page due;
    EXPECT_OK(sp_store_scan_due(e->a, NULL, 0, &due, &err), &err);
    CHECK(due.n >= 1 && due.items[0].kind == SP_DUE_LEASE && due.items[0].held &&
          due.items[0].deadline_ms == 12200);
    sp_due_page_free(&due);
    (void)k;
}

static void x05_outbox_items(store_env *e)
{
    sp_run_key k = fx_key("run_x05_outbox");
    sp_error err = {0};
    sp_create_run_res cr;
    EXPECT_OK(fx_create(e->a, &k, "x05-outbox", &cr, &err), &err);
    CHECK_INT(fx_settle(e->a, &k), 1);
    sp_due_page due;
    EXPECT_OK(sp_store_scan_due(e->a, NULL, 0, &due, &err), &err);
    bool seen = false;
    for (size_t i = 0; i < due.n; i++)
        if (due.items[i].kind == SP_DUE_OUTBOX && strcmp(due.items[i].key.run_id, k.run_id) == 0) {
            seen = true;
            CHECK(due.items[i].action_id[0] != '\0');
            CHECK_STR(due.items[i].package_digest, fx_package_digest());
        }
    CHECK(seen);
    sp_due_page_free(&due);
}

void store_x05_held_attempts(store_env *e)
{
    sp_run_key k = fx_key("run_x05");
    sp_error err = {0};
    sp_create_run_res cr;
    EXPECT_OK(fx_create(e->a, &k, "x05", &cr, &err), &err);
    CHECK_INT(fx_settle(e->a, &k), 1);
    sp_claim c;
    memset(&c, 0, sizeof c);
    x05_relative_bounds(e, &k, &c);
    x05_scans(e, &k, &c);
    sp_expire_req x = {c.attempt, "expire/x05", SP_EXPIRE_DEADLINE};
    sp_finish_res f;
    EXPECT_OK(sp_store_expire_attempt(e->a, &x, &f, &err), &err);
    sp_held_page held;
    EXPECT_OK(sp_store_scan_held(e->a, NULL, 0, &held, &err), &err);
    CHECK_INT(held.n, 0); /* an expired attempt is no longer held */
    sp_held_page_free(&held);
    sp_claim_free(&c);
    x05_outbox_items(e);
}
