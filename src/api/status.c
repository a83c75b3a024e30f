/*
 * status.c - the status object of one run (see status.h).
 *
 * Must never fail on a missing or unreadable snapshot: the members it would
 * give are shown as null.
 */
#include "api/status.h"

#include "json/decimal.h"
#include "json/json.h"

static json_t *member_or_null(json_t *obj, const char *name)
{
    json_t *m = obj ? json_object_get(obj, name) : NULL;
    return m ? json_incref(m) : json_null();
}

static json_t *quarantine_json(const sp_run_view *v)
{
    if (!v->quarantined)
        return json_null();
    return json_pack("{s:s,s:s,s:o}", "code", v->quarantine_code ? v->quarantine_code : "",
                     "details", v->quarantine_details ? v->quarantine_details : "", "atMs",
                     sp_decimal_json(v->quarantine_at_ms));
}

json_t *sp_status_json(const sp_run_view *v)
{
    json_t *snap = v->snapshot ? sp_json_parse(v->snapshot, v->snapshot_len, NULL) : NULL;
    json_t *nodes = snap ? json_incref(json_object_get(snap, "nodes")) : NULL;
    json_t *out = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:s}", "runId", v->key.run_id,
                            "startKey", v->start_key ? v->start_key : "", "status", v->status,
                            "revision", sp_decimal_json(v->revision), "position",
                            member_or_null(snap, "position"), "invocation",
                            member_or_null(snap, "invocation"), "result",
                            member_or_null(snap, "result"), "nodes", nodes ? nodes : json_object(),
                            "quarantine", quarantine_json(v), "packageDigest", v->package_digest);
    json_decref(snap);
    return out;
}
