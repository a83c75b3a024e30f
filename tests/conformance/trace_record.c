/*
 * trace_record.c - fills in the `expect` of every step of a trace skeleton
 * (format runspore.trace/0.1 without expectations) by running the built-in
 * kernel exactly as `spore trace` replays (src/trace/trace.c: the same
 * identity defaults, semantics by the workflow's format, default budget
 * of that semantics with the trace's overrides, snapshot threaded from the
 * last decision, snapshotRaw honoured). It is how the frozen 0.2 traces in
 * traces-0.2/ were made; every one of them was then read and checked by
 * hand against workflows-0.2.md before it was committed.
 *
 *     trace_record skeleton.json > trace.json
 *
 * Must never be used to "fix" a trace that fails: a frozen trace changes
 * only when the spec does, with the reason in the commit message.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "kernel/kernel.h"
#include "kernel/workflow.h"

static char *canon(const json_t *v, size_t *len)
{
    sp_error err = {0};
    char *s = sp_json_encode_alloc(v, len, &err);
    if (!s) {
        fprintf(stderr, "trace_record: cannot encode: %s\n", err.message);
        exit(2);
    }
    return s;
}

static json_t *parse(const char *bytes, size_t len)
{
    sp_error err = {0};
    json_t *v = sp_json_parse_canonical(bytes, len, &err);
    if (!v) {
        fprintf(stderr, "trace_record: kernel emitted non-canonical bytes\n");
        exit(2);
    }
    return v;
}

static const char *id_or(const json_t *id, const char *name, const char *dflt)
{
    const json_t *v = json_object_get(id, name);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

static json_t *decision_json(const sp_kernel_decision *d)
{
    json_t *cmds = json_array(), *diags = json_array();
    for (size_t i = 0; i < d->ncommands; i++) {
        const sp_kernel_command *c = &d->commands[i];
        json_array_append_new(cmds, json_pack("{s:s,s:s,s:s,s:o}", "commandId", c->command_id,
                                              "activationId", c->activation_id, "kind", c->kind,
                                              "payload", parse(c->payload, c->payload_len)));
    }
    for (size_t i = 0; i < d->ndiagnostics; i++) {
        const sp_kernel_diagnostic *g = &d->diagnostics[i];
        json_array_append_new(diags, json_pack("{s:s,s:s?,s:o}", "code", g->code, "nodeId",
                                               g->node_id, "details",
                                               parse(g->details, g->details_len)));
        if (!g->node_id)
            json_object_set_new(json_array_get(diags, i), "nodeId", json_null());
    }
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_kernel_decision_digest(d, digest);
    return json_pack("{s:o,s:s,s:o,s:o,s:s}", "snapshot", parse(d->snapshot, d->snapshot_len),
                     "snapshotDigest", d->snapshot_digest, "commands", cmds, "diagnostics", diags,
                     "decisionDigest", digest);
}

static void limits_of(const json_t *doc, const char *semantics, sp_kernel_limits *l)
{
    *l = sp_kernel_default_limits(semantics);
    const json_t *o = json_object_get(doc, "limits");
    const json_t *v;
    if ((v = json_object_get(o, "microsteps")))
        l->microsteps = (uint32_t)json_integer_value(v);
    if ((v = json_object_get(o, "expressionOperations")))
        l->expression_operations = (uint32_t)json_integer_value(v);
    if ((v = json_object_get(o, "maxStateBytes")))
        l->max_state_bytes = (uint32_t)json_integer_value(v);
    if ((v = json_object_get(o, "maxCommandCount")))
        l->max_command_count = (uint32_t)json_integer_value(v);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: trace_record skeleton.json > trace.json\n");
        return 2;
    }
    json_error_t jerr;
    json_t *doc = json_load_file(argv[1], JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        fprintf(stderr, "trace_record: %s: line %d: %s\n", argv[1], jerr.line, jerr.text);
        return 2;
    }
    const json_t *wf = json_object_get(doc, "workflow");
    size_t graph_len;
    char *graph = canon(wf, &graph_len);
    char pkg[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("package", graph, graph_len, pkg);
    const char *semantics = sp_workflow_semantics_of(wf) == SP_SEM_02 ? SP_SEMANTICS_VERSION_02
                                                                      : SP_SEMANTICS_VERSION;
    sp_kernel_limits limits;
    limits_of(doc, semantics, &limits);
    char *threaded = NULL;
    size_t threaded_len = 0;
    json_t *steps = json_object_get(doc, "steps");
    for (size_t i = 0; i < json_array_size(steps); i++) {
        json_t *s = json_array_get(steps, i);
        const json_t *ev = json_object_get(s, "event"), *id = json_object_get(s, "identity");
        const json_t *raw = json_object_get(s, "snapshotRaw");
        size_t plen;
        char *payload = canon(json_object_get(ev, "payload"), &plen);
        sp_kernel_request req = {
            .identity = {id_or(id, "packageDigest", pkg),
                         id_or(id, "kernelDigest", "trace:runspore.trace/0.1"),
                         id_or(id, "semanticsVersion", semantics),
                         id_or(id, "codecVersion", SP_CODEC_VERSION)},
            .graph = graph,
            .graph_len = graph_len,
            .snapshot = raw ? json_string_value(raw) : threaded,
            .snapshot_len = raw ? json_string_length(raw) : threaded_len,
            .event = {json_string_value(json_object_get(ev, "eventId")),
                      strtoull(json_string_value(json_object_get(ev, "sequence")), NULL, 10),
                      strtoull(json_string_value(json_object_get(ev, "acceptedAtMs")), NULL, 10),
                      json_string_value(json_object_get(ev, "kind")), payload, plen, NULL},
            .limits = limits,
        };
        sp_kernel_decision d;
        sp_kernel_failure f;
        int rc = sp_kernel_transition(&req, &d, &f);
        if (rc == SP_KERNEL_DECISION) {
            json_object_set_new(s, "expect", decision_json(&d));
            free(threaded);
            threaded = d.snapshot;
            threaded_len = d.snapshot_len;
            d.snapshot = NULL;
            sp_kernel_decision_free(&d);
        } else if (rc == SP_KERNEL_FAILURE) {
            json_object_set_new(s, "expect", json_pack("{s:{s:s,s:s}}", "failure", "kind", f.kind,
                                                       "code", f.code));
            fprintf(stderr, "step %zu: failure %s/%s: %s\n", i, f.kind, f.code, f.details);
        } else {
            fprintf(stderr, "trace_record: out of memory\n");
            return 2;
        }
        free(payload);
    }
    json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    fputc('\n', stdout);
    free(threaded);
    free(graph);
    json_decref(doc);
    return 0;
}
