/*
 * fake.c - spore-step's `fake` provider: plays a scenario file, so the
 * whole agent path runs and is tested without a model or a network.
 *
 * A scenario is a JSON object (at most 4 MiB):
 *   "requireSecrets": ["NAME", ...]  each needs $NAME_FILE readable, else exit 3
 *   "stdoutPreamble": ["line", ...]   non-protocol lines before `start`
 *   "stderr": ["line", ...]           written to stderr after `start`
 *   "events": [{"kind", "data", "delayMs"?}, ...]
 *   "delayMs": n                      before the ending
 *   then one ending: "result": {body of a 200: success, summary, ...}, or
 *   "failure": "timeout" (a 502 after the events), "internal-error" (exit 1),
 *   "precondition" (exit 3), "stdout-closed" (result.json, then the stdout
 *   result line cannot be written: exit 4), "hang", "flood" (events without
 *   end), "malformed-line" (a junk line after the events, then the result)
 *   "failureMessage": text for stderr (exit 1 / 3) or the 502 error.
 * If the request's timeout_ms passes while events are played, the provider
 * answers 502 "timed out", as a real provider would.
 *
 * Every string of events, stderr lines and the result may hold
 * {{query}}, {{stepId}}, {{secret:NAME}} (the content of $NAME_FILE) and
 * {{secret64:NAME}} (the same in base64): the last two are how tests make a
 * step print its own credentials everywhere. So may "failureMessage".
 *
 * Must never read a secret it was not pointed at by $NAME_FILE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/jsontape.h"
#include "base/base64.h"
#include "base/buf.h"
#include "step/step.h"

#define SCENARIO_MAX (4u * 1024 * 1024)
#define SECRET_MAX (64u * 1024)

/* A secret the runner mounted: $NAME_FILE, else /var/secrets/NAME (names
 * that are not environment names, like MCP secrets). */
static char *secret_of(const char *name)
{
    char var[256], path[300];
    snprintf(var, sizeof var, "%s_FILE", name);
    const char *file = getenv(var);
    size_t len;
    if (file)
        return step_read_bounded(file, SECRET_MAX, &len);
    if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return NULL;
    snprintf(path, sizeof path, "/var/secrets/%s", name);
    return step_read_bounded(path, SECRET_MAX, &len);
}

/* {{query}}, {{stepId}}, {{secret:NAME}} in one string. */
static json_t *expand_string(const step_request *r, const char *s)
{
    sp_buf b = SP_BUF_INIT;
    while (*s) {
        const char *open = strstr(s, "{{");
        const char *close = open ? strstr(open, "}}") : NULL;
        if (!open || !close) {
            sp_buf_append_str(&b, s);
            break;
        }
        sp_buf_append(&b, s, (size_t)(open - s));
        size_t n = (size_t)(close - open - 2);
        char name[200];
        snprintf(name, sizeof name, "%.*s", (int)(n < 199 ? n : 199), open + 2);
        if (strcmp(name, "query") == 0) {
            sp_buf_append_str(&b, json_string_value(r->query));
        } else if (strcmp(name, "stepId") == 0) {
            sp_buf_append_str(&b, r->step_id);
        } else if (strncmp(name, "secret:", 7) == 0) {
            char *v = secret_of(name + 7);
            if (v) {
                sp_buf_append_str(&b, v);
                free(v);
            }
        } else if (strncmp(name, "secret64:", 9) == 0) {
            char *v = secret_of(name + 9);
            char *enc = v ? malloc(sp_base64_len(strlen(v), false) + 1) : NULL;
            if (enc) {
                sp_base64_encode(v, strlen(v), false, enc);
                sp_buf_append_str(&b, enc);
            }
            free(enc);
            free(v);
        } else {
            sp_buf_append(&b, open, (size_t)(close - open + 2));
        }
        s = close + 2;
    }
    sp_buf_append(&b, "", 0);
    json_t *v = sp_buf_ok(&b) ? json_string(b.data) : NULL;
    sp_buf_free(&b);
    return v;
}

static json_t *expand(const step_request *r, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return expand_string(r, json_string_value(v));
    case JSON_ARRAY: {
        json_t *a = json_array();
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item) json_array_append_new(a, expand(r, item));
        return a;
    }
    case JSON_OBJECT: {
        json_t *o = json_object();
        const char *key;
        json_t *item;
        json_object_foreach((json_t *)v, key, item) json_object_set_new(o, key, expand(r, item));
        return o;
    }
    default:
        return json_deep_copy(v);
    }
}

static const char *message_of(const json_t *sc, const char *fallback)
{
    const json_t *m = json_object_get(sc, "failureMessage");
    return json_is_string(m) ? json_string_value(m) : fallback;
}

/* The failure message with its templates expanded (static storage). */
static const char *expanded_message(const step_request *r, const json_t *sc, const char *fallback)
{
    static char text[8192];
    json_t *m = expand_string(r, message_of(sc, fallback));
    snprintf(text, sizeof text, "%s", json_string_value(m) ? json_string_value(m) : fallback);
    json_decref(m);
    return text;
}

static int timed_out(const step_request *r, step_out *out, const char *why)
{
    json_t *body = json_pack("{s:s}", "error", why);
    return step_finish(r, out, 502, body, false);
}

static int require_secrets(const json_t *sc)
{
    const json_t *names = json_object_get(sc, "requireSecrets");
    for (size_t i = 0; i < json_array_size(names); i++) {
        const char *name = json_string_value(json_array_get(names, i));
        char *v = name ? secret_of(name) : NULL;
        if (!v) {
            fprintf(stderr, "spore-step: credentials missing: %s_FILE is not a readable file\n",
                    name ? name : "?");
            return STEP_EXIT_PRECONDITION;
        }
        free(v);
    }
    return 0;
}

static int flood(const step_request *r, step_out *out)
{
    json_t *data = json_pack("{s:s}", "text", "flooding");
    for (;;) {
        (void)r;
        if (!step_emit_event(out, "thinking", json_incref(data))) {
            json_decref(data);
            return STEP_EXIT_INTERNAL;
        }
    }
}

int step_fake_run(const step_request *r, const char *scenario_path, step_out *out)
{
    if (!scenario_path) {
        fprintf(stderr, "spore-step: the fake provider needs --scenario <file>\n");
        return STEP_EXIT_PRECONDITION;
    }
    size_t len;
    char *text = step_read_bounded(scenario_path, SCENARIO_MAX, &len);
    sp_jt t = {0};
    t.allow_lf = true;
    json_t *sc = text && sp_jt_parse(&t, text, len) ? sp_jt_to_json(&t, 0) : NULL;
    sp_jt_free(&t);
    free(text);
    if (!json_is_object(sc)) {
        fprintf(stderr, "spore-step: the scenario %s cannot be read as a JSON object\n",
                scenario_path);
        json_decref(sc);
        return STEP_EXIT_PRECONDITION;
    }
    int rc = require_secrets(sc);
    const json_t *preamble = json_object_get(sc, "stdoutPreamble");
    for (size_t i = 0; !rc && i < json_array_size(preamble); i++)
        step_emit_raw(out, json_string_value(json_array_get(preamble, i)) ?: "");
    const char *failure = json_string_value(json_object_get(sc, "failure"));
    if (!rc && failure && strcmp(failure, "precondition") == 0) {
        fprintf(stderr, "spore-step: %s\n", expanded_message(r, sc, "precondition failed"));
        rc = STEP_EXIT_PRECONDITION;
    }
    if (rc) {
        json_decref(sc);
        return rc;
    }
    if (!step_emit_start(out)) {
        json_decref(sc);
        return STEP_EXIT_INTERNAL;
    }
    const json_t *lines = json_object_get(sc, "stderr");
    for (size_t i = 0; i < json_array_size(lines); i++) {
        json_t *l = expand(r, json_array_get(lines, i));
        fprintf(stderr, "%s\n", json_string_value(l) ?: "");
        json_decref(l);
    }
    fflush(stderr);
    long long deadline = step_now_ms() + (long long)r->timeout_ms;
    const json_t *events = json_object_get(sc, "events");
    for (size_t i = 0; i < json_array_size(events); i++) {
        const json_t *e = json_array_get(events, i);
        step_sleep_ms(json_integer_value(json_object_get(e, "delayMs")));
        if (step_now_ms() > deadline) {
            json_decref(sc);
            return timed_out(r, out, "the model did not answer before timeout_ms");
        }
        const char *kind = json_string_value(json_object_get(e, "kind"));
        if (!step_emit_event(out, kind ? kind : "thinking", expand(r, json_object_get(e, "data")))) {
            json_decref(sc);
            return STEP_EXIT_INTERNAL;
        }
    }
    step_sleep_ms(json_integer_value(json_object_get(sc, "delayMs")));
    if (failure) {
        int code = -1;
        if (strcmp(failure, "timeout") == 0)
            code = timed_out(r, out, expanded_message(r, sc, "the model provider timed out"));
        else if (strcmp(failure, "internal-error") == 0) {
            fprintf(stderr, "spore-step: %s\n", expanded_message(r, sc, "internal error"));
            code = STEP_EXIT_INTERNAL;
        } else if (strcmp(failure, "hang") == 0) {
            for (;;)
                pause();
        } else if (strcmp(failure, "flood") == 0) {
            code = flood(r, out);
        } else if (strcmp(failure, "malformed-line") == 0) {
            step_emit_raw(out, "this line is not a protocol record");
        } else if (strcmp(failure, "stdout-closed") != 0) {
            fprintf(stderr, "spore-step: unknown failure mode in the scenario\n");
            code = STEP_EXIT_PRECONDITION;
        }
        if (code >= 0) {
            json_decref(sc);
            return code;
        }
    }
    const json_t *result = json_object_get(sc, "result");
    json_t *body = json_is_object(result) ? expand(r, result)
                                          : json_pack("{s:b,s:s}", "success", 1, "summary", "done");
    bool close_first = failure && strcmp(failure, "stdout-closed") == 0;
    json_decref(sc);
    return step_finish(r, out, 200, body, close_first);
}
