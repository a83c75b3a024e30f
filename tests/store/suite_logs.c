/*
 * suite_logs.c - L01, step logs on every adapter (store.h, ops_logs.c):
 * put_attempt_log keeps an attempt's stdout and stderr tails with the node
 * and attempt number the store holds, a second put replaces the first, an
 * unknown attempt, an oversize tail, bytes that are not UTF-8 and a
 * malformed reference are refused with their codes and write nothing;
 * list_attempt_logs orders entries by their result events (attempts
 * without a result last), filters by node, attempt number and ended
 * attempts, pages with a cursor, refuses a bad one; a put in a batch that
 * is aborted leaves nothing; U+0000 survives the round trip.
 *
 * What it must never do: look at an adapter's tables (API only).
 */
#include "suite_util.h"

static sp_log_tail tail(const char *text, uint64_t dropped)
{
    return (sp_log_tail){text, strlen(text), dropped};
}

static sp_store_rc put(store_env *e, const sp_attempt_ref *ref, const char *out, const char *er,
                       uint64_t dropped, sp_error *err)
{
    sp_log_tail o = tail(out, 0), x = tail(er, dropped);
    return sp_store_put_attempt_log(e->a, ref, &o, &x, err);
}

static sp_attempt_log_list list(store_env *e, const sp_run_key *k, sp_attempt_log_query q)
{
    sp_attempt_log_list l;
    sp_error err = {0};
    EXPECT_OK(sp_store_list_attempt_logs(e->a, k, &q, &l, &err), &err);
    return l;
}

static size_t count(store_env *e, const sp_run_key *k, sp_attempt_log_query q)
{
    sp_attempt_log_list l = list(e, k, q);
    size_t n = l.n;
    sp_attempt_log_list_free(&l);
    return n;
}

/* One attempt's logs as the store keeps them, a replacement, the refusals. */
static void l01_put(store_env *e, const sp_run_key *k, const sp_claim *c)
{
    sp_error err = {0};
    EXPECT_OK(put(e, &c->attempt, "first\n", "warn\n", 0, &err), &err);
    EXPECT_OK(put(e, &c->attempt, "hello\n", "oops\n", 7, &err), &err);
    sp_attempt_log_list l = list(e, k, (sp_attempt_log_query){0});
    CHECK_INT(l.n, 1);
    if (l.n == 1) {
        const sp_attempt_log *it = &l.items[0];
        CHECK_STR(it->attempt_id, c->attempt.attempt_id);
        CHECK_STR(it->invocation_id, c->attempt.invocation_id);
        CHECK_STR(it->node_id, "work");
        CHECK_INT(it->attempt_number, 1);
        CHECK_STR(it->status, "running");
        CHECK(it->result == NULL);
        CHECK_INT(it->result_sequence, 0);
        CHECK_STR(it->out, "hello\n");
        CHECK_STR(it->err, "oops\n");
        CHECK_INT(it->out_dropped, 0);
        CHECK_INT(it->err_dropped, 7);
        CHECK_INT(it->logged_at_ms, 1000);
        CHECK(l.next_cursor != NULL);
    }
    sp_attempt_log_list_free(&l);
    CHECK_INT(count(e, k, (sp_attempt_log_query){.ended_only = true}), 0);

    sp_attempt_ref unknown = c->attempt;
    snprintf(unknown.attempt_id, sizeof unknown.attempt_id, "%s.9", c->attempt.invocation_id);
    EXPECT(put(e, &unknown, "x", "", 0, &err), &err, SP_STORE_NOT_FOUND, "attempt.not-found");
    sp_attempt_ref bad = c->attempt;
    snprintf(bad.attempt_id, sizeof bad.attempt_id, "nonsense");
    EXPECT(put(e, &bad, "x", "", 0, &err), &err, SP_STORE_CONFLICT, "request.invalid");
    char *big = malloc(SP_STORE_LOG_MAX + 2);
    memset(big, 'a', SP_STORE_LOG_MAX + 1);
    big[SP_STORE_LOG_MAX + 1] = '\0';
    EXPECT(put(e, &c->attempt, big, "", 0, &err), &err, SP_STORE_QUOTA, "log.too-large");
    big[SP_STORE_LOG_MAX] = '\0';
    EXPECT_OK(put(e, &c->attempt, big, "", 0, &err), &err); /* exactly the bound */
    free(big);
    EXPECT(put(e, &c->attempt, "ok", "\xff\xfe", 0, &err), &err, SP_STORE_CONFLICT, "log.invalid");
    sp_log_tail nul = {"a\0b", 3, 0}, none = {NULL, 0, 0};
    EXPECT_OK(sp_store_put_attempt_log(e->a, &c->attempt, &nul, &none, &err), &err);
    l = list(e, k, (sp_attempt_log_query){0});
    CHECK(l.n == 1 && l.items[0].out_len == 3 && memcmp(l.items[0].out, "a\0b", 3) == 0 &&
          l.items[0].err_len == 0);
    sp_attempt_log_list_free(&l);
}

/* A failed first attempt, a second one claimed after the backoff. */
static void second_attempt(store_env *e, const sp_run_key *k, const sp_claim *c, sp_claim *c2)
{
    sp_error err = {0};
    sp_finish_res fr;
    EXPECT_OK(fx_finish(e->a, &c->attempt, "failure", &fr, &err), &err);
    CHECK(fx_settle(e->a, k) >= 1);
    manual_clock_set(&e->clock, 2000);
    EXPECT_OK(fx_claim(e->a, k, c->attempt.invocation_id, "w1", 10000, "2", c2, &err), &err);
    EXPECT_OK(put(e, &c2->attempt, "second\n", "", 0, &err), &err);
}

/* Order, filters, pages and cursors over two attempts. */
static void l01_list(store_env *e, const sp_run_key *k, const sp_claim *c, const sp_claim *c2)
{
    sp_attempt_log_list l = list(e, k, (sp_attempt_log_query){0});
    CHECK_INT(l.n, 2);
    if (l.n == 2) {
        CHECK_STR(l.items[0].attempt_id, c->attempt.attempt_id); /* ended first */
        CHECK_STR(l.items[0].status, "finished");
        CHECK(l.items[0].result != NULL && strstr(l.items[0].result, "\"failure\"") != NULL);
        CHECK(l.items[0].result_sequence > 0);
        CHECK_STR(l.items[1].attempt_id, c2->attempt.attempt_id); /* no result yet */
        CHECK_INT(l.items[1].attempt_number, 2);
        CHECK_STR(l.items[1].out, "second\n");
    }
    sp_attempt_log_list_free(&l);
    CHECK_INT(count(e, k, (sp_attempt_log_query){.attempt_number = 2}), 1);
    CHECK_INT(count(e, k, (sp_attempt_log_query){.node_id = "work"}), 2);
    CHECK_INT(count(e, k, (sp_attempt_log_query){.node_id = "nope"}), 0);
    CHECK_INT(count(e, k, (sp_attempt_log_query){.ended_only = true}), 1);
    sp_attempt_log_list p1 = list(e, k, (sp_attempt_log_query){.limit = 1});
    CHECK_INT(p1.n, 1);
    sp_attempt_log_list p2 = list(e, k, (sp_attempt_log_query){.limit = 1, .cursor = p1.next_cursor});
    CHECK(p2.n == 1 && strcmp(p2.items[0].attempt_id, c2->attempt.attempt_id) == 0);
    CHECK_INT(count(e, k, (sp_attempt_log_query){.cursor = p2.next_cursor}), 0);
    /* following ended attempts: past the first, nothing until the second ends */
    CHECK_INT(count(e, k, (sp_attempt_log_query){.ended_only = true, .cursor = p1.next_cursor}), 0);
    sp_attempt_log_list_free(&p1);
    sp_attempt_log_list_free(&p2);
    sp_attempt_log_list bad;
    sp_error err = {0};
    sp_attempt_log_query q = {.cursor = "[\"x\",\"y\"]"};
    EXPECT(sp_store_list_attempt_logs(e->a, k, &q, &bad, &err), &err, SP_STORE_CONFLICT,
           "cursor.invalid");
    q.cursor = "{}";
    EXPECT(sp_store_list_attempt_logs(e->a, k, &q, &bad, &err), &err, SP_STORE_CONFLICT,
           "cursor.invalid");
}

/* In a batch that is aborted, a put leaves nothing; one that commits stays. */
static void l01_batch(store_env *e, const sp_run_key *k, const sp_claim *c2)
{
    sp_error err = {0};
    EXPECT_OK(sp_store_batch_begin(e->a, &err), &err);
    EXPECT_OK(put(e, &c2->attempt, "in a batch\n", "", 0, &err), &err);
    sp_store_batch_abort(e->a);
    sp_attempt_log_list l = list(e, k, (sp_attempt_log_query){.attempt_number = 2});
    CHECK(l.n == 1 && strcmp(l.items[0].out, "second\n") == 0);
    sp_attempt_log_list_free(&l);
    EXPECT_OK(sp_store_batch_begin(e->a, &err), &err);
    EXPECT_OK(put(e, &c2->attempt, "in a batch\n", "", 0, &err), &err);
    sp_finish_res fr;
    EXPECT_OK(fx_finish(e->a, &c2->attempt, "success", &fr, &err), &err);
    EXPECT_OK(sp_store_batch_commit(e->a, &err), &err);
    l = list(e, k, (sp_attempt_log_query){.ended_only = true});
    CHECK(l.n == 2 && strcmp(l.items[1].out, "in a batch\n") == 0 &&
          l.items[1].result_sequence > l.items[0].result_sequence);
    sp_attempt_log_list_free(&l);
}

void store_l01_logs(store_env *e)
{
    sp_run_key k = fx_key("run_l01");
    sp_claim c, c2;
    drive_to_claim(e, &k, "w1", 10000, &c);
    l01_put(e, &k, &c);
    second_attempt(e, &k, &c, &c2);
    l01_list(e, &k, &c, &c2);
    l01_batch(e, &k, &c2);
    sp_claim_free(&c);
    sp_claim_free(&c2);
}
