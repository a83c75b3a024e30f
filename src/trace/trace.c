/*
 * trace.c - loading and replaying golden traces (see trace.h).
 *
 * The runner supplies what the format says it supplies: the package digest
 * of the canonical workflow, kernel digest "trace:runspore.trace/0.1",
 * semantics 0.1 - or 0.2 for a workflow whose format is spore.workflow/0.2
 * (docs/format-0.2.md; a step's identity still overrides) -, codec
 * jcs-int53/1, the default budget of that semantics with the trace's
 * overrides, and the snapshot threaded from the last step that produced a
 * decision (or, with keep_state, its decoded state). Must never skip a
 * member: snapshot, both digests, every command and diagnostic field, or the
 * failure's kind and code.
 */
#include "trace/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "json/json.h"
#include "kernel/kernel.h"
#include "kernel/workflow.h"

#define TRACE_FILE_MAX (64u << 20)
#define TRACE_KERNEL_DIGEST "trace:runspore.trace/0.1"

typedef struct bytes {
    char *data;
    size_t len;
} bytes;

typedef struct exp_command {
    char *command_id, *activation_id, *kind;
    bytes payload;
} exp_command;

typedef struct exp_diagnostic {
    char *code, *node_id; /* node_id NULL = none */
    bytes details;
} exp_diagnostic;

typedef struct step {
    char *event_id, *kind;
    char *sequence_text, *accepted_text;
    uint64_t sequence, accepted_at_ms;
    bool sequence_ok, accepted_ok; /* false: not a u64; sent as the max */
    bytes payload;
    bool has_snapshot_raw;
    bytes snapshot_raw;
    char *semantics, *codec, *package_digest, *kernel_digest; /* NULL = default */
    bool expect_failure;
    char *fail_kind, *fail_code;
    bytes snapshot;
    char *snapshot_digest, *decision_digest;
    exp_command *commands;
    size_t ncommands;
    exp_diagnostic *diagnostics;
    size_t ndiagnostics;
} step;

struct sp_trace {
    char *name;
    const char *semantics; /* the default: chosen by the workflow's format */
    bytes graph;
    char package_digest[SP_DIGEST_TEXT_LEN + 1];
    sp_kernel_limits limits;
    step *steps;
    size_t nsteps;
};

/* ---- loading ---- */

static int bad(sp_error *err, const char *what, size_t stepi)
{
    if (stepi == (size_t)-1)
        return sp_fail(err, "trace.invalid", "%s", what);
    return sp_fail(err, "trace.invalid", "step %zu: %s", stepi, what);
}

static char *dup_str(const json_t *v)
{
    return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

static int canonical(const json_t *v, bytes *out, sp_error *err)
{
    out->data = sp_json_encode_alloc(v, &out->len, err);
    return out->data ? 0 : -1;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno || s[0] == '-' || s[0] == '+' || s[0] == ' ')
        return false;
    *out = v;
    return true;
}

static int load_event(step *s, const json_t *ev, size_t i, sp_error *err)
{
    s->event_id = dup_str(json_object_get(ev, "eventId"));
    s->kind = dup_str(json_object_get(ev, "kind"));
    s->sequence_text = dup_str(json_object_get(ev, "sequence"));
    s->accepted_text = dup_str(json_object_get(ev, "acceptedAtMs"));
    if (!s->event_id || !s->kind || !s->sequence_text || !s->accepted_text)
        return bad(err, "event needs eventId, sequence, acceptedAtMs and kind strings", i);
    s->sequence_ok = parse_u64(s->sequence_text, &s->sequence);
    s->accepted_ok = parse_u64(s->accepted_text, &s->accepted_at_ms);
    if (!s->sequence_ok)
        s->sequence = UINT64_MAX;
    if (!s->accepted_ok)
        s->accepted_at_ms = UINT64_MAX;
    const json_t *payload = json_object_get(ev, "payload"), *raw = json_object_get(ev, "payloadRaw");
    if (!payload == !raw)
        return bad(err, "event needs exactly one of payload and payloadRaw", i);
    if (raw) {
        if (!json_is_string(raw))
            return bad(err, "payloadRaw must be a string", i);
        s->payload.len = json_string_length(raw);
        s->payload.data = malloc(s->payload.len + 1);
        if (!s->payload.data)
            return sp_oom(err);
        memcpy(s->payload.data, json_string_value(raw), s->payload.len + 1);
        return 0;
    }
    return canonical(payload, &s->payload, err);
}

static int load_identity(step *s, const json_t *id, size_t i, sp_error *err)
{
    if (!id)
        return 0;
    if (!json_is_object(id))
        return bad(err, "identity must be an object", i);
    s->semantics = dup_str(json_object_get(id, "semanticsVersion"));
    s->codec = dup_str(json_object_get(id, "codecVersion"));
    s->package_digest = dup_str(json_object_get(id, "packageDigest"));
    s->kernel_digest = dup_str(json_object_get(id, "kernelDigest"));
    return 0;
}

static int load_commands(step *s, const json_t *cmds, size_t i, sp_error *err)
{
    if (!json_is_array(cmds))
        return bad(err, "expect.commands must be an array", i);
    s->ncommands = json_array_size(cmds);
    s->commands = calloc(s->ncommands + 1, sizeof *s->commands);
    if (!s->commands)
        return sp_oom(err);
    for (size_t k = 0; k < s->ncommands; k++) {
        const json_t *c = json_array_get(cmds, k);
        exp_command *e = &s->commands[k];
        e->command_id = dup_str(json_object_get(c, "commandId"));
        e->activation_id = dup_str(json_object_get(c, "activationId"));
        e->kind = dup_str(json_object_get(c, "kind"));
        if (!e->command_id || !e->activation_id || !e->kind || !json_object_get(c, "payload"))
            return bad(err, "a command needs commandId, activationId, kind, payload", i);
        if (canonical(json_object_get(c, "payload"), &e->payload, err))
            return -1;
    }
    return 0;
}

static int load_diagnostics(step *s, const json_t *diags, size_t i, sp_error *err)
{
    if (!json_is_array(diags))
        return bad(err, "expect.diagnostics must be an array", i);
    s->ndiagnostics = json_array_size(diags);
    s->diagnostics = calloc(s->ndiagnostics + 1, sizeof *s->diagnostics);
    if (!s->diagnostics)
        return sp_oom(err);
    for (size_t k = 0; k < s->ndiagnostics; k++) {
        const json_t *d = json_array_get(diags, k);
        exp_diagnostic *e = &s->diagnostics[k];
        e->code = dup_str(json_object_get(d, "code"));
        e->node_id = dup_str(json_object_get(d, "nodeId"));
        const json_t *details = json_object_get(d, "details");
        if (!e->code || !details)
            return bad(err, "a diagnostic needs code and details", i);
        if (canonical(details, &e->details, err))
            return -1;
    }
    return 0;
}

static int load_expect(step *s, const json_t *expect, size_t i, sp_error *err)
{
    if (!json_is_object(expect))
        return bad(err, "expect must be an object", i);
    const json_t *failure = json_object_get(expect, "failure");
    if (failure) {
        s->expect_failure = true;
        s->fail_kind = dup_str(json_object_get(failure, "kind"));
        s->fail_code = dup_str(json_object_get(failure, "code"));
        return s->fail_kind && s->fail_code ? 0 : bad(err, "failure needs kind and code", i);
    }
    s->snapshot_digest = dup_str(json_object_get(expect, "snapshotDigest"));
    s->decision_digest = dup_str(json_object_get(expect, "decisionDigest"));
    if (!s->snapshot_digest || !json_object_get(expect, "snapshot"))
        return bad(err, "a decision needs snapshot and snapshotDigest", i);
    if (canonical(json_object_get(expect, "snapshot"), &s->snapshot, err))
        return -1;
    if (load_commands(s, json_object_get(expect, "commands"), i, err))
        return -1;
    return load_diagnostics(s, json_object_get(expect, "diagnostics"), i, err);
}

static int load_step(step *s, const json_t *js, size_t i, sp_error *err)
{
    if (!json_is_object(js) || !json_is_object(json_object_get(js, "event")))
        return bad(err, "a step needs an event object", i);
    if (load_event(s, json_object_get(js, "event"), i, err))
        return -1;
    if (load_identity(s, json_object_get(js, "identity"), i, err))
        return -1;
    const json_t *raw = json_object_get(js, "snapshotRaw");
    if (raw) {
        if (!json_is_string(raw))
            return bad(err, "snapshotRaw must be a string", i);
        s->has_snapshot_raw = true;
        s->snapshot_raw.len = json_string_length(raw);
        s->snapshot_raw.data = strdup(json_string_value(raw));
        if (!s->snapshot_raw.data)
            return sp_oom(err);
    }
    return load_expect(s, json_object_get(js, "expect"), i, err);
}

static int load_limits(sp_trace *t, const json_t *limits, sp_error *err)
{
    t->limits = sp_kernel_default_limits(t->semantics);
    if (!limits)
        return 0;
    static const struct {
        const char *name;
        size_t offset;
    } fields[] = {{"microsteps", offsetof(sp_kernel_limits, microsteps)},
                  {"expressionOperations", offsetof(sp_kernel_limits, expression_operations)},
                  {"maxStateBytes", offsetof(sp_kernel_limits, max_state_bytes)},
                  {"maxCommandCount", offsetof(sp_kernel_limits, max_command_count)}};
    for (size_t i = 0; i < 4; i++) {
        const json_t *v = json_object_get(limits, fields[i].name);
        if (!v)
            continue;
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > (json_int_t)UINT32_MAX)
            return bad(err, "limits must be u32 integers", (size_t)-1);
        *(uint32_t *)((char *)&t->limits + fields[i].offset) = (uint32_t)json_integer_value(v);
    }
    return 0;
}

static int load_doc(sp_trace *t, const json_t *doc, sp_error *err)
{
    if (!json_is_object(doc) || !json_is_string(json_object_get(doc, "format")) ||
        strcmp(json_string_value(json_object_get(doc, "format")), "runspore.trace/0.1") != 0)
        return bad(err, "format must be runspore.trace/0.1", (size_t)-1);
    t->name = dup_str(json_object_get(doc, "name"));
    const json_t *wf = json_object_get(doc, "workflow"), *steps = json_object_get(doc, "steps");
    if (!t->name || !wf || !json_is_array(steps))
        return bad(err, "a trace needs name, workflow and steps", (size_t)-1);
    if (canonical(wf, &t->graph, err))
        return -1;
    t->semantics = sp_workflow_semantics_of(wf) == SP_SEM_02 ? SP_SEMANTICS_VERSION_02
                                                              : SP_SEMANTICS_VERSION;
    sp_digest_one("package", t->graph.data, t->graph.len, t->package_digest);
    if (load_limits(t, json_object_get(doc, "limits"), err))
        return -1;
    t->nsteps = json_array_size(steps);
    t->steps = calloc(t->nsteps + 1, sizeof *t->steps);
    if (!t->steps)
        return sp_oom(err);
    for (size_t i = 0; i < t->nsteps; i++)
        if (load_step(&t->steps[i], json_array_get(steps, i), i, err))
            return -1;
    return 0;
}

sp_trace *sp_trace_load(const char *path, sp_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        sp_fail(err, "file.unreadable", "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    sp_buf b = SP_BUF_INIT;
    b.limit = TRACE_FILE_MAX;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
        sp_buf_append(&b, chunk, n);
    bool read_error = ferror(fp);
    fclose(fp);
    if (read_error || !sp_buf_ok(&b)) {
        sp_buf_free(&b);
        sp_fail(err, "file.unreadable", "cannot read %s (or larger than 64 MiB)", path);
        return NULL;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(b.data ? b.data : "", b.len, JSON_REJECT_DUPLICATES, &jerr);
    sp_buf_free(&b);
    if (!doc) {
        sp_fail(err, "json.invalid", "%s: line %d: %s", path, jerr.line, jerr.text);
        return NULL;
    }
    sp_trace *t = calloc(1, sizeof *t);
    if (!t || load_doc(t, doc, err)) {
        if (!t)
            sp_oom(err);
        json_decref(doc);
        sp_trace_free(t);
        return NULL;
    }
    json_decref(doc);
    return t;
}

static void free_step(step *s)
{
    free(s->event_id);
    free(s->kind);
    free(s->sequence_text);
    free(s->accepted_text);
    free(s->payload.data);
    free(s->snapshot_raw.data);
    free(s->semantics);
    free(s->codec);
    free(s->package_digest);
    free(s->kernel_digest);
    free(s->fail_kind);
    free(s->fail_code);
    free(s->snapshot.data);
    free(s->snapshot_digest);
    free(s->decision_digest);
    for (size_t k = 0; k < s->ncommands; k++) {
        free(s->commands[k].command_id);
        free(s->commands[k].activation_id);
        free(s->commands[k].kind);
        free(s->commands[k].payload.data);
    }
    free(s->commands);
    for (size_t k = 0; k < s->ndiagnostics; k++) {
        free(s->diagnostics[k].code);
        free(s->diagnostics[k].node_id);
        free(s->diagnostics[k].details.data);
    }
    free(s->diagnostics);
}

void sp_trace_free(sp_trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nsteps; i++)
        free_step(&t->steps[i]);
    free(t->steps);
    free(t->graph.data);
    free(t->name);
    free(t);
}

const char *sp_trace_name(const sp_trace *t) { return t->name; }

size_t sp_trace_step_count(const sp_trace *t) { return t->nsteps; }

/* ---- replay ---- */

static char *quoted(const char *s)
{
    if (!s)
        return strdup("null");
    json_t *v = json_string(s);
    char *out = v ? sp_json_encode_alloc(v, NULL, NULL) : NULL;
    json_decref(v);
    return out;
}

static char *copy_bytes(const char *data, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, data, len);
        p[len] = '\0';
    }
    return p;
}

static bool mismatch(sp_trace_mismatch *m, size_t stepi, const char *member, char *expected,
                     char *actual)
{
    m->step = stepi;
    snprintf(m->member, sizeof m->member, "%s", member);
    m->expected = expected;
    m->actual = actual;
    return false;
}

static bool same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool compare_text(sp_trace_mismatch *m, size_t i, const char *member, const char *want,
                         const char *got)
{
    if (same_text(want, got))
        return true;
    return mismatch(m, i, member, quoted(want), quoted(got));
}

static bool compare_bytes(sp_trace_mismatch *m, size_t i, const char *member, const bytes *want,
                          const char *got, size_t got_len)
{
    if (want->len == got_len && memcmp(want->data, got, got_len) == 0)
        return true;
    return mismatch(m, i, member, copy_bytes(want->data, want->len), copy_bytes(got, got_len));
}

static bool compare_commands(const step *s, size_t i, const sp_kernel_decision *d,
                             sp_trace_mismatch *m)
{
    char member[96];
    if (s->ncommands != d->ncommands) {
        char want[32], got[32];
        snprintf(want, sizeof want, "%zu", s->ncommands);
        snprintf(got, sizeof got, "%zu", d->ncommands);
        return mismatch(m, i, "commands.length", strdup(want), strdup(got));
    }
    for (size_t k = 0; k < d->ncommands; k++) {
        const exp_command *e = &s->commands[k];
        const sp_kernel_command *c = &d->commands[k];
        snprintf(member, sizeof member, "commands[%zu].commandId", k);
        if (!compare_text(m, i, member, e->command_id, c->command_id))
            return false;
        snprintf(member, sizeof member, "commands[%zu].activationId", k);
        if (!compare_text(m, i, member, e->activation_id, c->activation_id))
            return false;
        snprintf(member, sizeof member, "commands[%zu].kind", k);
        if (!compare_text(m, i, member, e->kind, c->kind))
            return false;
        snprintf(member, sizeof member, "commands[%zu].payload", k);
        if (!compare_bytes(m, i, member, &e->payload, c->payload, c->payload_len))
            return false;
    }
    return true;
}

static bool compare_diagnostics(const step *s, size_t i, const sp_kernel_decision *d,
                                sp_trace_mismatch *m)
{
    char member[96];
    if (s->ndiagnostics != d->ndiagnostics) {
        char want[32], got[32];
        snprintf(want, sizeof want, "%zu", s->ndiagnostics);
        snprintf(got, sizeof got, "%zu", d->ndiagnostics);
        return mismatch(m, i, "diagnostics.length", strdup(want), strdup(got));
    }
    for (size_t k = 0; k < d->ndiagnostics; k++) {
        const exp_diagnostic *e = &s->diagnostics[k];
        const sp_kernel_diagnostic *g = &d->diagnostics[k];
        snprintf(member, sizeof member, "diagnostics[%zu].code", k);
        if (!compare_text(m, i, member, e->code, g->code))
            return false;
        snprintf(member, sizeof member, "diagnostics[%zu].nodeId", k);
        if (!compare_text(m, i, member, e->node_id, g->node_id))
            return false;
        snprintf(member, sizeof member, "diagnostics[%zu].details", k);
        if (!compare_bytes(m, i, member, &e->details, g->details, g->details_len))
            return false;
    }
    return true;
}

static bool compare_decision(const step *s, size_t i, const sp_kernel_decision *d,
                             sp_trace_mismatch *m)
{
    if (!compare_bytes(m, i, "snapshot", &s->snapshot, d->snapshot, d->snapshot_len))
        return false;
    char recomputed[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("state", d->snapshot, d->snapshot_len, recomputed);
    if (!compare_text(m, i, "snapshotDigest", s->snapshot_digest, d->snapshot_digest) ||
        !compare_text(m, i, "snapshotDigest(recomputed)", s->snapshot_digest, recomputed))
        return false;
    if (!compare_commands(s, i, d, m) || !compare_diagnostics(s, i, d, m))
        return false;
    if (s->decision_digest) {
        char digest[SP_DIGEST_TEXT_LEN + 1];
        sp_kernel_decision_digest(d, digest);
        if (!compare_text(m, i, "decisionDigest", s->decision_digest, digest))
            return false;
    }
    return true;
}

static void log_step(json_t *steps, size_t i, int rc, const sp_kernel_decision *d,
                     const sp_kernel_failure *f, bool ok)
{
    if (!steps)
        return;
    json_t *entry;
    if (rc == SP_KERNEL_DECISION) {
        char digest[SP_DIGEST_TEXT_LEN + 1];
        sp_kernel_decision_digest(d, digest);
        entry = json_pack("{s:I,s:s,s:b,s:s,s:s,s:s,s:I,s:I}", "step", (json_int_t)i, "outcome",
                          "decision", "matched", ok, "status", d->status, "snapshotDigest",
                          d->snapshot_digest, "decisionDigest", digest, "commands",
                          (json_int_t)d->ncommands, "diagnostics", (json_int_t)d->ndiagnostics);
    } else {
        entry = json_pack("{s:I,s:s,s:b,s:s,s:s}", "step", (json_int_t)i, "outcome", "failure",
                          "matched", ok, "kind", f->kind ? f->kind : "", "code", f->code);
    }
    json_array_append_new(steps, entry);
}

static bool check_step(const sp_trace *t, size_t i, int rc, const sp_kernel_decision *d,
                       const sp_kernel_failure *f, sp_trace_mismatch *m)
{
    const step *s = &t->steps[i];
    if (rc == SP_KERNEL_OOM)
        return mismatch(m, i, "runtime", strdup("a result"), strdup("out of memory"));
    if (s->expect_failure) {
        if (rc != SP_KERNEL_FAILURE) {
            char *got = malloc(64 + sizeof d->status);
            if (got)
                snprintf(got, 64 + sizeof d->status, "a decision (status %s)", d->status);
            return mismatch(m, i, "failure", strdup("a failure"), got);
        }
        return compare_text(m, i, "failure.kind", s->fail_kind, f->kind) &&
               compare_text(m, i, "failure.code", s->fail_code, f->code);
    }
    if (rc != SP_KERNEL_DECISION) {
        size_t cap = sizeof f->code + sizeof f->details + 64;
        char *got = malloc(cap);
        if (got)
            snprintf(got, cap, "failure %s/%s (%s)", f->kind, f->code, f->details);
        return mismatch(m, i, "decision", strdup("a decision"), got);
    }
    return compare_decision(s, i, d, m);
}

bool sp_trace_replay_with(const sp_trace *t, const sp_trace_options *opts, sp_trace_mismatch *m,
                          json_t *steps)
{
    static const sp_trace_options defaults = {0};
    if (!opts)
        opts = &defaults;
    memset(m, 0, sizeof *m);
    char *threaded = NULL;
    size_t threaded_len = 0;
    sp_kernel_state *kept = NULL; /* keep_state: the decoding of `threaded` */
    bool ok = true;
    bool oom = false;
    sp_workflow *wf = sp_workflow_load(t->graph.data, t->graph.len, &(sp_kernel_failure){0}, &oom);
    for (size_t i = 0; i < t->nsteps && ok; i++) {
        const step *s = &t->steps[i];
        sp_kernel_state *given = s->has_snapshot_raw ? NULL : kept;
        sp_kernel_request req = {
            .identity = {s->package_digest ? s->package_digest : t->package_digest,
                         s->kernel_digest ? s->kernel_digest : TRACE_KERNEL_DIGEST,
                         s->semantics ? s->semantics : t->semantics,
                         s->codec ? s->codec : SP_CODEC_VERSION},
            .graph = t->graph.data,
            .graph_len = t->graph.len,
            .loaded_graph = wf,
            .snapshot = s->has_snapshot_raw ? s->snapshot_raw.data : given ? NULL : threaded,
            .snapshot_len = s->has_snapshot_raw ? s->snapshot_raw.len : given ? 0 : threaded_len,
            .state = given,
            .want_state = opts->keep_state,
            .event = {s->event_id, s->sequence, s->accepted_at_ms, s->kind, s->payload.data,
                      s->payload.len, NULL},
            .limits = t->limits,
        };
        if (given)
            kept = NULL; /* the transition takes it */
        sp_kernel_decision d;
        sp_kernel_failure f;
        int rc = sp_kernel_transition(&req, &d, &f);
        if (opts->on_step)
            opts->on_step(opts->ctx, i, rc, &d, &f);
        ok = check_step(t, i, rc, &d, &f, m);
        log_step(steps, i, rc, &d, &f, ok);
        if (rc == SP_KERNEL_DECISION) {
            free(threaded);
            threaded = d.snapshot;
            threaded_len = d.snapshot_len;
            d.snapshot = NULL;
            sp_kernel_state_free(kept);
            kept = d.state;
            d.state = NULL;
            sp_kernel_decision_free(&d);
        }
    }
    sp_kernel_state_free(kept);
    free(threaded);
    sp_workflow_free(wf);
    return ok;
}

bool sp_trace_replay(const sp_trace *t, sp_trace_mismatch *m, json_t *steps)
{
    return sp_trace_replay_with(t, NULL, m, steps);
}

void sp_trace_mismatch_clear(sp_trace_mismatch *m)
{
    free(m->expected);
    free(m->actual);
    memset(m, 0, sizeof *m);
}
