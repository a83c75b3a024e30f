/*
 * fuzz_agent_reader.c - libFuzzer target for the step protocol reader
 * (agent-step.md §3) and its strict parser, A4.
 *
 * The input is a step CLI's stdout for stepId "fix-0123456789ab"; its first
 * byte also picks a chunk size. Properties checked on every input (a
 * violation aborts, which libFuzzer reports):
 *  - nothing crashes, leaks or reads out of bounds (ASan/UBSan);
 *  - the reader decides the same (rule, line, events, result) whether the
 *    bytes arrive at once or in chunks;
 *  - every kept event the session renders is canonical JSON whose strings
 *    are at most 256 bytes;
 *  - classification of the stream (exit 0) succeeds and its outcome is
 *    canonical-domain JSON;
 *  - whatever the strict parser accepts as a value dumps to text it accepts
 *    again, identically (the dump is idempotent).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/jsontape.h"
#include "agent/session.h"
#include "json/json.h"

#define SID "fix-0123456789ab"

static void require(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_agent_reader: property violated: %s\n", what);
        abort();
    }
}

static void check_strings(const json_t *v)
{
    const char *k;
    json_t *m;
    size_t i;
    if (!v)
        return;
    switch (json_typeof(v)) {
    case JSON_STRING:
        require(json_string_length(v) <= SP_AGENT_EVENT_TEXT_MAX, "kept text is capped");
        break;
    case JSON_OBJECT:
        json_object_foreach((json_t *)v, k, m) check_strings(m);
        break;
    case JSON_ARRAY:
        json_array_foreach(v, i, m) check_strings(m);
        break;
    default:
        break;
    }
}

static void sink(void *ctx, const char *json, size_t len)
{
    (void)ctx;
    if (!json)
        return;
    json_t *v = sp_json_parse_canonical(json, len, NULL);
    require(v != NULL, "a kept event is canonical JSON");
    check_strings(json_object_get(v, "data"));
    json_decref(v);
}

typedef struct verdict {
    const char *rule;
    uint64_t line, events, consumed;
    int state, status;
} verdict;

static verdict read_all(const unsigned char *data, size_t size, size_t chunk, bool classify)
{
    sp_agent_session s;
    sp_agent_session_cfg cfg = {SID, NULL, "node", 1, sink, NULL};
    require(sp_agent_session_init(&s, &cfg) == 0, "session init");
    for (size_t at = 0; at < size;) {
        size_t n = size - at < chunk ? size - at : chunk;
        if (!sp_agent_session_stdout(&s, (const char *)data + at, n))
            break;
        at += n;
    }
    verdict v = {s.reader.rule, s.reader.rule_line, s.reader.events, s.reader.consumed,
                 (int)s.reader.state, s.reader.result.status};
    if (classify) {
        sp_agent_end end = {SP_AGENT_EXITED, 0, 0, ""};
        sp_agent_outcome o;
        sp_agent_session_finish(&s, &end, NULL, true, &o);
        json_t *j = sp_agent_outcome_json(&o);
        require(j != NULL, "an outcome always exists");
        char *enc = sp_json_encode_alloc(j, NULL, NULL);
        require(enc != NULL, "the outcome is canonical-domain JSON");
        free(enc);
        json_decref(j);
        sp_agent_outcome_free(&o);
    }
    sp_agent_session_free(&s);
    return v;
}

static void value_roundtrip(const unsigned char *data, size_t size)
{
    sp_jt t = {0};
    if (sp_jt_parse(&t, (const char *)data, size)) {
        sp_buf a = SP_BUF_INIT, b = SP_BUF_INIT;
        sp_jt_dump(&t, 0, &a, (size_t)-1);
        json_decref(sp_jt_to_json(&t, 0));
        sp_jt u = {0};
        require(sp_buf_ok(&a) && sp_jt_parse(&u, a.data ? a.data : "", a.len),
                "a dump parses again");
        sp_jt_dump(&u, 0, &b, (size_t)-1);
        require(sp_buf_ok(&b) && a.len == b.len && memcmp(a.data, b.data, a.len) == 0,
                "the dump is idempotent");
        sp_jt_free(&u);
        sp_buf_free(&a);
        sp_buf_free(&b);
    }
    sp_jt_free(&t);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    size_t chunk = size ? 1 + data[0] % 61 : 1;
    verdict whole = read_all(data, size, size ? size : 1, true);
    verdict parts = read_all(data, size, chunk, false);
    require((whole.rule == NULL) == (parts.rule == NULL) &&
                (!whole.rule || strcmp(whole.rule, parts.rule) == 0),
            "the same rule in any chunking");
    require(whole.line == parts.line && whole.events == parts.events &&
                whole.consumed == parts.consumed && whole.state == parts.state &&
                whole.status == parts.status,
            "the same verdict in any chunking");
    value_roundtrip(data, size);
    return 0;
}
