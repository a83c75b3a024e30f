/*
 * audit.h - reading the append-only audit trail of one run (store.md §3:
 * the rows record_late_evidence and expire_attempt write).
 *
 * What it is for: views that show what the store kept beside the events,
 * such as the capped, redacted progress events of agent steps, which the
 * engine records as audit rows of kind "agent.event" (agent-step.md §3).
 * Written once here over the SQL driver, so every adapter has it.
 *
 * What it must never do: write, or return rows of another run or tenant.
 */
#ifndef SPORE_STORE_AUDIT_H
#define SPORE_STORE_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct sp_audit_row {
    uint64_t audit_id;
    char attempt_id[SP_ID_LEN + 16];
    char *kind;
    char *evidence; /* canonical JSON */
    size_t evidence_len;
    uint64_t at_ms;
} sp_audit_row;

typedef struct sp_audit_list {
    sp_audit_row *rows;
    size_t n;
} sp_audit_list;

void sp_audit_list_free(sp_audit_list *l);

/* Audit rows of `key` with this `kind`, audit_id > after_id, in audit_id
 * order, at most `limit` (clamped to SP_STORE_PAGE_MAX; 0 = the max). */
sp_store_rc sp_store_list_audit(sp_store *s, const sp_run_key *key, const char *kind,
                                uint64_t after_id, size_t limit, sp_audit_list *out,
                                sp_error *err);

#endif
