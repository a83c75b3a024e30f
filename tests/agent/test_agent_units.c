/*
 * test_agent_units.c - the agent modules one rule at a time: the strict
 * parser (jsontape), the protocol reader's bounds at exactly the limit and
 * one byte past it (64 MiB included) and its independence from chunking,
 * redaction (every form, overlaps, pattern rules), the stderr log (PID
 * line, ring, redact-then-cut), the request (stepId, closed members,
 * warnings, tracestate, the 983,040-byte cap), message sizes (local and
 * protobuf), the outcome rows fixtures cannot reach, the breaker, the
 * result.json diagnostic, kept events, action validation, and the runner's
 * refusals before anything runs.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/action.h"
#include "agent/breaker.h"
#include "agent/events.h"
#include "agent/jsontape.h"
#include "agent/outcome.h"
#include "agent/reader.h"
#include "agent/redact.h"
#include "agent/request.h"
#include "agent/result_file.h"
#include "agent/session.h"
#include "agent/stderr_log.h"
#include "base/base64.h"
#include "base/clock.h"
#include "base/utf8.h"
#include "check.h"
#include "runners/agent.h"
#include "sandbox/sandbox.h"

static char TMP[256];

static const char *jt_rule(const char *text)
{
    static sp_jt t;
    return sp_jt_parse(&t, text, strlen(text)) ? NULL : t.rule;
}

#define ACCEPTS(text) CHECK(jt_rule(text) == NULL)
#define REJECTS(text, rule) CHECK_STR(jt_rule(text), rule)

static char *nested(int depth, const char *open, const char *close, const char *inner)
{
    sp_buf b = SP_BUF_INIT;
    for (int i = 0; i < depth; i++)
        sp_buf_append_str(&b, open);
    sp_buf_append_str(&b, inner);
    for (int i = 0; i < depth; i++)
        sp_buf_append_str(&b, close);
    return sp_buf_take(&b, NULL);
}

static void test_jsontape(void)
{
    ACCEPTS("{\"a\":[1,-0.5,1e308,\"x\\u00e9\\ud83d\\ude00\",true,false,null]}");
    ACCEPTS("1e-400");          /* underflow: finite */
    ACCEPTS("0.00001e313");     /* significant digit at 10^308 */
    REJECTS("1.8e308", SP_JT_RULE_NUMBER);
    REJECTS("1e400", SP_JT_RULE_NUMBER);
    REJECTS("-1e400", SP_JT_RULE_NUMBER);
    REJECTS("[NaN]", SP_JT_RULE_SYNTAX);
    REJECTS("[Infinity]", SP_JT_RULE_SYNTAX);
    REJECTS("[01]", SP_JT_RULE_SYNTAX);
    REJECTS("{\"a\":1}\r", SP_JT_RULE_CR);
    ACCEPTS("{\"a\":\"\\r\"}");
    REJECTS("\"a\rb\"", SP_JT_RULE_SYNTAX); /* a raw control character in a string */
    REJECTS("\xEF\xBB\xBF{}", SP_JT_RULE_BOM);
    REJECTS("[\"\\udc00\"]", SP_JT_RULE_SURROGATE);
    REJECTS("[\"\\ud800x\"]", SP_JT_RULE_SURROGATE);
    REJECTS("[\"\xC0\xAF\"]", SP_JT_RULE_UTF8);
    REJECTS("{\"a\":1,\"\\u0061\":2}", SP_JT_RULE_DUPLICATE); /* after unescaping */
    REJECTS("{\"x\":{\"y\":[{\"z\":1,\"z\":1}]}}", SP_JT_RULE_DUPLICATE);
    /* many members: the sorted path */
    sp_buf big = SP_BUF_INIT;
    sp_buf_append_char(&big, '{');
    for (int i = 0; i < 40; i++)
        sp_buf_printf(&big, "%s\"k%d\":%d", i ? "," : "", i, i);
    sp_buf_append_str(&big, "}");
    ACCEPTS(big.data);
    big.len--;
    sp_buf_append_str(&big, ",\"k17\":0}");
    REJECTS(big.data, SP_JT_RULE_DUPLICATE);
    sp_buf_free(&big);
    char *d64 = nested(64, "[", "]", ""), *d65 = nested(65, "[", "]", "");
    ACCEPTS(d64);
    REJECTS(d65, SP_JT_RULE_DEPTH);
    free(d64);
    free(d65);
    char *deep = nested(100000, "[", "]", ""); /* no stack overflow */
    REJECTS(deep, SP_JT_RULE_DEPTH);
    free(deep);
    /* the densest inputs fit the node bound (two bytes per node) */
    const char *dense[] = {"0,", "[],", "[0],", "{},", "\"\",", "1,"};
    for (size_t d = 0; d < sizeof dense / sizeof dense[0]; d++) {
        sp_buf b = SP_BUF_INIT;
        sp_buf_append_char(&b, '[');
        for (int i = 0; i < 50000; i++)
            sp_buf_append_str(&b, dense[d]);
        sp_buf_append_str(&b, "0]");
        ACCEPTS(b.data);
        sp_buf_free(&b);
    }
    ACCEPTS("0");
    ACCEPTS("[0]");
    REJECTS("{} {}", SP_JT_RULE_SYNTAX);
    REJECTS("{\"a\":1}\n", SP_JT_RULE_SYNTAX); /* LF is not whitespace inside a line */

    sp_jt t = {0};
    const char *doc = "{\"n\":9007199254740991,\"big\":9007199254740992,\"neg\":-0,\"f\":1.0,"
                      "\"e\":1e2,\"k\\u0065y\":\"v\\\"\\n\",\"nul\\u0000k\":1}";
    CHECK(sp_jt_parse(&t, doc, strlen(doc)));
    uint64_t v;
    CHECK(sp_jt_uint53(&t, sp_jt_get(&t, 0, "n"), &v) && v == 9007199254740991ULL);
    CHECK(!sp_jt_uint53(&t, sp_jt_get(&t, 0, "big"), &v));
    CHECK(!sp_jt_uint53(&t, sp_jt_get(&t, 0, "neg"), &v));
    CHECK(!sp_jt_uint53(&t, sp_jt_get(&t, 0, "f"), &v));
    CHECK(!sp_jt_uint53(&t, sp_jt_get(&t, 0, "e"), &v));
    CHECK(sp_jt_get(&t, 0, "key") != 0);
    CHECK(sp_jt_str_eq(&t, sp_jt_get(&t, 0, "key"), "v\"\n"));
    json_t *j = sp_jt_to_json(&t, 0);
    CHECK(j && json_object_getn(j, "nul\0k", 5) != NULL);
    json_decref(j);
    sp_buf dump = SP_BUF_INIT;
    sp_jt_dump(&t, sp_jt_get(&t, 0, "key"), &dump, 1000);
    CHECK_STR(dump.data, "\"v\\\"\\n\"");
    sp_buf_free(&dump);
    sp_jt_free(&t);
}

/* ---- the reader ---- */

#define SID "step-0123456789ab"
#define START "{\"v\":1,\"type\":\"start\",\"stepId\":\"" SID "\"}\n"
#define RESULT "{\"v\":1,\"type\":\"result\",\"stepId\":\"" SID "\",\"status\":200,\"body\":{\"success\":true,\"summary\":\"s\"}}\n"

static void event_line(sp_buf *b, uint64_t seq, size_t text_len)
{
    sp_buf_printf(b, "{\"v\":1,\"type\":\"event\",\"stepId\":\"" SID "\",\"seq\":%llu,\"ts\":\"t\","
                     "\"kind\":\"thinking\",\"data\":{\"text\":\"",
                  (unsigned long long)seq);
    size_t at = b->len;
    sp_buf_append(b, "", 0);
    for (size_t i = 0; i < text_len; i++)
        sp_buf_append_char(b, 'a');
    (void)at;
    sp_buf_append_str(b, "\"}}\n");
}

static size_t event_overhead(uint64_t seq)
{
    sp_buf b = SP_BUF_INIT;
    event_line(&b, seq, 0);
    size_t n = b.len;
    sp_buf_free(&b);
    return n;
}

typedef struct feed_result {
    const char *rule;
    uint64_t line, events;
    bool done;
} feed_result;

static void count_event(void *ctx, const sp_jt *t, size_t rec, size_t data, uint64_t seq,
                        const char *line, size_t len)
{
    (void)t;
    (void)rec;
    (void)data;
    (void)line;
    (void)len;
    uint64_t *n = ctx;
    CHECK(seq == *n + 1);
    (*n)++;
}

static feed_result feed(const char *data, size_t len, size_t chunk)
{
    sp_agent_reader r;
    uint64_t seen = 0;
    CHECK(sp_agent_reader_init(&r, SID, count_event, &seen) == 0);
    for (size_t at = 0; at < len;) {
        size_t n = len - at < chunk ? len - at : chunk;
        if (!sp_agent_reader_feed(&r, data + at, n))
            break;
        at += n;
    }
    feed_result f = {r.rule, r.rule_line, r.events, r.state == SP_READER_DONE};
    uint64_t eof_line;
    if (!f.rule)
        f.rule = sp_agent_reader_eof_rule(&r, &eof_line);
    CHECK(seen == r.events);
    sp_agent_reader_free(&r);
    return f;
}

static void test_reader_bounds(void)
{
    /* 64 MiB exactly: start, events, result */
    const size_t max = SP_AGENT_STDOUT_MAX;
    sp_buf b = SP_BUF_INIT;
    sp_buf_append_str(&b, START);
    size_t tail = strlen(RESULT);
    uint64_t seq = 1;
    while (b.len + event_overhead(seq) + 200000 + tail < max)
        event_line(&b, seq++, 200000);
    size_t room = max - tail - b.len - event_overhead(seq);
    event_line(&b, seq, room);
    sp_buf_append_str(&b, RESULT);
    CHECK(sp_buf_ok(&b) && b.len == max);
    feed_result f = feed(b.data, b.len, 65536);
    CHECK(f.rule == NULL && f.done && f.events == seq);
    /* one byte more: the same stream with one more 'a' in the last event */
    sp_buf c = SP_BUF_INIT;
    sp_buf_append(&c, b.data, b.len - tail - 4);
    sp_buf_append_str(&c, "a\"}}\n");
    sp_buf_append_str(&c, RESULT);
    CHECK(c.len == max + 1);
    f = feed(c.data, c.len, 65536);
    CHECK_STR(f.rule, SP_RULE_STDOUT_TOO_LARGE);
    f = feed(c.data, c.len, 1 << 20);
    CHECK_STR(f.rule, SP_RULE_STDOUT_TOO_LARGE);
    sp_buf_free(&b);
    sp_buf_free(&c);

    /* an event line of exactly 256 KiB, then one byte more */
    b = (sp_buf)SP_BUF_INIT;
    sp_buf_append_str(&b, START);
    event_line(&b, 1, SP_AGENT_LINE_MAX - (event_overhead(1) - 1));
    sp_buf_append_str(&b, RESULT);
    f = feed(b.data, b.len, 4096);
    CHECK(f.rule == NULL && f.done);
    sp_buf_free(&b);
    b = (sp_buf)SP_BUF_INIT;
    sp_buf_append_str(&b, START);
    event_line(&b, 1, SP_AGENT_LINE_MAX - (event_overhead(1) - 1) + 1);
    sp_buf_append_str(&b, RESULT);
    f = feed(b.data, b.len, 4096);
    CHECK_STR(f.rule, SP_RULE_LINE_TOO_LONG);
    CHECK_INT(f.line, 2);
    sp_buf_free(&b);
}

static void test_reader_chunking(void)
{
    const char *streams[] = {
        "junk\n" START "{\"v\":1,\"type\":\"event\",\"stepId\":\"" SID
        "\",\"seq\":1,\"ts\":\"t\",\"kind\":\"tool_call\",\"data\":{\"name\":\"Read\",\"input\":{\"a\":[1,2]},\"call_id\":\"c\"}}\n" RESULT,
        START RESULT "x",
        START "{\"v\":1,\"type\":\"event\",\"stepId\":\"" SID "\",\"seq\":2,\"ts\":\"t\",\"kind\":\"thinking\",\"data\":{\"text\":\"x\"}}\n",
        START "\n" RESULT,
        START RESULT,
    };
    const char *rules[] = {NULL, SP_RULE_AFTER_RESULT, SP_RULE_SEQ, SP_RULE_BLANK_LINE, NULL};
    for (size_t s = 0; s < sizeof streams / sizeof streams[0]; s++) {
        size_t len = strlen(streams[s]);
        feed_result base = feed(streams[s], len, len);
        if (rules[s])
            CHECK_STR(base.rule, rules[s]);
        else
            CHECK(base.rule == NULL);
        for (size_t chunk = 1; chunk <= 17; chunk++) {
            feed_result f = feed(streams[s], len, chunk);
            CHECK((f.rule == NULL) == (base.rule == NULL));
            CHECK(f.rule == NULL || strcmp(f.rule, base.rule) == 0);
            CHECK(f.line == base.line && f.events == base.events && f.done == base.done);
        }
    }
    /* the preamble: exactly 64 KiB is ignored, one byte more is a violation */
    sp_buf b = SP_BUF_INIT;
    for (int i = 0; i < 64; i++) {
        for (int k = 0; k < 1023; k++)
            sp_buf_append_char(&b, 'p');
        sp_buf_append_char(&b, '\n');
    }
    for (int k = 0; k < 64; k++)
        sp_buf_append_char(&b, 'p');
    sp_buf_append_char(&b, '\n');
    sp_buf_append_str(&b, START RESULT);
    CHECK(feed(b.data, b.len, 999).rule == NULL);
    sp_buf c = SP_BUF_INIT;
    sp_buf_append_str(&c, "q");
    sp_buf_append(&c, b.data, b.len);
    CHECK_STR(feed(c.data, c.len, 999).rule, SP_RULE_PREAMBLE_TOO_LONG);
    sp_buf_free(&b);
    sp_buf_free(&c);
    /* a preamble line that looks like a record of another step is one */
    CHECK_STR(feed("{\"v\":1,\"type\":\"start\",\"stepId\":\"other\"}\n", 40, 5).rule, SP_RULE_STEP_ID);
    CHECK(feed("{\"type\":\"log\"}\n" START RESULT, strlen("{\"type\":\"log\"}\n" START RESULT), 3).rule == NULL);
}

/* ---- redaction ---- */

static bool has(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

static char *red(const sp_redactor *r, const char *s, int flags)
{
    size_t n;
    char *out = sp_redact(r, s, strlen(s), flags, &n);
    CHECK(out != NULL);
    return out;
}

static void test_redact(void)
{
    sp_redactor *r = sp_redactor_new();
    sp_error err = {0};
    const char *secret = "p@ss\"w/rd\n"; /* a quote, a slash and a trailing newline */
    CHECK(sp_redactor_add(r, secret, strlen(secret), &err) == 0);
    char *a = red(r, "x p@ss\"w/rd y", 0);
    CHECK_STR(a, "x " SP_REDACTED " y"); /* the trimmed form */
    free(a);
    a = red(r, "{\"k\":\"p@ss\\\"w/rd\\n\"}", 0);
    CHECK(!has(a, "p@ss") && has(a, SP_REDACTED)); /* JSON-escaped */
    free(a);
    a = red(r, "{\"k\":\"p@ss\\\"w\\/rd\"}", 0);
    CHECK(!has(a, "p@ss")); /* with "\/" */
    free(a);
    /* base64, standard and URL, and embedded in a longer blob at every alignment */
    const char *key = "sk_live_51HbTqVz8QxYwPzL0123456789abcdefABCDEF";
    CHECK(sp_redactor_add(r, key, strlen(key), &err) == 0);
    for (int pre = 0; pre < 3; pre++) {
        char plain[256], b64[512];
        snprintf(plain, sizeof plain, "%.*suser:%s:tail-bytes", pre, "zz", key);
        sp_base64_encode(plain, strlen(plain), false, b64);
        char *o = red(r, b64, 0);
        /* decode what is left: the key must not be recoverable */
        CHECK(has(o, SP_REDACTED));
        CHECK(strlen(o) < strlen(b64));
        free(o);
        sp_base64_encode(plain, strlen(plain), true, b64);
        o = red(r, b64, 0);
        CHECK(has(o, SP_REDACTED));
        free(o);
    }
    /* overlapping secrets leave nothing behind */
    sp_redactor *o2 = sp_redactor_new();
    CHECK(sp_redactor_add(o2, "abcdef", 6, &err) == 0);
    CHECK(sp_redactor_add(o2, "defghi", 6, &err) == 0);
    a = red(o2, "1abcdefghi2", 0);
    CHECK_STR(a, "1" SP_REDACTED "2");
    free(a);
    sp_redactor_free(o2);
    /* non-ASCII secret in Python's ensure_ascii form */
    sp_redactor *u = sp_redactor_new();
    CHECK(sp_redactor_add(u, "clé-secrète-😀", strlen("clé-secrète-😀"), &err) == 0);
    a = red(u, "\"cl\\u00e9-secr\\u00e8te-\\ud83d\\ude00\"", 0);
    CHECK(!has(a, "secr"));
    free(a);
    sp_redactor_free(u);
    /* pattern rules */
    a = red(NULL, "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\nafter",
            SP_REDACT_PATTERNS);
    CHECK(!has(a, "b3Blbn") && has(a, "after"));
    free(a);
    a = red(NULL, "curl -H 'Authorization: Bearer eyJhbGciOi.abc-def_ghi' x", SP_REDACT_PATTERNS);
    CHECK(!has(a, "eyJhbGciOi"));
    free(a);
    a = red(NULL, "{\"Authorization\": \"Basic dXNlcjpwYXNz\"}", SP_REDACT_PATTERNS);
    CHECK(!has(a, "dXNlcjpwYXNz"));
    free(a);
    a = red(NULL, "keys sk-proj-abcdefghijklmnopqrstuvwx ghp_abcdefghijklmnopqrstuvwxyz0123456789 "
                  "AKIAABCDEFGHIJKLMNOP xoxb-1234567890-abc task-force sk-short",
            SP_REDACT_PATTERNS);
    CHECK(!has(a, "abcdefghijklmnopqrstuvwx") && !has(a, "ghp_") && !has(a, "AKIA") &&
          !has(a, "xoxb-") && has(a, "task-force") && has(a, "sk-short"));
    free(a);
    a = red(NULL, "Bearer eyJhbGciOi", 0);
    CHECK(has(a, "eyJ")); /* patterns only when asked */
    free(a);
    /* JSON values and keys */
    json_t *v = json_pack("{s:s,s:[s],s:i}", "note", "p@ss\"w/rd", "list", "xp@ss\"w/rdx", "n", 1);
    bool collision = false;
    json_t *rv = sp_redact_json(r, v, &collision);
    char *text = json_dumps(rv, JSON_COMPACT);
    CHECK(text && !has(text, "p@ss") && has(text, SP_REDACTED));
    free(text);
    json_decref(rv);
    json_decref(v);
    v = json_pack("{s:i,s:i}", "a p@ss\"w/rd", 1, "a " SP_REDACTED, 2);
    CHECK(sp_redact_json(r, v, &collision) == NULL && collision);
    json_decref(v);
    /* bounds */
    char *huge = malloc(SP_REDACT_SECRET_MAX + 1);
    memset(huge, 'h', SP_REDACT_SECRET_MAX + 1);
    CHECK(sp_redactor_add(r, huge, SP_REDACT_SECRET_MAX + 1, &err) == -1);
    CHECK_STR(err.code, "agent.secret-too-large");
    CHECK(sp_redactor_add(r, huge, SP_REDACT_SECRET_MAX, &err) == 0);
    free(huge);
    sp_error_clear(&err);
    sp_redactor_free(r);
}

/* ---- stderr ---- */

static void test_stderr(void)
{
    sp_agent_stderr s;
    long long pid;
    CHECK(sp_agent_stderr_init(&s) == 0);
    sp_agent_stderr_feed(&s, "step-pid=", 9);
    sp_agent_stderr_feed(&s, "4242\nhello\n", 11);
    CHECK(sp_agent_stderr_pid(&s, &pid) && pid == 4242);
    sp_agent_stderr_free(&s);
    const char *bad[] = {"step-pid=04\n", "step-pid=\n", "step-pid=12a\n", "pid=3\n",
                         "step-pid=99999999999\n", "step-pid=5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(sp_agent_stderr_init(&s) == 0);
        sp_agent_stderr_feed(&s, bad[i], strlen(bad[i]));
        CHECK(!sp_agent_stderr_pid(&s, &pid));
        sp_agent_stderr_free(&s);
    }
    /* a secret straddling the 4 KiB cut, after a ring that wrapped */
    sp_redactor *r = sp_redactor_new();
    sp_error err = {0};
    char secret[2048];
    for (size_t i = 0; i < sizeof secret - 1; i++)
        secret[i] = (char)('A' + i % 26);
    secret[sizeof secret - 1] = '\0';
    CHECK(sp_redactor_add(r, secret, strlen(secret), &err) == 0);
    CHECK(sp_agent_stderr_init(&s) == 0);
    char filler[1000];
    memset(filler, 'f', sizeof filler);
    for (int i = 0; i < 100; i++) /* 100 KB: the ring wraps */
        sp_agent_stderr_feed(&s, filler, sizeof filler);
    sp_agent_stderr_feed(&s, secret, strlen(secret));
    for (int i = 0; i < 3; i++)
        sp_agent_stderr_feed(&s, "é", 2); /* multibyte near the end */
    for (int i = 0; i < 3; i++)
        sp_agent_stderr_feed(&s, filler, sizeof filler);
    size_t n;
    char *tail = sp_agent_stderr_tail(&s, r, &n);
    CHECK(tail && n <= SP_AGENT_STDERR_TAIL && sp_utf8_valid(tail, n));
    CHECK(tail && strstr(tail, SP_REDACTED) && !memmem(tail, n, secret + 1500, 16));
    CHECK(sp_agent_stderr_total(&s) == 100000 + strlen(secret) + 6 + 3000);
    free(tail);
    sp_agent_stderr_free(&s);
    sp_redactor_free(r);
}

/* ---- the request ---- */

static void expect_step_id(const char *node, const char *slug)
{
    char id[41], want[80], text[256];
    sp_agent_step_id("run_1", node, 3, id);
    snprintf(text, sizeof text, "run_1:%s:3", node);
    unsigned char md[32];
    SHA256((const unsigned char *)text, strlen(text), md);
    snprintf(want, sizeof want, "%s-%02x%02x%02x%02x%02x%02x", slug, md[0], md[1], md[2], md[3],
             md[4], md[5]);
    CHECK_STR(id, want);
    CHECK(sp_agent_step_id_valid(id));
}

static json_t *action_json(const char *extra)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{\"kind\":\"agent\",\"stepCli\":[\"spore-step\",\"--provider\",\"fake\"]%s}",
             extra ? extra : "");
    json_error_t je;
    json_t *v = json_loads(text, 0, &je);
    if (!v)
        fprintf(stderr, "action_json: %s\n", je.text);
    return v;
}

static void test_request(void)
{
    expect_step_id("Fix Bug!!", "fix-bug");
    expect_step_id("__x__", "x");
    expect_step_id("___", "step");
    expect_step_id("ÄÖÜ", "step");
    expect_step_id("aaaaaaaaaaaaaaaaaaaaaaaaaa-bbb", "aaaaaaaaaaaaaaaaaaaaaaaaaa"); /* cut lands on '-' */
    expect_step_id("A1B2C3D4E5F6G7H8I9J0K1L2M3N4O5P6", "a1b2c3d4e5f6g7h8i9j0k1l2m3n");

    sp_agent_action a;
    sp_error err = {0};
    json_t *aj = action_json(",\"allowedTools\":[\"SecretToolName\"],\"deniedTools\":[\"Bash\"],"
                             "\"systemPrompt\":\"sys\",\"timeoutMs\":\"1234\"");
    CHECK(sp_agent_action_parse("a", aj, &a, &err) == 0);
    json_t *input = json_pack("{s:s,s:{s:i}}", "query", "q", "context", "k", 1);
    sp_agent_request_in in = {&a, input, "run_1", "node", 1, "/spore/work",
                              "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                              "vendor=secret-state", NULL};
    sp_agent_request req;
    CHECK(sp_agent_request_build(&in, &req, &err) == 0);
    json_t *r = json_loads(req.json, 0, NULL);
    const char *keys[] = {"query", "context", "systemPrompt", "outputSchema", "timeout_ms",
                          "stepId", "runDir", "traceparent"};
    CHECK(json_object_size(r) == 8);
    for (size_t i = 0; i < 8; i++)
        CHECK(json_object_get(r, keys[i]) != NULL);
    CHECK(json_integer_value(json_object_get(r, "timeout_ms")) == 1234);
    CHECK(!strstr(req.json, "secret-state") && !strstr(req.json, "SecretToolName"));
    CHECK(has(req.warning, "allowedTools") && has(req.warning, "deniedTools") &&
          !has(req.warning, "SecretToolName") && !has(req.warning, "Bash"));
    char want_dir[80];
    snprintf(want_dir, sizeof want_dir, "/spore/work/%s", req.step_id);
    CHECK_STR(json_string_value(json_object_get(r, "runDir")), want_dir);
    json_decref(r);
    sp_agent_request_free(&req);
    /* no context, an invalid traceparent: neither is sent */
    json_decref(input);
    input = json_pack("{s:s}", "query", "q");
    in.input = input;
    in.traceparent = "00-00000000000000000000000000000000-b7ad6b7169203331-01";
    CHECK(sp_agent_request_build(&in, &req, &err) == 0);
    r = json_loads(req.json, 0, NULL);
    CHECK(json_object_size(r) == 6);
    json_decref(r);
    sp_agent_request_free(&req);
    /* the cap: 983,040 bytes fit, one more does not */
    json_decref(input);
    input = json_pack("{s:s}", "query", "");
    in.input = input;
    CHECK(sp_agent_request_build(&in, &req, &err) == 0);
    size_t base = req.len;
    sp_agent_request_free(&req);
    char *q = malloc(SP_AGENT_REQUEST_MAX);
    memset(q, 'q', SP_AGENT_REQUEST_MAX - base);
    q[SP_AGENT_REQUEST_MAX - base] = '\0';
    json_decref(input);
    input = json_pack("{s:s}", "query", q);
    in.input = input;
    CHECK(sp_agent_request_build(&in, &req, &err) == 0 && req.len == SP_AGENT_REQUEST_MAX);
    sp_agent_request_free(&req);
    q[SP_AGENT_REQUEST_MAX - base] = 'q';
    q[SP_AGENT_REQUEST_MAX - base + 1] = '\0';
    json_decref(input);
    input = json_pack("{s:s}", "query", q);
    in.input = input;
    CHECK(sp_agent_request_build(&in, &req, &err) == -1);
    CHECK_STR(err.code, "agent.request-too-large");
    free(q);
    /* bad inputs */
    const char *bad[] = {"[]", "{}", "{\"query\":1}", "{\"query\":\"q\",\"context\":[]}",
                         "{\"query\":\"q\",\"extra\":1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_decref(input);
        input = json_loads(bad[i], 0, NULL);
        in.input = input;
        CHECK(sp_agent_request_build(&in, &req, &err) == -1);
        CHECK_STR(err.code, "agent.input-invalid");
    }
    json_decref(input);
    sp_error_clear(&err);
    sp_agent_action_free(&a);
    json_decref(aj);
    CHECK(sp_agent_traceparent_valid("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
    CHECK(!sp_agent_traceparent_valid("00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"));
    CHECK(!sp_agent_traceparent_valid("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
    CHECK(!sp_agent_traceparent_valid("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"));

    /* message sizes */
    const char *argv[] = {"ab", "", NULL};
    const char *envp[] = {"K=v", "EMPTY=", NULL};
    CHECK(sp_agent_message_size_local(argv, envp, 10) == 10 + 3 + 1 + 4 + 7);
    /* protobuf: stdin 1+1+10; argv 1+1+2, 1+1+0; env {K,v}: inner 3+3, outer 1+1+6;
     * {EMPTY,""}: inner 7+2, outer 1+1+9 */
    CHECK(sp_agent_message_size_protobuf(argv, envp, 10) == 12 + 4 + 2 + 8 + 11);
    CHECK(sp_agent_message_size_protobuf(NULL, NULL, 200) == 1 + 2 + 200); /* a 2-byte varint */
}

/* ---- outcomes fixtures cannot reach ---- */

static void classify_end(sp_agent_end_kind kind, int code, const char *out, sp_agent_outcome *o)
{
    sp_agent_session s;
    sp_agent_session_cfg cfg = {SID, NULL, "n", 1, NULL, NULL};
    CHECK(sp_agent_session_init(&s, &cfg) == 0);
    sp_agent_session_stdout(&s, out, strlen(out));
    sp_agent_session_stderr(&s, "step-pid=7\nboom\n", 16);
    sp_agent_end end = {kind, code, 0, "x"};
    sp_agent_session_finish(&s, &end, NULL, true, o);
    sp_agent_session_free(&s);
}

static void test_outcomes(void)
{
    struct row {
        sp_agent_end_kind kind;
        int code;
        const char *out;
        sp_agent_status status;
        const char *want;
        bool retryable, taint;
        sp_breaker_effect breaker;
    } rows[] = {
        {SP_AGENT_SANDBOX_FAILED, 0, "", SP_AGENT_FAILURE, "agent.sandbox-unavailable", false, true, SP_BREAKER_NONE},
        {SP_AGENT_SPAWN_FAILED, 0, "", SP_AGENT_FAILURE, "agent.exec-unavailable", true, true, SP_BREAKER_FAILURE},
        {SP_AGENT_STOPPED, 0, START RESULT, SP_AGENT_UNKNOWN, "agent.stopped", true, true, SP_BREAKER_NONE},
        {SP_AGENT_TIMED_OUT, 0, START, SP_AGENT_FAILURE, "agent.deadline", false, true, SP_BREAKER_FAILURE},
        {SP_AGENT_TIMED_OUT, 0, START RESULT, SP_AGENT_FAILURE, "agent.protocol-violation", false, true, SP_BREAKER_NONE},
        {SP_AGENT_EXITED, 2, START, SP_AGENT_FAILURE, "agent.request-invalid", false, false, SP_BREAKER_FAILURE},
        {SP_AGENT_EXITED, 3, "", SP_AGENT_FAILURE, "agent.precondition-failed", false, false, SP_BREAKER_NONE},
        {SP_AGENT_EXITED, 0, START "{\"v\":1,\"type\":\"result\",\"stepId\":\"" SID "\",\"status\":502,\"body\":{\"error\":\"e\"}}\n",
         SP_AGENT_FAILURE, "agent.infra-transient", true, false, SP_BREAKER_FAILURE},
        {SP_AGENT_EXITED, 0, START RESULT, SP_AGENT_SUCCESS, "", false, false, SP_BREAKER_SUCCESS},
        {SP_AGENT_LOST, 0, START, SP_AGENT_FAILURE, "agent.result-unverified", false, true, SP_BREAKER_NONE},
        {SP_AGENT_SIGNALED, 15, START, SP_AGENT_FAILURE, "agent.killed", false, true, SP_BREAKER_NONE},
        {SP_AGENT_SIGNALED, 40, START, SP_AGENT_FAILURE, "agent.unexpected-exit", false, true, SP_BREAKER_NONE},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        sp_agent_outcome o;
        classify_end(rows[i].kind, rows[i].code, rows[i].out, &o);
        if (rows[i].kind == SP_AGENT_SIGNALED) { /* code carried as the signal */
            sp_agent_outcome_free(&o);
            sp_agent_session s;
            sp_agent_session_cfg cfg = {SID, NULL, "n", 1, NULL, NULL};
            sp_agent_session_init(&s, &cfg);
            sp_agent_session_stdout(&s, rows[i].out, strlen(rows[i].out));
            sp_agent_end end = {SP_AGENT_SIGNALED, 0, rows[i].code, ""};
            sp_agent_session_finish(&s, &end, NULL, true, &o);
            sp_agent_session_free(&s);
        }
        CHECK(o.status == rows[i].status);
        CHECK_STR(o.code, rows[i].want);
        CHECK(o.retryable == rows[i].retryable && o.taint == rows[i].taint);
        CHECK(o.breaker == rows[i].breaker);
        if (rows[i].code == 2 || rows[i].code == 3)
            CHECK(has(json_string_value(json_object_get(o.details, "stderrTail")), "boom"));
        sp_agent_outcome_free(&o);
    }
}

/* ---- the breaker ---- */

static void test_breaker(void)
{
    sp_breaker_table *t = sp_breaker_table_new();
    uint64_t now = 1000000;
    for (int i = 0; i < 4; i++)
        sp_breaker_record(t, "p", SP_BREAKER_FAILURE, now);
    CHECK(!sp_breaker_is_open(t, "p", now));
    sp_breaker_record(t, "p", SP_BREAKER_NONE, now);
    CHECK(!sp_breaker_is_open(t, "p", now));
    sp_breaker_record(t, "p", SP_BREAKER_FAILURE, now);
    CHECK(sp_breaker_is_open(t, "p", now));
    CHECK(!sp_breaker_is_open(t, "q", now));
    CHECK(sp_breaker_is_open(t, "p", now + SP_BREAKER_COOLDOWN_MS - 1));
    CHECK(!sp_breaker_is_open(t, "p", now + SP_BREAKER_COOLDOWN_MS));
    sp_breaker_record(t, "p", SP_BREAKER_FAILURE, now + SP_BREAKER_COOLDOWN_MS); /* half-open fails */
    CHECK(sp_breaker_is_open(t, "p", now + SP_BREAKER_COOLDOWN_MS + 1));
    sp_breaker_record(t, "p", SP_BREAKER_SUCCESS, now + SP_BREAKER_COOLDOWN_MS + 2);
    CHECK(!sp_breaker_is_open(t, "p", now + SP_BREAKER_COOLDOWN_MS + 3));
    /* an open breaker is never evicted by many other providers */
    for (int i = 0; i < 5; i++)
        sp_breaker_record(t, "open", SP_BREAKER_FAILURE, now);
    for (int i = 0; i < 3 * SP_BREAKER_PROVIDERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "other-%d", i);
        sp_breaker_record(t, name, SP_BREAKER_FAILURE, now);
    }
    CHECK(sp_breaker_is_open(t, "open", now + 1));
    sp_breaker_table_free(t);
}

/* ---- result.json ---- */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_result_file(void)
{
    char path[512], link[512];
    snprintf(path, sizeof path, "%s/result.json", TMP);
    sp_agent_result_file d;
    sp_agent_result_file_read(path, SID, &d);
    CHECK_STR(d.file, "absent");
    write_text(path, "{\"stepId\":\"" SID "\",\"status\":200,\"success\":true,\"summary\":\"SECRET-TEXT\","
                     "\"checks\":[],\"SECRET-KEY\":1}\n");
    sp_agent_result_file_read(path, SID, &d);
    CHECK_STR(d.file, "present");
    CHECK(d.status == 200 && d.success == 1 && d.step_id_match == 1 && d.other_keys == 1);
    CHECK(d.has[0] && d.has[1] && !d.has[2] && d.has[8]);
    json_t *j = sp_agent_result_file_json(&d);
    char *text = json_dumps(j, JSON_COMPACT);
    CHECK(text && !has(text, "SECRET")); /* no string from the file is ever copied */
    CHECK(json_object_size(j) == 6 + SP_AGENT_RESULT_FILE_KEYS);
    free(text);
    json_decref(j);
    write_text(path, "{\"stepId\":\"other\",\"status\":200,\"success\":true,\"summary\":\"s\"}");
    sp_agent_result_file_read(path, SID, &d);
    CHECK_STR(d.file, "invalid-record");
    CHECK(d.step_id_match == 0);
    write_text(path, "{\"stepId\":\"" SID "\",\"status\":502,\"error\":\"e\"}\r\n");
    sp_agent_result_file_read(path, SID, &d);
    CHECK_STR(d.file, "invalid-json"); /* CR outside a string */
    write_text(path, "{\"stepId\":\"" SID "\",\"status\":502,\"error\":\"e\"}");
    sp_agent_result_file_read(path, SID, &d);
    CHECK_STR(d.file, "present");
    CHECK(d.status == 502 && d.success == -1);
    int fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0 && ftruncate(fd, SP_AGENT_RESULT_FILE_MAX + 1) == 0);
    close(fd);
    sp_agent_result_file_read(path, SID, &d);
    CHECK_STR(d.file, "oversize");
    CHECK(d.bytes == SP_AGENT_RESULT_FILE_MAX + 1);
    snprintf(link, sizeof link, "%s/link.json", TMP);
    CHECK(symlink(path, link) == 0);
    sp_agent_result_file_read(link, SID, &d);
    CHECK_STR(d.file, "unreadable"); /* never followed */
    sp_agent_result_file_read(TMP, SID, &d);
    CHECK_STR(d.file, "unreadable");
    unlink(link);
    unlink(path);
}

/* ---- kept events ---- */

typedef struct kept {
    json_t *items;
} kept;

static void keep(void *ctx, const char *json, size_t len)
{
    kept *k = ctx;
    if (json)
        json_array_append_new(k->items, json_loadb(json, len, 0, NULL));
}

static void test_events(void)
{
    sp_redactor *r = sp_redactor_new();
    sp_error err = {0};
    char secret[100];
    memset(secret, 'S', 99);
    secret[99] = '\0';
    memcpy(secret, "sec-", 4);
    CHECK(sp_redactor_add(r, secret, 99, &err) == 0);
    kept k = {json_array()};
    sp_agent_session s;
    sp_agent_session_cfg cfg = {SID, r, "node-a", 2, keep, &k};
    CHECK(sp_agent_session_init(&s, &cfg) == 0);
    sp_agent_session_stdout(&s, START, strlen(START));
    for (int i = 1; i <= 60; i++) {
        sp_buf b = SP_BUF_INIT;
        if (i == 1) {
            sp_buf_printf(&b, "{\"v\":1,\"type\":\"event\",\"stepId\":\"" SID "\",\"seq\":1,"
                              "\"ts\":\"t\",\"kind\":\"tool_call\",\"data\":{\"name\":\"Read\","
                              "\"input\":{\"path\":\"/a\",\"n\":[1,2]}}}\n");
        } else {
            sp_buf_printf(&b, "{\"v\":1,\"type\":\"event\",\"stepId\":\"" SID "\",\"seq\":%d,"
                              "\"ts\":\"t\",\"kind\":\"thinking\",\"data\":{\"text\":\"", i);
            for (int c = 0; c < 200; c++) /* the secret straddles the 256-byte cut */
                sp_buf_append_char(&b, 'x');
            sp_buf_append_str(&b, secret);
            sp_buf_append_str(&b, " Bearer abcdefghijklmnop\"}}\n");
        }
        CHECK(sp_agent_session_stdout(&s, b.data, b.len));
        sp_buf_free(&b);
    }
    sp_agent_session_stdout(&s, RESULT, strlen(RESULT));
    sp_agent_end end = {SP_AGENT_EXITED, 0, 0, ""};
    sp_agent_outcome o;
    sp_agent_session_finish(&s, &end, NULL, true, &o);
    CHECK(o.status == SP_AGENT_SUCCESS);
    CHECK_INT(json_array_size(k.items), 51); /* 25 + 25 + the summary */
    json_t *first = json_array_get(k.items, 0);
    CHECK_STR(json_string_value(json_object_get(json_object_get(first, "data"), "input")),
              "{\"path\":\"/a\",\"n\":[1,2]}");
    CHECK_STR(json_string_value(json_object_get(first, "nodeId")), "node-a");
    CHECK(json_integer_value(json_object_get(json_array_get(k.items, 24), "seq")) == 25);
    CHECK(json_integer_value(json_object_get(json_array_get(k.items, 25), "seq")) == 36);
    CHECK(json_integer_value(json_object_get(json_array_get(k.items, 49), "seq")) == 60);
    json_t *summary = json_array_get(k.items, 50);
    CHECK(json_integer_value(json_object_get(summary, "events")) == 60);
    CHECK(json_integer_value(json_object_get(summary, "kept")) == 50);
    char *all = json_dumps(k.items, JSON_COMPACT);
    CHECK(all && !has(all, "sec-SSS") && !has(all, "abcdefghijklmnop"));
    for (size_t i = 1; i < 50; i++) {
        const char *text = json_string_value(
            json_object_get(json_object_get(json_array_get(k.items, i), "data"), "text"));
        CHECK(text && strlen(text) <= SP_AGENT_EVENT_TEXT_MAX && has(text, SP_REDACTED));
    }
    free(all);
    sp_agent_outcome_free(&o);
    sp_agent_session_free(&s);
    json_decref(k.items);
    sp_redactor_free(r);
}

/* ---- actions ---- */

static void expect_invalid(const char *extra, const char *fragment)
{
    json_t *a = action_json(extra);
    sp_error err = {0};
    CHECK(a && sp_agent_action_validate("act", a, &err) == -1);
    CHECK_STR(err.code, "action.invalid");
    if (!has(err.message, fragment))
        check_fail(__FILE__, __LINE__, "message \"%s\" lacks \"%s\"", err.message, fragment);
    sp_error_clear(&err);
    json_decref(a);
}

static void test_actions(void)
{
    json_t *ok = action_json(",\"sandbox\":{\"network\":\"host\",\"reuse\":\"run\",\"readable\":[\"data\"]},"
                             "\"secrets\":{\"docs-token\":{\"file\":\"/run/x\"}},\"mcpServers\":[{\"name\":\"docs\","
                             "\"url\":\"https://mcp/\",\"headers\":[{\"name\":\"Authorization\",\"source\":\"Secret\","
                             "\"secretName\":\"docs-token\"}]}],\"outcomes\":[\"ok\"],\"effect\":\"idempotent\"");
    sp_error err = {0};
    CHECK(ok && sp_agent_action_validate("act", ok, &err) == 0);
    json_decref(ok);
    expect_invalid(",\"shell\":true", "unknown member \"shell\"");
    expect_invalid(",\"outcomes\":[\"done\"]", "\"ok\"");
    expect_invalid(",\"mcpServers\":[{\"name\":\"docs\",\"url\":\"u\",\"headers\":[{\"name\":\"Authorization\","
                   "\"value\":\"Bearer PLAINVALUE\"}]}]",
                   "MCP server \"docs\"");
    json_t *plain = action_json(",\"mcpServers\":[{\"name\":\"docs\",\"url\":\"u\",\"headers\":[{\"name\":"
                                "\"Authorization\",\"value\":\"Bearer PLAINVALUE\"}]}]");
    CHECK(sp_agent_action_validate("act", plain, &err) == -1 && !has(err.message, "PLAINVALUE"));
    sp_error_clear(&err);
    json_decref(plain);
    expect_invalid(",\"mcpServers\":[{\"name\":\"docs\",\"url\":\"u\",\"headers\":[{\"name\":\"A\","
                   "\"source\":\"Secret\",\"secretName\":\"nope\"}]}]",
                   "not in \"secrets\"");
    expect_invalid(",\"sandbox\":{\"transport\":\"exec\"}", "sandbox.command");
    expect_invalid(",\"sandbox\":{\"readable\":[\"/etc\"]}", "provides itself");
    expect_invalid(",\"sandbox\":{\"writable\":[\"/proc/1\"]}", "provides itself");
    expect_invalid(",\"sandbox\":{\"writable\":[\"../up\"]}", "\"..\"");
    expect_invalid(",\"timeoutMs\":5", "timeoutMs");
    expect_invalid(",\"env\":{\"SPORE_X\":\"1\"}", "env");
    expect_invalid(",\"secrets\":{\"mcp\":{\"file\":\"/x\"}}", "reserved");
}

/* ---- the runner's refusals before anything runs ---- */

static bool ran(const char *marker) { return access(marker, F_OK) == 0; }

static void execute(const char *extra, const char *query, sp_agent_outcome *o, const char *marker)
{
    char text[8192];
    snprintf(text, sizeof text,
             "{\"kind\":\"agent\",\"stepCli\":[\"/usr/bin/touch\",\"%s\"],\"sandbox\":{\"transport\":"
             "\"exec\",\"command\":[\"/usr/bin/env\"]%s}",
             marker, extra);
    json_t *action = json_loads(text, 0, NULL);
    CHECK(action != NULL);
    json_t *input = json_pack("{s:s}", "query", query);
    sp_agent_exec_in in = {"act", action, input, "run_units", "node", 1, TMP, NULL, NULL, NULL,
                           NULL, NULL};
    sp_agent_execute(&in, o);
    json_decref(action);
    json_decref(input);
}

static void test_refusals(void)
{
    char marker[512], secret_path[512], big_path[512];
    snprintf(marker, sizeof marker, "%s/ran", TMP);
    snprintf(secret_path, sizeof secret_path, "%s/secret", TMP);
    snprintf(big_path, sizeof big_path, "%s/big-secret", TMP);
    write_text(secret_path, "hunter2-hunter2\n");
    FILE *f = fopen(big_path, "w");
    for (unsigned i = 0; f && i < SP_REDACT_SECRET_MAX + 1; i++)
        fputc('b', f);
    if (f)
        fclose(f);
    struct {
        const char *extra, *code;
    } cases[] = {
        {"},\"mcpServers\":[{\"name\":\"docs\",\"url\":\"u\",\"headers\":[{\"name\":\"X\",\"value\":\"PLAINVALUE\"}]}]",
         "agent.mcp-plain-headers"},
        {",\"maxMessageBytes\":\"100\"}", "agent.exec-message-too-large"},
        {"},\"secrets\":{\"BIG\":{\"file\":\"BIGPATH\"}}", "agent.secret-too-large"},
        {"},\"secrets\":{\"GONE\":{\"file\":\"/nonexistent/secret\"}}", "agent.secret-unavailable"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char extra[2048];
        snprintf(extra, sizeof extra, "%s", cases[i].extra);
        char *p = strstr(extra, "BIGPATH");
        if (p) {
            char rest[2048];
            snprintf(rest, sizeof rest, "%s", p + 7);
            snprintf(p, sizeof extra - (size_t)(p - extra), "%s%s", big_path, rest);
        }
        sp_agent_outcome o;
        execute(extra, "q", &o, marker);
        CHECK_STR(o.code, cases[i].code);
        CHECK(!ran(marker) && !o.retryable);
        json_t *j = sp_agent_outcome_json(&o);
        char *all = json_dumps(j, JSON_COMPACT);
        CHECK(all && !has(all, "PLAINVALUE"));
        free(all);
        json_decref(j);
        sp_agent_outcome_free(&o);
    }
    sp_agent_outcome o;
    execute("}", "", &o, marker);
    /* a real exec with the prefix: touch ran and exited 0 without protocol output */
    CHECK(ran(marker));
    CHECK_STR(o.code, "agent.protocol-violation");
    CHECK_STR(json_string_value(json_object_get(o.details, "rule")), SP_RULE_NO_START);
    sp_agent_outcome_free(&o);
    unlink(marker);
    /* the breaker opens after five +F and refuses without running */
    for (int i = 0; i < 5; i++)
        sp_breaker_record(sp_breaker_global(), "flaky-provider", SP_BREAKER_FAILURE,
                          sp_mono_ms());
    execute("},\"provider\":\"flaky-provider\"", "q", &o, marker);
    CHECK_STR(o.code, "agent.breaker-open");
    CHECK(!ran(marker));
    sp_agent_outcome_free(&o);
    /* a step CLI that does not exist on this machine (local transport) */
    json_t *action = json_pack("{s:s,s:[s]}", "kind", "agent", "stepCli", "no-such-step-cli-xyz");
    json_t *input = json_pack("{s:s}", "query", "q");
    sp_agent_exec_in in = {"act", action, input, "run_units", "node", 1, TMP, NULL, NULL, NULL,
                           NULL, NULL};
    sp_agent_execute(&in, &o);
    CHECK_STR(o.code, "agent.step-cli-missing");
    sp_agent_outcome_free(&o);
    json_decref(action);
    json_decref(input);
    /* bad input */
    input = json_pack("{s:i}", "query", 1);
    action = json_pack("{s:s,s:[s]}", "kind", "agent", "stepCli", "/usr/bin/true");
    in.action = action;
    in.input = input;
    sp_agent_execute(&in, &o);
    CHECK_STR(o.code, "agent.input-invalid");
    sp_agent_outcome_free(&o);
    json_decref(action);
    json_decref(input);
}

int main(void)
{
    snprintf(TMP, sizeof TMP, "%s/spore-agent-units-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(TMP))
        return 2;
    test_jsontape();
    test_reader_bounds();
    test_reader_chunking();
    test_redact();
    test_stderr();
    test_request();
    test_outcomes();
    test_breaker();
    test_result_file();
    test_events();
    test_actions();
    test_refusals();
    sp_sandbox_remove_tree(TMP);
    return check_done("agent units");
}
