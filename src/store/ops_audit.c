/*
 * ops_audit.c - list_audit: the audit rows of one run by kind (see audit.h),
 * one read transaction, paged by audit ID.
 *
 * What it must never do: write, or cross a run or tenant boundary.
 */
#include <stdlib.h>
#include <string.h>

#include "store/audit.h"
#include "store/logic.h"

void sp_audit_list_free(sp_audit_list *l)
{
    for (size_t i = 0; l && i < l->n; i++) {
        free(l->rows[i].kind);
        free(l->rows[i].evidence);
    }
    if (l) {
        free(l->rows);
        l->rows = NULL;
        l->n = 0;
    }
}

sp_store_rc sp_store_list_audit(sp_store *s, const sp_run_key *key, const char *kind,
                                uint64_t after_id, size_t limit, sp_audit_list *out,
                                sp_error *err)
{
    memset(out, 0, sizeof *out);
    if (limit == 0 || limit > SP_STORE_PAGE_MAX)
        limit = SP_STORE_PAGE_MAX;
    sp_store_rc rc = lg_check_key(key, err);
    if (!rc)
        rc = lg_check_text("audit kind", kind, SP_STORE_ID_MAX, err);
    sp_db_rows rows = {0};
    if (!rc)
        rc = LG_R(s, &rows, err,
                  "SELECT audit_id, attempt_id, kind, evidence, at_ms FROM audit"
                  " WHERE tenant = ? AND run_id = ? AND kind = ? AND audit_id > ?"
                  " ORDER BY audit_id LIMIT ?",
                  DB_TEXT(key->tenant), DB_TEXT(key->run_id), DB_TEXT(kind),
                  DB_INT(after_id), DB_INT(limit));
    if (!rc && rows.nrows && !(out->rows = calloc(rows.nrows, sizeof *out->rows)))
        rc = lg_encode_fail(err, true, "audit list");
    for (size_t i = 0; !rc && i < rows.nrows; i++, out->n++) {
        sp_audit_row *r = &out->rows[i];
        r->audit_id = lg_u64(&rows, i, 0);
        lg_copy(r->attempt_id, sizeof r->attempt_id, &rows, i, 1);
        r->at_ms = lg_u64(&rows, i, 4);
        if (!lg_dup(&r->kind, NULL, &rows, i, 2) ||
            !lg_dup(&r->evidence, &r->evidence_len, &rows, i, 3))
            rc = lg_encode_fail(err, true, "audit list");
    }
    if (rc)
        sp_audit_list_free(out);
    sp_db_rows_free(&rows);
    return rc;
}
