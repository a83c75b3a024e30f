/*
 * ops_runs.c - creating runs and reading them back: create_run, find_run,
 * get_run, list_runs (store.md §3).
 *
 * create_run predicates, in order: package digest (conflict/
 * package.digest-mismatch), started evidence (conflict/evidence.*), the
 * start key names another run (conflict/run.start-key-mismatch), the run
 * exists with another start key, package or started digest (conflict/
 * run.exists); the identical run under another request ID is the original
 * value as `duplicate`, without a receipt. Writes: the package (if absent),
 * the run (revision 0, status `created`), event 1 `start` run.started.
 *
 * What it must never do: write a second copy of a package, or create a run
 * without its run.started event.
 */
#include <stdio.h>
#include <stdlib.h>

#include "store/logic.h"

#define RUN_VIEW_COLS LG_RUN_COLS ", snapshot"
enum { RUN_SNAPSHOT = RUN_NCOLS };

/* ---- create_run ---- */

static sp_store_rc check_start_key(lg_mut *m, const sp_create_run_req *req, sp_error *err)
{
    sp_db_rows rows;
    sp_store_rc rc =
        LG_Q(m->s, &rows, err, "SELECT run_id FROM runs WHERE tenant = ? AND start_key = ?",
             DB_TEXT(req->key.tenant), DB_TEXT(req->start_key));
    if (rc == SP_STORE_OK && rows.nrows && strcmp(lg_text(&rows, 0, 0), req->key.run_id) != 0)
        rc = lg_fail(err, SP_STORE_CONFLICT, "run.start-key-mismatch",
                     "start key %s already names run %s", req->start_key, lg_text(&rows, 0, 0));
    sp_db_rows_free(&rows);
    return rc;
}

static bool same_run(const lg_mut *m, const sp_create_run_req *req)
{
    return strcmp(lg_run_text(m, RUN_START_KEY), req->start_key) == 0 &&
           strcmp(lg_run_text(m, RUN_PACKAGE_DIGEST), req->package_digest) == 0 &&
           strcmp(lg_run_text(m, RUN_STARTED_DIGEST), req->started.digest) == 0;
}

static sp_store_rc insert_run(lg_mut *m, const sp_create_run_req *req, sp_error *err)
{
    sp_store_rc rc = LG_Q(m->s, NULL, err,
                          "INSERT INTO packages (digest, body) VALUES (?, ?)"
                          " ON CONFLICT DO NOTHING",
                          DB_TEXT(req->package_digest), DB_TEXTN(req->package, req->package_len));
    if (rc)
        return rc;
    rc = LG_Q(m->s, NULL, err,
              "INSERT INTO runs (tenant, run_id, start_key, package_digest, artifact_digest,"
              " started_digest, status, revision, applied_sequence, next_sequence,"
              " last_accepted_ms, fence, created_at_ms, updated_at_ms)"
              " VALUES (?, ?, ?, ?, ?, ?, 'created', 0, 0, 1, 0, 0, ?, ?)",
              DB_TEXT(req->key.tenant), DB_TEXT(req->key.run_id), DB_TEXT(req->start_key),
              DB_TEXT(req->package_digest), DB_OPT_TEXT(req->artifact_digest),
              DB_TEXT(req->started.digest), DB_INT(m->now), DB_INT(m->now));
    if (rc)
        return rc;
    uint64_t sequence, accepted;
    return lg_append(m, "start", "run.started", req->started.body, req->started.len,
                     req->started.digest, &sequence, &accepted, err);
}

static sp_store_rc create_apply(lg_mut *m, const void *r, sp_error *err)
{
    const sp_create_run_req *req = r;
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("package", req->package, req->package_len, digest);
    if (strcmp(digest, req->package_digest) != 0)
        return lg_fail(err, SP_STORE_CONFLICT, "package.digest-mismatch",
                       "package digest %s does not match the package (%s)", req->package_digest,
                       digest);
    sp_store_rc rc = lg_verify_evidence(&req->started, NULL, err);
    if (rc == SP_STORE_OK)
        rc = check_start_key(m, req, err);
    if (rc)
        return rc;
    if (lg_run_exists(m) && !same_run(m, req))
        return lg_fail(err, SP_STORE_CONFLICT, "run.exists",
                       "run %s/%s exists with another start key, package or input", req->key.tenant,
                       req->key.run_id);
    m->natural_duplicate = lg_run_exists(m);
    if (!m->natural_duplicate && (rc = insert_run(m, req, err)))
        return rc;
    m->value = lg_created_value(&req->key);
    return SP_STORE_OK;
}

static sp_store_rc create_validate(const sp_create_run_req *req, sp_error *err)
{
    sp_store_rc rc = lg_check_key(&req->key, err);
    if (!rc)
        rc = lg_check_text("request ID", req->request_id, SP_STORE_REQUEST_ID_MAX, err);
    if (!rc)
        rc = lg_check_text("start key", req->start_key, SP_STORE_REQUEST_ID_MAX, err);
    if (!rc)
        rc = lg_check_digest("package digest", req->package_digest, err);
    if (!rc && req->artifact_digest)
        rc = lg_check_digest("artifact digest", req->artifact_digest, err);
    if (!rc && !req->package)
        rc = lg_invalid(err, "package bytes are required");
    if (!rc && req->package_len > SP_STORE_PACKAGE_MAX)
        rc = lg_fail(err, SP_STORE_QUOTA, "package.too-large", "package is larger than %u bytes",
                     SP_STORE_PACKAGE_MAX);
    if (!rc)
        rc = lg_check_evidence("started", &req->started, err);
    return rc;
}

static const lg_op CREATE_RUN = {"create_run", "create-run", create_apply,
                                 lg_created_decode, NULL, NULL, LG_PREDICT_NONE, NULL};

sp_store_rc sp_store_create_run(sp_store *s, const sp_create_run_req *req, sp_create_run_res *res,
                                sp_error *err)
{
    memset(res, 0, sizeof *res);
    sp_store_rc rc = create_validate(req, err);
    json_t *body = NULL;
    if (!rc)
        rc = lg_pack(&body, err, "[s s s s s? s]", req->key.tenant, req->key.run_id, req->start_key,
                     req->package_digest, req->artifact_digest, req->started.digest);
    if (rc)
        return rc;
    return lg_mutate(s, &CREATE_RUN, &req->key, req->request_id, body, req, res, &res->disposition,
                     err);
}

/* ---- reads ---- */

sp_store_rc sp_store_find_run(sp_store *s, const char *tenant, const char *start_key,
                              sp_run_key *out, bool *found, sp_error *err)
{
    *found = false;
    memset(out, 0, sizeof *out);
    sp_store_rc rc = lg_check_text("tenant", tenant, SP_STORE_ID_MAX, err);
    if (!rc)
        rc = lg_check_text("start key", start_key, SP_STORE_REQUEST_ID_MAX, err);
    sp_db_rows rows = {0};
    if (!rc)
        rc = LG_R(s, &rows, err, "SELECT run_id FROM runs WHERE tenant = ? AND start_key = ?",
                  DB_TEXT(tenant), DB_TEXT(start_key));
    if (!rc && rows.nrows) {
        *found = true;
        snprintf(out->tenant, sizeof out->tenant, "%s", tenant);
        lg_copy(out->run_id, sizeof out->run_id, &rows, 0, 0);
    }
    sp_db_rows_free(&rows);
    return rc;
}

static bool fill_view(const sp_db_rows *r, const sp_run_key *key, sp_run_view *v)
{
    v->key = *key;
    lg_copy(v->package_digest, sizeof v->package_digest, r, 0, RUN_PACKAGE_DIGEST);
    lg_copy(v->status, sizeof v->status, r, 0, RUN_STATUS);
    lg_copy(v->snapshot_digest, sizeof v->snapshot_digest, r, 0, RUN_SNAPSHOT_DIGEST);
    v->revision = lg_u64(r, 0, RUN_REVISION);
    v->applied_sequence = lg_u64(r, 0, RUN_APPLIED);
    v->next_sequence = lg_u64(r, 0, RUN_NEXT);
    v->quarantined = lg_text(r, 0, RUN_Q_CODE) != NULL;
    v->quarantine_at_ms = lg_u64(r, 0, RUN_Q_AT);
    v->created_at_ms = lg_u64(r, 0, RUN_CREATED);
    v->updated_at_ms = lg_u64(r, 0, RUN_UPDATED);
    return lg_dup(&v->start_key, NULL, r, 0, RUN_START_KEY) &&
           lg_dup(&v->artifact_digest, NULL, r, 0, RUN_ARTIFACT_DIGEST) &&
           lg_dup(&v->snapshot, &v->snapshot_len, r, 0, RUN_SNAPSHOT) &&
           lg_dup(&v->quarantine_code, NULL, r, 0, RUN_Q_CODE) &&
           lg_dup(&v->quarantine_details, NULL, r, 0, RUN_Q_DETAILS);
}

sp_store_rc sp_store_get_run(sp_store *s, const sp_run_key *key, sp_run_view *out, bool *found,
                             sp_error *err)
{
    *found = false;
    memset(out, 0, sizeof *out);
    sp_store_rc rc = lg_check_key(key, err);
    sp_db_rows rows = {0};
    if (!rc)
        rc = LG_R(s, &rows, err,
                  "SELECT " RUN_VIEW_COLS " FROM runs WHERE tenant = ? AND run_id = ?",
                  DB_TEXT(key->tenant), DB_TEXT(key->run_id));
    if (!rc && rows.nrows) {
        *found = true;
        if (!fill_view(&rows, key, out)) {
            sp_run_view_free(out);
            *found = false;
            rc = lg_encode_fail(err, true, "run view");
        }
    }
    sp_db_rows_free(&rows);
    return rc;
}

/* ---- list_runs: by run ID within a tenant, cursor [runId] ---- */

enum {
    LS_RUN,
    LS_START_KEY,
    LS_STATUS,
    LS_REVISION,
    LS_QUARANTINED,
    LS_CREATED,
    LS_UPDATED,
    LS_PACKAGE
};
#define LIST_COLS                                                                                  \
    "SELECT run_id, start_key, status, revision,"                                                  \
    " CASE WHEN quarantine_code IS NULL THEN 0 ELSE 1 END, created_at_ms, updated_at_ms,"          \
    " package_digest FROM runs WHERE tenant = ? "

static sp_store_rc list_query(sp_store *s, const char *tenant, const char *after, size_t limit,
                              sp_db_rows *rows, sp_error *err)
{
    if (after)
        return LG_R(s, rows, err, LIST_COLS "AND run_id > ? ORDER BY run_id LIMIT ?",
                    DB_TEXT(tenant), DB_TEXT(after), DB_INT(limit + 1));
    return LG_R(s, rows, err, LIST_COLS "ORDER BY run_id LIMIT ?", DB_TEXT(tenant),
                DB_INT(limit + 1));
}

static sp_store_rc list_fill(const char *tenant, const sp_db_rows *rows, size_t limit,
                             sp_run_list *out, sp_error *err)
{
    size_t n = rows->nrows > limit ? limit : rows->nrows;
    out->runs = calloc(n ? n : 1, sizeof *out->runs);
    if (!out->runs)
        return lg_encode_fail(err, true, "run list");
    for (size_t i = 0; i < n; i++, out->n++) {
        sp_run_summary *r = &out->runs[i];
        snprintf(r->key.tenant, sizeof r->key.tenant, "%s", tenant);
        lg_copy(r->key.run_id, sizeof r->key.run_id, rows, i, LS_RUN);
        lg_copy(r->status, sizeof r->status, rows, i, LS_STATUS);
        lg_copy(r->package_digest, sizeof r->package_digest, rows, i, LS_PACKAGE);
        r->revision = lg_u64(rows, i, LS_REVISION);
        r->quarantined = lg_u64(rows, i, LS_QUARANTINED) != 0;
        r->created_at_ms = lg_u64(rows, i, LS_CREATED);
        r->updated_at_ms = lg_u64(rows, i, LS_UPDATED);
        if (!lg_dup(&r->start_key, NULL, rows, i, LS_START_KEY))
            return lg_encode_fail(err, true, "run list");
    }
    if (rows->nrows > limit) {
        const char *last = out->runs[n - 1].key.run_id;
        if (!(out->next_cursor = lg_cursor_make(&last, 1)))
            return lg_encode_fail(err, true, "cursor");
    }
    return SP_STORE_OK;
}

sp_store_rc sp_store_list_runs(sp_store *s, const char *tenant, const char *cursor, size_t limit,
                               sp_run_list *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    limit = lg_clamp_limit(limit);
    const char *after = NULL;
    json_t *owner = NULL;
    sp_store_rc rc = lg_check_text("tenant", tenant, SP_STORE_ID_MAX, err);
    if (!rc && cursor)
        rc = lg_cursor_parse(cursor, 1, &after, &owner, err);
    sp_db_rows rows = {0};
    if (!rc)
        rc = list_query(s, tenant, after, limit, &rows, err);
    if (!rc)
        rc = list_fill(tenant, &rows, limit, out, err);
    if (rc)
        sp_run_list_free(out);
    sp_db_rows_free(&rows);
    json_decref(owner);
    return rc;
}
