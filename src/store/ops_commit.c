/*
 * ops_commit.c - commit_turn (store.md §3): consume the pending event and
 * store the kernel's decision atomically (invariant I1).
 *
 * Predicates, in order: run exists (not-found/run.not-found); not quarantined
 * (stale/run.quarantined); revision matches (stale/revision.mismatch); the
 * event at applied+1 has that ID and sequence (stale/event.mismatch);
 * snapshot digest (conflict/snapshot.digest-mismatch); snapshot <= 256 KiB,
 * 8 MiB for a spore.state/0.2 one (quota/snapshot.too-large); no command ID already in the run or repeated
 * (conflict/command.id-conflict); then per command, in order: known kind
 * (incompatible/command.unknown-kind), payload decodes (conflict/
 * command.invalid), activity.schedule on an existing invocation (conflict/
 * invocation.exists), activity.retry on a missing, non-settled or
 * wrong-attempt invocation (conflict/invocation.retry-invalid),
 * activity.cancel of a missing invocation (conflict/
 * invocation.cancel-invalid), timer.start of a stored timer (conflict/
 * timer.exists; ops_timers.c); diagnostics details are canonical JSON
 * (conflict/diagnostic.invalid).
 *
 * Writes: the transition record (diagnostics as a canonical JSON array
 * [{code, details, nodeId}, ...]), the run (revision+1, applied sequence,
 * snapshot, status), the event's consuming revision, each command, the
 * invocations the commands authorize or cancel, and the timers they start
 * or cancel.
 *
 * What it must never do: write part of a decision, or let a command ID name
 * different arguments (I3).
 */
#include <stdlib.h>

#include "json/decimal.h"
#include "json/json.h"
#include "store/logic.h"

/* ---- predicates on the run ---- */

/* What commit_turn reads with the lock (turn_extra_read, below), in this
 * order: the ID of the run's next event to apply (NULL: none pending); then,
 * when it could be named, the first command's ID check (lookup_command's
 * three columns) and the command ID and target it checked. */
enum { EXTRA_EVENT, EXTRA_TAKEN, EXTRA_COMMAND = 4, EXTRA_TARGET, EXTRA_COLS };

static sp_store_rc check_event(lg_mut *m, const sp_commit_turn_req *req, sp_error *err)
{
    const sp_db_rows *pending = &m->extra; /* turn_extra_read's */
    const char *event_id = pending->nrows == 1 ? lg_text(pending, 0, EXTRA_EVENT) : NULL;
    if (event_id && req->event_sequence == lg_run_u64(m, RUN_APPLIED) + 1 &&
        strcmp(event_id, req->event_id) == 0)
        return SP_STORE_OK;
    return lg_fail(err, SP_STORE_STALE, "event.mismatch",
                   "the pending event is not %s at sequence %llu", req->event_id,
                   (unsigned long long)req->event_sequence);
}

static sp_store_rc check_run(lg_mut *m, const sp_commit_turn_req *req, sp_error *err)
{
    sp_store_rc rc = lg_need_run(m, err);
    if (!rc)
        rc = lg_need_unquarantined(m, err);
    if (!rc)
        rc = lg_need_revision(m, req->expected_revision, err);
    return rc ? rc : check_event(m, req, err);
}

/* The cap of this snapshot: canonical JSON sorts its keys, and only a
 * spore.state/0.2 state has "branches", the member after "activations". */
static size_t snapshot_cap(const char *s, size_t len)
{
    static const char head[] = "{\"activations\":", next[] = ",\"branches\":";
    size_t i = sizeof head - 1;
    if (len < i || memcmp(s, head, i) != 0)
        return SP_STORE_SNAPSHOT_MAX;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++;
    bool v02 = len - i >= sizeof next - 1 && memcmp(s + i, next, sizeof next - 1) == 0;
    return v02 ? SP_STORE_SNAPSHOT_MAX_02 : SP_STORE_SNAPSHOT_MAX;
}

static sp_store_rc check_snapshot(const sp_commit_turn_req *req, sp_error *err)
{
    if (!req->snapshot_digest_computed) {
        char digest[SP_DIGEST_TEXT_LEN + 1];
        sp_digest_one("state", req->snapshot, req->snapshot_len, digest);
        if (strcmp(digest, req->snapshot_digest) != 0)
            return lg_fail(err, SP_STORE_CONFLICT, "snapshot.digest-mismatch",
                           "snapshot digest %s does not match the snapshot (%s)",
                           req->snapshot_digest, digest);
    }
    size_t cap = snapshot_cap(req->snapshot, req->snapshot_len);
    if (req->snapshot_len > cap)
        return lg_fail(err, SP_STORE_QUOTA, "snapshot.too-large",
                       "snapshot is larger than %zu bytes", cap);
    return SP_STORE_OK;
}

/* A decision's command as the commit reads it: its payload parsed once
 * (NULL: not canonical JSON, refused when its turn comes) and the
 * invocation it names, when it names one. */
typedef struct command_in {
    json_t *payload;
    const char *target;
} command_in;

/* What the run holds of the invocation a command names, read with the
 * command's ID check: one statement for both. */
typedef struct known_invocation {
    bool found;
    char status[16];
    uint64_t attempt_number;
} known_invocation;

/* A command's ID check: is the ID taken, and what the run holds of the
 * invocation it names (NULL: none). */
#define COMMAND_CHECK_COLS                                                                         \
    "(SELECT 1 FROM commands WHERE tenant = ? AND run_id = ? AND command_id = ?), i.status,"      \
    " i.attempt_number"
#define COMMAND_CHECK_FROM                                                                         \
    " FROM (SELECT 1 AS one) d LEFT JOIN invocations i"                                           \
    " ON i.tenant = ? AND i.run_id = ? AND i.invocation_id = ?"

/* The check's three columns from `col` of `rows`' one row. */
static void command_checked(const sp_db_rows *rows, size_t col, bool *taken,
                            known_invocation *inv)
{
    *taken = sp_db_cell(rows, 0, col)->type != SP_DB_NULL;
    inv->found = lg_text(rows, 0, col + 1) != NULL;
    lg_copy(inv->status, sizeof inv->status, rows, 0, col + 1);
    inv->attempt_number = lg_u64(rows, 0, col + 2);
}

/* The check of this command made with the lock (turn_extra_read). */
static bool checked_with_lock(const lg_mut *m, const char *command_id, const char *target,
                              bool *taken, known_invocation *inv)
{
    const sp_db_rows *x = &m->extra;
    if (x->nrows != 1 || x->ncols != EXTRA_COLS || !lg_text(x, 0, EXTRA_COMMAND) ||
        !lg_text(x, 0, EXTRA_TARGET) || strcmp(lg_text(x, 0, EXTRA_COMMAND), command_id) != 0 ||
        strcmp(lg_text(x, 0, EXTRA_TARGET), target ? target : "") != 0)
        return false;
    command_checked(x, EXTRA_TAKEN, taken, inv);
    return true;
}

static sp_store_rc lookup_command(lg_mut *m, const char *command_id, const char *target,
                                  bool *taken, known_invocation *inv, sp_error *err)
{
    if (checked_with_lock(m, command_id, target, taken, inv))
        return SP_STORE_OK;
    sp_db_rows rows;
    const char *t = m->key->tenant, *r = m->key->run_id;
    sp_store_rc rc = LG_Q(m->s, &rows, err, "SELECT " COMMAND_CHECK_COLS COMMAND_CHECK_FROM,
                          DB_TEXT(t), DB_TEXT(r), DB_TEXT(command_id), DB_TEXT(t), DB_TEXT(r),
                          DB_TEXT(target ? target : ""));
    if (rc == SP_STORE_OK && rows.nrows == 1)
        command_checked(&rows, 0, taken, inv);
    sp_db_rows_free(&rows);
    return rc;
}

static bool guarded_by_keys(const sp_command_rec *c);

/* keys_guard (settle_attempt's own decision, by the engine's kernel, whose
 * command and invocation IDs derive from the run and a new activation): a
 * command that needs no invocation's state is not looked up first; the
 * primary keys of commands and invocations refuse a repeat
 * (conflict/store.constraint), and the engine then records the result alone
 * and leaves the decision to commit_turn, which looks everything up. One read
 * less a step: on PostgreSQL one exchange. */
static sp_store_rc check_command_ids(lg_mut *m, const sp_commit_turn_req *req,
                                     const command_in *in, known_invocation *known,
                                     bool keys_guard, sp_error *err)
{
    sp_store_rc rc = SP_STORE_OK;
    for (size_t i = 0; i < req->ncommands && rc == SP_STORE_OK; i++) {
        const char *id = req->commands[i].command_id;
        for (size_t j = 0; j < i; j++)
            if (strcmp(req->commands[j].command_id, id) == 0)
                return lg_fail(err, SP_STORE_CONFLICT, "command.id-conflict",
                               "command %s is repeated", id);
        if (keys_guard && guarded_by_keys(&req->commands[i]))
            continue; /* known[i]: not found */
        bool taken = false;
        rc = lookup_command(m, id, in[i].target, &taken, &known[i], err);
        if (rc == SP_STORE_OK && taken)
            rc = lg_fail(err, SP_STORE_CONFLICT, "command.id-conflict",
                         "command %s already exists in the run", id);
    }
    return rc;
}

/* ---- commands ---- */

typedef struct command_args {
    const char *invocation_id, *activation_id, *node_id, *action_id, *effect_key;
    const json_t *input;
    json_int_t attempt;
    uint64_t not_before_ms;
} command_args;

static const char *str_member(const json_t *o, const char *name, size_t max)
{
    const char *s = lg_get_str(o, name);
    return s && *s && strlen(s) <= max ? s : NULL;
}

/* activity.schedule: {actionId, activationId, attempt: 1, effectKey, input,
 * invocationId, nodeId, notBeforeMs}; activity.retry: {attempt: n >= 2,
 * invocationId, notBeforeMs}. Exactly these members. */
static bool decode_args(const json_t *p, bool schedule, command_args *a)
{
    a->invocation_id = str_member(p, "invocationId", SP_ID_LEN);
    a->attempt = json_integer_value(json_object_get(p, "attempt"));
    bool ok = json_is_object(p) && json_object_size(p) == (schedule ? 8u : 3u) &&
              a->invocation_id && json_is_integer(json_object_get(p, "attempt")) &&
              lg_get_u63(p, "notBeforeMs", &a->not_before_ms);
    if (!ok || !schedule)
        return ok && a->attempt >= 2 && a->attempt <= (json_int_t)UINT32_MAX &&
               a->not_before_ms <= SP_U63_MAX;
    a->activation_id = str_member(p, "activationId", SP_STORE_ID_MAX);
    a->node_id = str_member(p, "nodeId", SP_STORE_ID_MAX);
    a->action_id = str_member(p, "actionId", SP_STORE_ID_MAX);
    a->effect_key = str_member(p, "effectKey", SP_STORE_ID_MAX);
    a->input = json_object_get(p, "input");
    return a->attempt == 1 && a->activation_id && a->node_id && a->action_id && a->effect_key &&
           a->input && a->not_before_ms <= SP_U63_MAX;
}

/* The invocation a command names, as it stands now: what the ID check read,
 * unless an earlier command of the same decision touched the invocation
 * since (then it is read again). */
static sp_store_rc invocation_now(lg_mut *m, const char *invocation_id, const known_invocation *k,
                                  known_invocation *out, sp_error *err)
{
    if (k) {
        *out = *k;
        return SP_STORE_OK;
    }
    bool taken;
    return lookup_command(m, "", invocation_id, &taken, out, err);
}

/* The invocation an activity.schedule authorizes: pending, or running with
 * its first attempt when the decision's caller claims it at once. */
static sp_store_rc insert_invocation(lg_mut *m, const command_args *a, sp_error *err)
{
    size_t len = 0;
    char *input = NULL;
    sp_store_rc rc = lg_encode(a->input, &input, &len, "command input", err);
    if (rc)
        return rc;
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("body", input, len, digest);
    bool claim = lg_claim_wanted(m, a->invocation_id, a->not_before_ms);
    rc = LG_Q(m->s, NULL, err,
              "INSERT INTO invocations (tenant, run_id, invocation_id, node_id,"
              " action_id, effect_key, input, input_digest, status, attempt_number,"
              " not_before_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
              DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id), DB_TEXT(a->invocation_id),
              DB_TEXT(a->node_id), DB_TEXT(a->action_id), DB_TEXT(a->effect_key),
              DB_TEXTN(input, len), DB_TEXT(digest), DB_TEXT(claim ? "running" : "pending"),
              DB_INT(a->not_before_ms));
    if (rc == SP_STORE_OK && claim) {
        lg_invocation inv = {a->invocation_id, a->node_id, a->action_id, a->effect_key,
                             input, len, digest, 1};
        rc = lg_claim_inserted(m, &inv, err);
    } else if (rc == SP_STORE_OK) {
        rc = lg_announce_work(m->s, "invocations", err);
    }
    free(input);
    return rc;
}

static sp_store_rc apply_schedule(lg_mut *m, const command_args *a, const known_invocation *k,
                                  sp_error *err)
{
    known_invocation inv;
    sp_store_rc rc = invocation_now(m, a->invocation_id, k, &inv, err);
    if (rc == SP_STORE_OK && inv.found)
        rc = lg_fail(err, SP_STORE_CONFLICT, "invocation.exists", "invocation %s already exists",
                     a->invocation_id);
    return rc ? rc : insert_invocation(m, a, err);
}

static sp_store_rc apply_retry(lg_mut *m, const command_args *a, const known_invocation *k,
                               sp_error *err)
{
    known_invocation inv;
    sp_store_rc rc = invocation_now(m, a->invocation_id, k, &inv, err);
    if (rc == SP_STORE_OK && (!inv.found || strcmp(inv.status, "settled") != 0 ||
                              (json_int_t)inv.attempt_number + 1 != a->attempt))
        rc = lg_fail(err, SP_STORE_CONFLICT, "invocation.retry-invalid",
                     "invocation %s cannot be retried as attempt %lld", a->invocation_id,
                     (long long)a->attempt);
    if (rc == SP_STORE_OK)
        rc = LG_W1(m->s, err,
                   "UPDATE invocations SET status = 'pending', attempt_number = ?,"
                   " not_before_ms = ? WHERE tenant = ? AND run_id = ? AND invocation_id = ?",
                   DB_INT(a->attempt), DB_INT(a->not_before_ms), DB_TEXT(m->key->tenant),
                   DB_TEXT(m->key->run_id), DB_TEXT(a->invocation_id));
    if (rc == SP_STORE_OK)
        rc = lg_claim_wanted(m, a->invocation_id, a->not_before_ms)
                 ? lg_claim_retried(m, a->invocation_id, err)
                 : lg_announce_work(m->s, "invocations", err);
    return rc;
}

static sp_store_rc decode_and_apply(lg_mut *m, const json_t *payload, bool schedule,
                                    const known_invocation *k, sp_error *err)
{
    command_args a = {0};
    if (!decode_args(payload, schedule, &a))
        return lg_fail(err, SP_STORE_CONFLICT, "command.invalid", "invalid activity.%s payload",
                       schedule ? "schedule" : "retry");
    return schedule ? apply_schedule(m, &a, k, err) : apply_retry(m, &a, k, err);
}

static sp_store_rc schedule_command(lg_mut *m, const json_t *payload, const known_invocation *k,
                                    sp_error *err)
{
    return decode_and_apply(m, payload, true, k, err);
}

static sp_store_rc retry_command(lg_mut *m, const json_t *payload, const known_invocation *k,
                                 sp_error *err)
{
    return decode_and_apply(m, payload, false, k, err);
}

/* activity.cancel {invocationId} (format 0.2): the invocation is settled, so
 * no attempt of it is claimed again, and a running attempt loses its lease
 * now: its owner learns it at its next heartbeat and stops it, and its
 * result, should one come, is late evidence. Cancelling a settled
 * invocation changes nothing. */
static sp_store_rc cancel_command(lg_mut *m, const json_t *payload, const known_invocation *k,
                                  sp_error *err)
{
    const char *invocation_id = str_member(payload, "invocationId", SP_ID_LEN);
    if (!json_is_object(payload) || json_object_size(payload) != 1 || !invocation_id)
        return lg_fail(err, SP_STORE_CONFLICT, "command.invalid", "invalid activity.cancel payload");
    known_invocation inv;
    sp_store_rc rc = invocation_now(m, invocation_id, k, &inv, err);
    if (rc == SP_STORE_OK && !inv.found)
        rc = lg_fail(err, SP_STORE_CONFLICT, "invocation.cancel-invalid",
                     "invocation %s does not exist", invocation_id);
    if (rc == SP_STORE_OK)
        rc = LG_Q(m->s, NULL, err,
                  "UPDATE invocations SET status = 'settled'"
                  " WHERE tenant = ? AND run_id = ? AND invocation_id = ?",
                  DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id), DB_TEXT(invocation_id));
    if (rc == SP_STORE_OK)
        rc = LG_Q(m->s, NULL, err,
                  "UPDATE attempts SET lease_until_ms = ? WHERE tenant = ? AND run_id = ?"
                  " AND invocation_id = ? AND status = 'running' AND lease_until_ms > ?",
                  DB_INT(m->now), DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id),
                  DB_TEXT(invocation_id), DB_INT(m->now));
    return rc;
}

static sp_store_rc timer_start(lg_mut *m, const json_t *payload, const known_invocation *k,
                               sp_error *err)
{
    (void)k;
    return lg_timer_start(m, payload, err);
}

static sp_store_rc timer_cancel(lg_mut *m, const json_t *payload, const known_invocation *k,
                                sp_error *err)
{
    (void)k;
    return lg_timer_cancel(m, payload, err);
}

/* Every command kind a decision may carry, with what committing it writes;
 * `names` says the payload's invocationId is the invocation it acts on. */
static const struct command_kind {
    const char *kind;
    bool names;
    bool reads_state; /* applying it needs the invocation's status (see check_command_ids) */
    sp_store_rc (*apply)(lg_mut *m, const json_t *payload, const known_invocation *k,
                         sp_error *err);
} COMMAND_KINDS[] = {
    {"activity.schedule", true, false, schedule_command},
    {"activity.retry", true, true, retry_command},
    {"activity.cancel", true, true, cancel_command},
    {"timer.start", false, false, timer_start},
    {"timer.cancel", false, false, timer_cancel},
};

static const struct command_kind *kind_of(const char *kind)
{
    for (size_t i = 0; i < sizeof COMMAND_KINDS / sizeof COMMAND_KINDS[0]; i++)
        if (strcmp(kind, COMMAND_KINDS[i].kind) == 0)
            return &COMMAND_KINDS[i];
    return NULL;
}

static bool guarded_by_keys(const sp_command_rec *c)
{
    const struct command_kind *k = kind_of(c->kind);
    return k && !k->reads_state;
}

/* Parse a command's payload once (NULL when it is not canonical JSON). */
static command_in read_command(const sp_command_rec *c)
{
    sp_error perr = {0};
    command_in in = {c->payload_value ? json_incref((json_t *)c->payload_value)
                                      : sp_json_parse_canonical(c->payload, c->payload_len, &perr),
                     NULL};
    sp_error_clear(&perr);
    const struct command_kind *k = kind_of(c->kind);
    if (in.payload && k && k->names)
        in.target = str_member(in.payload, "invocationId", SP_ID_LEN);
    return in;
}

static sp_store_rc apply_command(lg_mut *m, const sp_command_rec *c, const command_in *in,
                                 const known_invocation *k, sp_error *err)
{
    const struct command_kind *kind = kind_of(c->kind);
    if (!kind)
        return lg_fail(err, SP_STORE_INCOMPATIBLE, "command.unknown-kind",
                       "unknown command kind %s", c->kind);
    if (!in->payload)
        return lg_fail(err, SP_STORE_CONFLICT, "command.invalid",
                       "command %s has a payload that is not canonical JSON", c->command_id);
    return kind->apply(m, in->payload, k, err);
}

static sp_store_rc insert_command(lg_mut *m, const sp_command_rec *c, size_t ordinal,
                                  uint64_t revision, sp_error *err)
{
    return LG_Q(m->s, NULL, err,
                "INSERT INTO commands (tenant, run_id, command_id, revision, ordinal,"
                " activation_id, kind, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id), DB_TEXT(c->command_id),
                DB_INT(revision), DB_INT(ordinal), DB_TEXT(c->activation_id), DB_TEXT(c->kind),
                DB_TEXTN(c->payload, c->payload_len));
}

/* ---- diagnostics ---- */

static sp_store_rc diagnostic_json(const sp_diagnostic_rec *d, json_t *array, sp_error *err)
{
    sp_error perr = {0};
    json_t *details = sp_json_parse_canonical(d->details, d->details_len, &perr);
    sp_error_clear(&perr);
    if (!details)
        return lg_fail(err, SP_STORE_CONFLICT, "diagnostic.invalid",
                       "diagnostic %s details are not canonical JSON", d->code);
    json_t *item = NULL;
    sp_store_rc rc = lg_pack(&item, err, "{s:s, s:o, s:s?}", "code", d->code, "details", details,
                             "nodeId", d->node_id);
    if (rc == SP_STORE_OK && json_array_append_new(array, item))
        rc = lg_encode_fail(err, true, "diagnostics");
    return rc;
}

/* The canonical diagnostics array (caller frees). */
static sp_store_rc diagnostics_text(const sp_commit_turn_req *req, char **out, size_t *len,
                                    sp_error *err)
{
    json_t *array = json_array();
    sp_store_rc rc = array ? SP_STORE_OK : lg_encode_fail(err, true, "diagnostics");
    for (size_t i = 0; i < req->ndiagnostics && rc == SP_STORE_OK; i++)
        rc = diagnostic_json(&req->diagnostics[i], array, err);
    if (rc == SP_STORE_OK)
        rc = lg_encode(array, out, len, "diagnostics", err);
    json_decref(array);
    return rc;
}

/* ---- writes ---- */

void lg_run_turned(lg_mut *m, uint64_t revision, uint64_t applied, const char *snapshot,
                   size_t snapshot_len, const char *snapshot_digest, const char *status)
{
    lg_run_delta *d = &m->delta;
    d->turn = true;
    d->revision = revision;
    d->applied_sequence = applied;
    d->snapshot = snapshot;
    d->snapshot_len = snapshot_len;
    d->snapshot_digest = snapshot_digest;
    d->status = status;
}

static sp_store_rc write_transition(lg_mut *m, const sp_commit_turn_req *req, uint64_t revision,
                                    bool event_consumed, sp_error *err)
{
    char *diagnostics = NULL;
    size_t len = 0;
    sp_store_rc rc = diagnostics_text(req, &diagnostics, &len, err);
    if (rc == SP_STORE_OK)
        rc = LG_Q(m->s, NULL, err,
                  "INSERT INTO transitions (tenant, run_id, revision, consumed_sequence,"
                  " decision_digest, snapshot_digest, diagnostics, committed_at_ms)"
                  " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                  DB_TEXT(req->key.tenant), DB_TEXT(req->key.run_id), DB_INT(revision),
                  DB_INT(req->event_sequence), DB_TEXT(req->decision_digest),
                  DB_TEXT(req->snapshot_digest), DB_TEXTN(diagnostics, len), DB_INT(m->now));
    free(diagnostics);
    if (rc == SP_STORE_OK && !event_consumed)
        rc = LG_W1(m->s, err,
                   "UPDATE events SET consumed_revision = ?"
                   " WHERE tenant = ? AND run_id = ? AND sequence = ?",
                   DB_INT(revision), DB_TEXT(req->key.tenant), DB_TEXT(req->key.run_id),
                   DB_INT(req->event_sequence));
    if (rc == SP_STORE_OK)
        lg_run_turned(m, revision, req->event_sequence, req->snapshot, req->snapshot_len,
                      req->snapshot_digest, req->status);
    return rc;
}

/* What the ID check read of command i's invocation: stale once an earlier
 * command of the decision acted on the same invocation (NULL: read it). */
static const known_invocation *still_known(const command_in *in, const known_invocation *known,
                                           size_t i)
{
    for (size_t j = 0; in[i].target && j < i; j++)
        if (in[j].target && strcmp(in[j].target, in[i].target) == 0)
            return NULL;
    return &known[i];
}

static sp_store_rc commit_commands(lg_mut *m, const sp_commit_turn_req *req, bool own_decision,
                                   command_in *in, known_invocation *known, sp_error *err)
{
    uint64_t revision = req->expected_revision + 1;
    sp_store_rc rc = check_command_ids(m, req, in, known, own_decision, err);
    if (rc == SP_STORE_OK)
        rc = write_transition(m, req, revision, own_decision, err);
    for (size_t i = 0; i < req->ncommands && rc == SP_STORE_OK; i++) {
        rc = apply_command(m, &req->commands[i], &in[i], still_known(in, known, i), err);
        if (rc == SP_STORE_OK)
            rc = insert_command(m, &req->commands[i], i + 1, revision, err);
    }
    return rc;
}

sp_store_rc lg_commit_decision(lg_mut *m, const sp_commit_turn_req *req, bool own_decision,
                               sp_error *err)
{
    sp_store_rc rc = check_snapshot(req, err);
    if (rc)
        return rc;
    size_t n = req->ncommands;
    command_in *in = calloc(n + 1, sizeof *in);
    known_invocation *known = calloc(n + 1, sizeof *known);
    if (!in || !known)
        rc = lg_encode_fail(err, true, "commands");
    for (size_t i = 0; i < n && rc == SP_STORE_OK; i++)
        in[i] = read_command(&req->commands[i]);
    if (rc == SP_STORE_OK)
        rc = commit_commands(m, req, own_decision, in, known, err);
    for (size_t i = 0; in && i < n; i++)
        json_decref(in[i].payload);
    free(in);
    free(known);
    return rc;
}

static sp_store_rc commit_apply(lg_mut *m, const void *r, sp_error *err)
{
    const sp_commit_turn_req *req = r;
    sp_store_rc rc = check_run(m, req, err);
    if (rc == SP_STORE_OK)
        rc = lg_commit_decision(m, req, false, err);
    if (rc == SP_STORE_OK)
        m->value = lg_committed_value(&req->key, req->expected_revision + 1, req->event_sequence,
                                      req->decision_digest);
    return rc;
}

/* ---- the request ---- */

static sp_store_rc check_records(const sp_commit_turn_req *req, sp_error *err)
{
    if (req->ncommands > SP_STORE_COMMANDS_MAX || req->ndiagnostics > SP_STORE_DIAGNOSTICS_MAX ||
        (req->ncommands && !req->commands) || (req->ndiagnostics && !req->diagnostics))
        return lg_invalid(err, "too many commands or diagnostics");
    sp_store_rc rc = SP_STORE_OK;
    for (size_t i = 0; i < req->ncommands && !rc; i++) {
        const sp_command_rec *c = &req->commands[i];
        rc = lg_check_text("command ID", c->command_id, SP_STORE_ID_MAX, err);
        if (!rc)
            rc = lg_check_text("activation ID", c->activation_id, SP_STORE_ID_MAX, err);
        if (!rc)
            rc = lg_check_text("command kind", c->kind, SP_STORE_ID_MAX, err);
        if (!rc && (!c->payload || c->payload_len > SP_STORE_SNAPSHOT_MAX))
            rc = lg_invalid(err, "command payload is missing or larger than %u bytes",
                            SP_STORE_SNAPSHOT_MAX);
    }
    for (size_t i = 0; i < req->ndiagnostics && !rc; i++) {
        const sp_diagnostic_rec *d = &req->diagnostics[i];
        rc = lg_check_text("diagnostic code", d->code, SP_CODE_MAX, err);
        if (!rc && d->node_id)
            rc = lg_check_text("diagnostic node ID", d->node_id, SP_STORE_ID_MAX, err);
        if (!rc && (!d->details || d->details_len > SP_STORE_EVENT_MAX))
            rc = lg_invalid(err, "diagnostic details are missing or larger than %u bytes",
                            SP_STORE_EVENT_MAX);
    }
    return rc;
}

static sp_store_rc commit_validate(const sp_commit_turn_req *req, sp_error *err)
{
    sp_store_rc rc = lg_check_key(&req->key, err);
    if (!rc)
        rc = lg_check_text("request ID", req->request_id, SP_STORE_REQUEST_ID_MAX, err);
    if (!rc)
        rc = lg_check_text("event ID", req->event_id, SP_STORE_ID_MAX, err);
    return rc ? rc : lg_check_decision(req, err);
}

sp_store_rc lg_check_decision(const sp_commit_turn_req *req, sp_error *err)
{
    sp_store_rc rc = lg_check_digest("decision digest", req->decision_digest, err);
    if (!rc)
        rc = lg_check_digest("snapshot digest", req->snapshot_digest, err);
    if (!rc)
        rc = lg_check_text("status", req->status, LG_STATUS_MAX, err);
    if (!rc && !req->snapshot)
        rc = lg_invalid(err, "snapshot is required");
    if (!rc && (req->expected_revision >= SP_U63_MAX || req->event_sequence > SP_U63_MAX))
        rc = lg_invalid(err, "expected revision or event sequence out of range");
    return rc ? rc : check_records(req, err);
}

static sp_store_rc digest_lists(const sp_commit_turn_req *req, json_t **commands,
                                json_t **diagnostics, sp_error *err)
{
    *commands = json_array();
    *diagnostics = json_array();
    sp_store_rc rc = *commands && *diagnostics ? SP_STORE_OK : lg_encode_fail(err, true, "request");
    char d[SP_DIGEST_TEXT_LEN + 1];
    for (size_t i = 0; i < req->ncommands && !rc; i++) {
        const sp_command_rec *c = &req->commands[i];
        json_t *item = NULL;
        sp_digest_one("body", c->payload, c->payload_len, d);
        rc = lg_pack(&item, err, "[s s s s]", c->command_id, c->activation_id, c->kind, d);
        if (!rc && json_array_append_new(*commands, item))
            rc = lg_encode_fail(err, true, "request");
    }
    for (size_t i = 0; i < req->ndiagnostics && !rc; i++) {
        const sp_diagnostic_rec *g = &req->diagnostics[i];
        json_t *item = NULL;
        sp_digest_one("body", g->details, g->details_len, d);
        rc = lg_pack(&item, err, "[s s? s]", g->code, g->node_id, d);
        if (!rc && json_array_append_new(*diagnostics, item))
            rc = lg_encode_fail(err, true, "request");
    }
    return rc;
}

static sp_store_rc commit_body(const sp_commit_turn_req *req, json_t **body, sp_error *err)
{
    json_t *commands = NULL, *diagnostics = NULL;
    sp_store_rc rc = digest_lists(req, &commands, &diagnostics, err);
    if (rc) {
        json_decref(commands);
        json_decref(diagnostics);
        return rc;
    }
    return lg_pack(body, err, "[s s o s o s s s o o]", req->key.tenant, req->key.run_id,
                   lg_u63_json(req->expected_revision), req->event_id,
                   lg_u63_json(req->event_sequence), req->decision_digest, req->snapshot_digest,
                   req->status, commands, diagnostics);
}

/* The first command's target, when the caller gave its payload's value (the
 * engine's kernel does): "" for a command that names no invocation; NULL
 * when it cannot be told without parsing. */
static const char *first_target(const sp_commit_turn_req *req)
{
    const sp_command_rec *c = req->ncommands ? &req->commands[0] : NULL;
    const struct command_kind *k = c ? kind_of(c->kind) : NULL;
    if (!k || !c->payload_value)
        return NULL;
    const char *target = k->names ? str_member(c->payload_value, "invocationId", SP_ID_LEN) : "";
    return target ? target : "";
}

#define NEXT_EVENT_SQL                                                                             \
    "(SELECT event_id FROM events WHERE tenant = ? AND run_id = ?"                                \
    " AND sequence = (SELECT applied_sequence + 1 FROM runs WHERE tenant = ? AND run_id = ?))"

/* The run's next event to apply, and the first command's ID check, read
 * with the lock (lg_op.extra_read: after the lock, so they see the run as
 * locked): a turn's one exchange before its writes (EXTRA_* columns). */
static void turn_extra_read(const void *r, sp_db_read *read, sp_db_val *params)
{
    const sp_commit_turn_req *req = r;
    const char *t = req->key.tenant, *run = req->key.run_id, *target = first_target(req);
    params[0] = DB_TEXT(t), params[1] = DB_TEXT(run), params[2] = DB_TEXT(t);
    params[3] = DB_TEXT(run);
    if (!target) {
        *read = (sp_db_read){"SELECT " NEXT_EVENT_SQL, params, 4};
        return;
    }
    const char *id = req->commands[0].command_id;
    params[4] = DB_TEXT(t), params[5] = DB_TEXT(run), params[6] = DB_TEXT(id);
    params[7] = DB_TEXT(id), params[8] = DB_TEXT(target);
    params[9] = DB_TEXT(t), params[10] = DB_TEXT(run), params[11] = DB_TEXT(target);
    *read = (sp_db_read){"SELECT " NEXT_EVENT_SQL ", " COMMAND_CHECK_COLS ", ?, ?"
                         COMMAND_CHECK_FROM,
                         params, 12};
}

static bool commit_skips_busy(const void *req)
{
    return ((const sp_commit_turn_req *)req)->skip_busy;
}

static const lg_op COMMIT_TURN = {"commit_turn",       "commit-turn",   commit_apply,
                                  lg_committed_decode, NULL,            turn_extra_read,
                                  LG_PREDICT_NONE,     commit_skips_busy};

sp_store_rc sp_store_commit_turn(sp_store *s, const sp_commit_turn_req *req,
                                 sp_commit_turn_res *res, sp_error *err)
{
    memset(res, 0, sizeof *res);
    json_t *body = NULL;
    sp_store_rc rc = commit_validate(req, err);
    if (!rc)
        rc = commit_body(req, &body, err);
    if (rc)
        return rc;
    return lg_mutate(s, &COMMIT_TURN, &req->key, req->request_id, body, req, res, &res->disposition,
                     err);
}
