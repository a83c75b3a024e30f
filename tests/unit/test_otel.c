/*
 * test_otel.c - the tracer's pure parts (src/otel/, docs/tracing.md): the
 * OTEL_* settings with their defaults and bounds, the trace identities
 * against vectors computed outside spore (Python's hashlib over the digest
 * framing), and notes encoded as OTLP/JSON spans with the right parents.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "otel/config.h"
#include "otel/otel.h"
#include "otel/span.h"

/* ---- a fake environment ---- */
static const char *const *fake_env;

static const char *lookup(const char *name)
{
    for (size_t i = 0; fake_env[i]; i += 2)
        if (strcmp(fake_env[i], name) == 0)
            return fake_env[i + 1];
    return NULL;
}

static otel_config_rc read_env(const char *const *env, otel_config *c, sp_error *err)
{
    fake_env = env;
    sp_error_clear(err);
    return otel_config_read(lookup, c, err);
}

static otel_config cfg; /* large (header room): not on the stack */

static void test_config(void)
{
    sp_error err = {0};
    const char *none[] = {NULL};
    CHECK_INT(read_env(none, &cfg, &err), OTEL_CONFIG_OFF);

    const char *base[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318", NULL};
    CHECK_INT(read_env(base, &cfg, &err), OTEL_CONFIG_ON);
    CHECK_STR(cfg.endpoint, "http://h:4318/v1/traces");
    CHECK_STR(cfg.service, "spore");
    CHECK_INT(cfg.queue_max, 2048);
    CHECK_INT(cfg.batch_max, 512);
    CHECK_INT(cfg.delay_ms, 5000);
    CHECK_INT(cfg.export_ms, 30000);
    CHECK_INT(cfg.request_ms, 10000);
    CHECK_INT(cfg.nheaders, 0);

    const char *slash[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318/", NULL};
    CHECK_INT(read_env(slash, &cfg, &err), OTEL_CONFIG_ON);
    CHECK_STR(cfg.endpoint, "http://h:4318/v1/traces");

    const char *traces[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318",
                            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://t/custom", NULL};
    CHECK_INT(read_env(traces, &cfg, &err), OTEL_CONFIG_ON);
    CHECK_STR(cfg.endpoint, "https://t/custom"); /* as is */

    const char *off1[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_SDK_DISABLED", "TRUE", NULL};
    CHECK_INT(read_env(off1, &cfg, &err), OTEL_CONFIG_OFF);
    const char *off2[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_TRACES_EXPORTER", "none", NULL};
    CHECK_INT(read_env(off2, &cfg, &err), OTEL_CONFIG_OFF);
    const char *on[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_SDK_DISABLED", "false", NULL};
    CHECK_INT(read_env(on, &cfg, &err), OTEL_CONFIG_ON);

    const char *grpc[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", NULL};
    CHECK_INT(read_env(grpc, &cfg, &err), OTEL_CONFIG_INVALID);
    CHECK_STR(err.code, "otel.config-invalid");
    const char *ftp[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://h", NULL};
    CHECK_INT(read_env(ftp, &cfg, &err), OTEL_CONFIG_INVALID);

    const char *bsp[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_BSP_MAX_QUEUE_SIZE", "10",
                         "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "64", "OTEL_BSP_SCHEDULE_DELAY", "7",
                         "OTEL_BSP_EXPORT_TIMEOUT", "9", "OTEL_EXPORTER_OTLP_TIMEOUT", "11",
                         "OTEL_SERVICE_NAME", "svc", NULL};
    CHECK_INT(read_env(bsp, &cfg, &err), OTEL_CONFIG_ON);
    CHECK_INT(cfg.queue_max, 10);
    CHECK_INT(cfg.batch_max, 10); /* never above the queue */
    CHECK_INT(cfg.delay_ms, 7);
    CHECK_INT(cfg.export_ms, 9);
    CHECK_INT(cfg.request_ms, 11);
    CHECK_STR(cfg.service, "svc");
    const char *junk[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_BSP_SCHEDULE_DELAY", "5s", NULL};
    CHECK_INT(read_env(junk, &cfg, &err), OTEL_CONFIG_INVALID);
    const char *huge[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_BSP_MAX_QUEUE_SIZE", "99999999", NULL};
    CHECK_INT(read_env(huge, &cfg, &err), OTEL_CONFIG_INVALID);
    const char *zero[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_BSP_MAX_QUEUE_SIZE", "0", NULL};
    CHECK_INT(read_env(zero, &cfg, &err), OTEL_CONFIG_INVALID);
    sp_error_clear(&err);
}

static void test_headers(void)
{
    sp_error err = {0};
    const char *ok[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_EXPORTER_OTLP_HEADERS",
                        " api-key = a%20b%2Cc , x=1,,", NULL};
    CHECK_INT(read_env(ok, &cfg, &err), OTEL_CONFIG_ON);
    CHECK_INT(cfg.nheaders, 2);
    CHECK_STR(cfg.headers[0], "api-key: a b,c");
    CHECK_STR(cfg.headers[1], "x: 1");
    const char *traces[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_EXPORTER_OTLP_HEADERS",
                            "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "b=2", NULL};
    CHECK_INT(read_env(traces, &cfg, &err), OTEL_CONFIG_ON);
    CHECK_INT(cfg.nheaders, 1);
    CHECK_STR(cfg.headers[0], "b: 2");
    /* a value that would split the request, a key that is no token, no '=', a bad escape */
    const char *bad[] = {"a=1%0d%0aEvil: yes", "bad key=1", "novalue", "a=%zz", "a=%4", NULL};
    for (size_t i = 0; bad[i]; i++) {
        const char *env[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_EXPORTER_OTLP_HEADERS",
                             bad[i], NULL};
        CHECK_INT(read_env(env, &cfg, &err), OTEL_CONFIG_INVALID);
        CHECK_STR(err.code, "otel.config-invalid");
    }
    char many[40 * 4 + 1] = "";
    for (int i = 0; i < 40; i++)
        strcat(many, "k=v,");
    const char *env[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_EXPORTER_OTLP_HEADERS", many, NULL};
    CHECK_INT(read_env(env, &cfg, &err), OTEL_CONFIG_INVALID); /* over OTEL_HEADERS_MAX */
    sp_error_clear(&err);
}

#define RUN "run_00000000000000000000000000000001"
#define INV "inv_00000000000000000000000000000002"

static void test_ids(void)
{
    char trace[SP_TRACE_ID_HEX + 1], span[SP_SPAN_ID_HEX + 1], tp[64];
    sp_obs_trace_id("default", RUN, trace);
    CHECK_STR(trace, "ff7ba6d8abccb2e82434c8d0d38a2ed6");
    sp_obs_run_span("default", RUN, span);
    CHECK_STR(span, "ff011f3880e09829");
    sp_obs_turn_span("default", RUN, 3, span);
    CHECK_STR(span, "90f7c8bfd43c4c87");
    sp_obs_attempt_span(INV ".1", span);
    CHECK_STR(span, "b1d9d1ef1964bdaf");
    sp_obs_traceparent("default", RUN, INV ".1", tp, sizeof tp);
    CHECK_STR(tp, "00-ff7ba6d8abccb2e82434c8d0d38a2ed6-b1d9d1ef1964bdaf-01");
    sp_obs_trace_id("other", RUN, trace); /* tenants do not share traces */
    CHECK(strcmp(trace, "ff7ba6d8abccb2e82434c8d0d38a2ed6") != 0);
}

static const char *attr(const json_t *span, const char *key)
{
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(span, "attributes"), i, a)
    {
        if (strcmp(json_string_value(json_object_get(a, "key")), key) == 0) {
            json_t *v = json_object_get(a, "value");
            json_t *s = json_object_get(v, "stringValue");
            return json_string_value(s ? s : json_object_get(v, "intValue"));
        }
    }
    return NULL;
}

static otel_note note;
static otel_parents parents;

static void test_spans(void)
{
    memset(&note, 0, sizeof note);
    note.kind = OTEL_NOTE_ACTIVATION;
    sp_obs_activation *a = &note.u.activation;
    strcpy(a->tenant, "default");
    strcpy(a->run_id, RUN);
    a->sequence = 3;
    strcpy(a->event_kind, "signal.received");
    a->accepted_at_ms = 1700000000123;
    a->committed_ns = 1700000000100000000; /* before the acceptance: clamped */
    strcpy(a->status, "running");
    strcpy(a->body, "{\"data\":null,\"name\":\"approval\",\"outcome\":\"approved\"}");
    a->nscheduled = 1;
    strcpy(a->scheduled[0], INV);
    json_t *turn = otel_span(&note, &parents);
    CHECK_STR(json_string_value(json_object_get(turn, "spanId")), "90f7c8bfd43c4c87");
    CHECK_STR(json_string_value(json_object_get(turn, "parentSpanId")), "ff011f3880e09829");
    CHECK_STR(json_string_value(json_object_get(turn, "traceId")), "ff7ba6d8abccb2e82434c8d0d38a2ed6");
    CHECK_STR(json_string_value(json_object_get(turn, "startTimeUnixNano")), "1700000000100000000");
    CHECK_STR(json_string_value(json_object_get(turn, "endTimeUnixNano")), "1700000000100000000");
    CHECK_INT(json_integer_value(json_object_get(turn, "kind")), 1);
    json_t *ev = json_array_get(json_object_get(turn, "events"), 0);
    CHECK_STR(json_string_value(json_object_get(ev, "name")), "signal.received");
    CHECK_STR(json_string_value(json_object_get(ev, "timeUnixNano")), "1700000000123000000");
    CHECK_STR(attr(ev, "spore.signal.name"), "approval");
    CHECK_STR(attr(ev, "spore.signal.outcome"), "approved");
    CHECK_STR(attr(turn, "spore.event.sequence"), "3");
    json_decref(turn);

    memset(&note, 0, sizeof note);
    note.kind = OTEL_NOTE_ATTEMPT;
    sp_obs_attempt *t = &note.u.attempt;
    strcpy(t->tenant, "default");
    strcpy(t->run_id, RUN);
    strcpy(t->invocation_id, INV);
    strcpy(t->attempt_id, INV ".1");
    strcpy(t->node_id, "work");
    strcpy(t->action_id, "work");
    strcpy(t->kind, "command");
    strcpy(t->effect, "idempotent");
    t->attempt = 1;
    t->end = SP_OBS_SETTLED;
    strcpy(t->outcome, "failure");
    strcpy(t->error_code, "command.exit");
    t->start_ns = 5;
    t->end_ns = 9;
    json_t *step = otel_span(&note, &parents);
    CHECK_STR(json_string_value(json_object_get(step, "spanId")), "b1d9d1ef1964bdaf");
    CHECK_STR(json_string_value(json_object_get(step, "parentSpanId")), "90f7c8bfd43c4c87");
    CHECK_STR(attr(step, "spore.error.code"), "command.exit");
    CHECK_STR(attr(step, "spore.attempt"), "1");
    CHECK_STR(attr(step, "spore.effect"), "idempotent");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(step, "status"), "code")), 2);
    json_decref(step);
    strcpy(t->invocation_id, "inv_unknown"); /* scheduled where this process did not see */
    step = otel_span(&note, &parents);
    CHECK_STR(json_string_value(json_object_get(step, "parentSpanId")), "ff011f3880e09829");
    json_decref(step);

    memset(&note, 0, sizeof note);
    note.kind = OTEL_NOTE_RUN;
    strcpy(note.u.run.tenant, "default");
    strcpy(note.u.run.run_id, RUN);
    strcpy(note.u.run.status, "completed");
    note.u.run.created_at_ms = 1000;
    note.u.run.ended_ns = 2000000000;
    json_t *run = otel_span(&note, &parents);
    CHECK(json_object_get(run, "parentSpanId") == NULL);
    CHECK_STR(json_string_value(json_object_get(run, "startTimeUnixNano")), "1000000000");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(run, "status"), "code")), 1);

    size_t len = 0;
    char *body = otel_request("svc", json_pack("[o]", run), &len);
    json_t *req = json_loads(body, 0, NULL);
    json_t *rs = json_array_get(json_object_get(req, "resourceSpans"), 0);
    json_t *svc = json_array_get(json_object_get(json_object_get(rs, "resource"), "attributes"), 0);
    CHECK_STR(json_string_value(json_object_get(svc, "key")), "service.name");
    CHECK_STR(json_string_value(json_object_get(json_object_get(svc, "value"), "stringValue")), "svc");
    json_t *spans = json_object_get(json_array_get(json_object_get(rs, "scopeSpans"), 0), "spans");
    CHECK_INT(json_array_size(spans), 1);
    CHECK_INT(len, strlen(body));
    json_decref(req);
    free(body);
}

/* A port nothing listens on (bound, then closed). */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* The bounded queue: past OTEL_BSP_MAX_QUEUE_SIZE a note is dropped and
 * counted at once (the caller never waits); a batch whose export fails is
 * counted; after the stop every note is counted as unsent. */
static void test_queue(void)
{
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", closed_port());
    const char *env[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint, "OTEL_BSP_MAX_QUEUE_SIZE", "2",
                         "OTEL_BSP_SCHEDULE_DELAY", "3600000", "OTEL_BSP_EXPORT_TIMEOUT", "5000",
                         NULL};
    fake_env = env;
    sp_error err = {0};
    sp_otel *o = sp_otel_start(lookup, &err);
    CHECK(o != NULL);
    if (!o)
        return;
    const sp_engine_observer *obs = sp_otel_observer(o);
    sp_obs_run r = {.tenant = "default", .run_id = RUN, .status = "completed", .ended_ns = 1};
    for (int i = 0; i < 5; i++)
        obs->run_ended(obs->ctx, &r);
    obs->lost(obs->ctx, 4); /* notes the engine could not keep */
    sp_otel_stats st;
    sp_otel_stop(o, &st);
    /* the thread may take a full batch out between two notes: how many were
     * dropped for a full queue varies, that every one is counted does not */
    CHECK(st.dropped_full >= 4 && st.dropped_full <= 3 + 4);
    CHECK_INT(st.exported, 0);
    CHECK(st.dropped_failed >= 2); /* batches of at most 2, refused */
    CHECK(st.exports_failed >= 1);
    CHECK_INT(st.dropped_full + st.dropped_failed + st.dropped_unsent, 9);
    CHECK_INT(st.dropped, 9);
    obs->run_ended(obs->ctx, &r); /* after the stop */
    sp_otel_stop(o, &st);
    CHECK_INT(st.dropped, 10); /* counted as unsent */
    sp_otel_free(o);

    const char *off[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint, "OTEL_TRACES_EXPORTER", "none", NULL};
    fake_env = off;
    CHECK(sp_otel_start(lookup, &err) == NULL);
    CHECK_STR(err.code, "");
    const char *bad[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318", NULL};
    fake_env = bad;
    CHECK(sp_otel_start(lookup, &err) == NULL);
    CHECK_STR(err.code, "otel.config-invalid");
    sp_error_clear(&err);
}

int main(void)
{
    test_config();
    test_headers();
    test_ids();
    test_spans();
    test_queue();
    return check_done("test_otel");
}
