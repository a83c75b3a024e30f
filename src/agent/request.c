/*
 * request.c - the step request, stepId, runDir and message sizes (see
 * request.h). Never sends a member outside the closed StepRequest.
 */
#define _GNU_SOURCE
#include "agent/request.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/reader.h"
#include "json/json.h"

void sp_agent_step_id(const char *run_id, const char *node_id, uint32_t attempt, char out[41])
{
    char slug[28];
    size_t n = 0;
    bool dash = false;
    for (const char *p = node_id; *p && n < sizeof slug - 1; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            if (dash && n > 0)
                slug[n++] = '-';
            dash = false;
            if (n < sizeof slug - 1)
                slug[n++] = c;
        } else {
            dash = true; /* a run becomes one '-'; leading ones are trimmed */
        }
    }
    /* cut to 27 happened above; trim trailing '-' (none can be leading) */
    while (n > 0 && slug[n - 1] == '-')
        n--;
    slug[n] = '\0';
    if (n == 0)
        strcpy(slug, "step");
    char text[1024];
    int len = snprintf(text, sizeof text, "%s:%s:%u", run_id, node_id, (unsigned)attempt);
    unsigned char md[SHA256_DIGEST_LENGTH];
    if (len >= (int)sizeof text) {
        size_t need = (size_t)len + 1;
        char *big = malloc(need);
        if (big) {
            snprintf(big, need, "%s:%s:%u", run_id, node_id, (unsigned)attempt);
            SHA256((const unsigned char *)big, (size_t)len, md);
            free(big);
        } else {
            memset(md, 0, sizeof md);
        }
    } else {
        SHA256((const unsigned char *)text, (size_t)len, md);
    }
    static const char hex[] = "0123456789abcdef";
    char h[13];
    for (int i = 0; i < 6; i++) {
        h[2 * i] = hex[md[i] >> 4];
        h[2 * i + 1] = hex[md[i] & 15];
    }
    h[12] = '\0';
    snprintf(out, 41, "%s-%s", slug, h);
}

static bool lower_hex(const char *s, size_t n, bool *all_zero)
{
    *all_zero = true;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
        if (c != '0')
            *all_zero = false;
    }
    return true;
}

bool sp_agent_traceparent_valid(const char *tp)
{
    bool zero;
    if (!tp || strlen(tp) != 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-')
        return false;
    if (tp[0] != '0' || tp[1] != '0') /* version 00: the only one whose layout we know */
        return false;
    if (!lower_hex(tp + 3, 32, &zero) || zero)
        return false;
    if (!lower_hex(tp + 36, 16, &zero) || zero)
        return false;
    return lower_hex(tp + 53, 2, &zero);
}

static int input_invalid(sp_error *err, const char *what)
{
    return sp_fail(err, "agent.input-invalid",
                   "an agent step's input must be {\"query\": string, \"context\"?: object}: %s",
                   what);
}

static int check_input(const json_t *input, sp_error *err)
{
    if (!json_is_object(input))
        return input_invalid(err, "it is not an object");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)input, key, v)
    {
        if (strcmp(key, "query") != 0 && strcmp(key, "context") != 0)
            return input_invalid(err, "it has other members");
    }
    if (!json_is_string(json_object_get(input, "query")))
        return input_invalid(err, "query is missing or not a string");
    const json_t *ctx = json_object_get(input, "context");
    if (ctx && !json_is_object(ctx))
        return input_invalid(err, "context is not an object");
    return 0;
}

int sp_agent_request_build(const sp_agent_request_in *in, sp_agent_request *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    if (check_input(in->input, err))
        return -1;
    const sp_agent_action *a = in->action;
    if (in->step_id && sp_agent_step_id_valid(in->step_id))
        snprintf(out->step_id, sizeof out->step_id, "%s", in->step_id);
    else
        sp_agent_step_id(in->run_id, in->node_id, in->attempt, out->step_id);
    size_t root = strlen(in->work_root);
    while (root > 1 && in->work_root[root - 1] == '/')
        root--;
    if (asprintf(&out->run_dir, "%.*s/%s", (int)root, root == 1 ? "" : in->work_root,
                 out->step_id) < 0) {
        out->run_dir = NULL;
        return sp_oom(err);
    }
    if (a->has_allowed_tools || a->has_denied_tools)
        snprintf(out->warning, sizeof out->warning,
                 "%s%s%s not sent to the step CLI (not part of the step request)",
                 a->has_allowed_tools ? "allowedTools" : "",
                 a->has_allowed_tools && a->has_denied_tools ? ", " : "",
                 a->has_denied_tools ? "deniedTools" : "");
    (void)in->tracestate; /* never sent (agent-step.md §2) */
    json_t *req = json_pack("{s:O,s:s,s:O,s:I,s:s,s:s}", "query",
                            json_object_get(in->input, "query"), "systemPrompt",
                            a->system_prompt, "outputSchema", a->output_schema, "timeout_ms",
                            (json_int_t)a->timeout_ms, "stepId", out->step_id, "runDir",
                            out->run_dir);
    if (!req)
        return sp_oom(err);
    const json_t *ctx = json_object_get(in->input, "context");
    if (ctx)
        json_object_set(req, "context", (json_t *)ctx);
    if (sp_agent_traceparent_valid(in->traceparent))
        json_object_set_new(req, "traceparent", json_string(in->traceparent));
    sp_buf b = SP_BUF_INIT;
    b.limit = SP_AGENT_REQUEST_MAX;
    sp_error enc = {0};
    int rc = sp_json_encode(req, &b, &enc);
    json_decref(req);
    if (rc) {
        bool large = b.over_limit || strcmp(enc.code, "canonical.too-large") == 0;
        sp_error_clear(&enc);
        sp_buf_free(&b);
        sp_agent_request_free(out);
        if (large)
            return sp_fail(err, "agent.request-too-large",
                           "the step request would be larger than %u bytes", SP_AGENT_REQUEST_MAX);
        return input_invalid(err, "it cannot be encoded");
    }
    out->json = sp_buf_take(&b, &out->len);
    return 0;
}

void sp_agent_request_free(sp_agent_request *r)
{
    free(r->run_dir);
    free(r->json);
    r->run_dir = NULL;
    r->json = NULL;
    r->len = 0;
}

uint64_t sp_agent_message_size_local(const char *const *argv, const char *const *envp,
                                     size_t stdin_len)
{
    uint64_t n = stdin_len;
    for (const char *const *a = argv; a && *a; a++)
        n += strlen(*a) + 1;
    for (const char *const *e = envp; e && *e; e++)
        n += strlen(*e) + 1;
    return n;
}

static uint64_t varint_len(uint64_t v)
{
    uint64_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint64_t field_len(uint64_t payload) { return 1 + varint_len(payload) + payload; }

uint64_t sp_agent_message_size_protobuf(const char *const *argv, const char *const *envp,
                                        size_t stdin_len)
{
    uint64_t n = field_len(stdin_len);
    for (const char *const *a = argv; a && *a; a++)
        n += field_len(strlen(*a));
    for (const char *const *e = envp; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        uint64_t k = eq ? (uint64_t)(eq - *e) : strlen(*e);
        uint64_t v = eq ? strlen(eq + 1) : 0;
        n += field_len(field_len(k) + field_len(v)); /* a map entry: key 1, value 2 */
    }
    return n;
}
