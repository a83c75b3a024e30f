/*
 * config.c - OTEL_* environment variables into an otel_config (config.h).
 *
 * What it must never do: read past a bound, accept a number with trailing
 * garbage, or let a header value carry a line break into the request.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "otel/config.h"

static const char *var(sp_otel_getenv env, const char *name)
{
    const char *v = env(name);
    return v && *v ? v : NULL;
}

/* A decimal number of at most `max`; `fallback` when unset. */
static int number(sp_otel_getenv env, const char *name, uint64_t fallback, uint64_t max,
                  uint64_t *out, sp_error *err)
{
    const char *v = var(env, name);
    *out = fallback;
    if (!v)
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (!isdigit((unsigned char)v[0]) || *end || errno || n > max)
        return sp_fail(err, "otel.config-invalid", "%s must be a number from 0 to %llu", name,
                       (unsigned long long)max);
    *out = n;
    return 0;
}

static bool truthy(const char *v) { return v && strcasecmp(v, "true") == 0; }

/* OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, else OTEL_EXPORTER_OTLP_ENDPOINT
 * + "/v1/traces" (one slash between them). */
static otel_config_rc endpoint(sp_otel_getenv env, otel_config *c, sp_error *err)
{
    const char *traces = var(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    const char *base = var(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
    if (!traces && !base)
        return OTEL_CONFIG_OFF;
    int n;
    if (traces) {
        n = snprintf(c->endpoint, sizeof c->endpoint, "%s", traces);
    } else {
        size_t len = strlen(base);
        bool slash = len && base[len - 1] == '/';
        n = snprintf(c->endpoint, sizeof c->endpoint, "%s%s", base,
                     slash ? "v1/traces" : "/v1/traces");
    }
    if (n < 0 || (size_t)n >= sizeof c->endpoint)
        return sp_fail(err, "otel.config-invalid", "the OTLP endpoint is longer than %d bytes",
                       OTEL_ENDPOINT_MAX),
               OTEL_CONFIG_INVALID;
    if (strncmp(c->endpoint, "http://", 7) != 0 && strncmp(c->endpoint, "https://", 8) != 0)
        return sp_fail(err, "otel.config-invalid",
                       "the OTLP endpoint must be an http:// or https:// URL"),
               OTEL_CONFIG_INVALID;
    return OTEL_CONFIG_ON;
}

static int hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = (char)tolower((unsigned char)ch);
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* Trim, percent-decode (W3C baggage form) into out; false on a bad escape,
 * a control character or an overflow. */
static bool decode(const char *s, size_t len, char *out, size_t cap)
{
    while (len && isspace((unsigned char)*s))
        s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '%') {
            if (i + 2 >= len)
                return false;
            int hi = hex_digit(s[i + 1]), lo = hex_digit(s[i + 2]);
            if (hi < 0 || lo < 0)
                return false;
            ch = hi * 16 + lo;
            i += 2;
        }
        if (ch < 0x20 || ch == 0x7f || o + 1 >= cap)
            return false;
        out[o++] = (char)ch;
    }
    out[o] = 0;
    return true;
}

static bool token(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
            return false;
    return true;
}

/* One "key=value" member into "Key: value". */
static int header(const char *member, size_t len, otel_config *c, sp_error *err)
{
    const char *eq = memchr(member, '=', len);
    char key[256], value[OTEL_HEADER_MAX];
    if (!eq || !decode(member, (size_t)(eq - member), key, sizeof key) || !token(key) ||
        !decode(eq + 1, len - (size_t)(eq - member) - 1, value, sizeof value))
        return sp_fail(err, "otel.config-invalid",
                       "OTEL_EXPORTER_OTLP_HEADERS: member %zu is not key=value (a token key, "
                       "a value without control characters, at most %d bytes)",
                       c->nheaders + 1, OTEL_HEADER_MAX);
    if (c->nheaders == OTEL_HEADERS_MAX)
        return sp_fail(err, "otel.config-invalid", "OTEL_EXPORTER_OTLP_HEADERS: more than %d",
                       OTEL_HEADERS_MAX);
    int n = snprintf(c->headers[c->nheaders], sizeof c->headers[0], "%s: %s", key, value);
    if (n < 0 || (size_t)n >= sizeof c->headers[0])
        return sp_fail(err, "otel.config-invalid", "OTEL_EXPORTER_OTLP_HEADERS: a header over %d bytes",
                       OTEL_HEADER_MAX);
    c->nheaders++;
    return 0;
}

/* OTEL_EXPORTER_OTLP_TRACES_HEADERS, else OTEL_EXPORTER_OTLP_HEADERS:
 * comma-separated key=value. */
static int headers(sp_otel_getenv env, otel_config *c, sp_error *err)
{
    const char *name = "OTEL_EXPORTER_OTLP_TRACES_HEADERS";
    const char *v = var(env, name);
    if (!v)
        v = var(env, name = "OTEL_EXPORTER_OTLP_HEADERS");
    if (!v)
        return 0;
    if (strlen(v) > OTEL_HEADERS_TEXT_MAX)
        return sp_fail(err, "otel.config-invalid", "%s is longer than %d bytes", name,
                       OTEL_HEADERS_TEXT_MAX);
    while (*v) {
        const char *comma = strchr(v, ',');
        size_t len = comma ? (size_t)(comma - v) : strlen(v);
        bool blank = true;
        for (size_t i = 0; i < len; i++)
            blank = blank && isspace((unsigned char)v[i]);
        if (!blank && header(v, len, c, err))
            return -1;
        v += len + (comma ? 1 : 0);
    }
    return 0;
}

static int numbers(sp_otel_getenv env, otel_config *c, sp_error *err)
{
    uint64_t queue, batch, request;
    const char *timeout = var(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
                              ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
                              : "OTEL_EXPORTER_OTLP_TIMEOUT";
    if (number(env, "OTEL_BSP_MAX_QUEUE_SIZE", 2048, OTEL_QUEUE_MAX, &queue, err) ||
        number(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, OTEL_QUEUE_MAX, &batch, err) ||
        number(env, "OTEL_BSP_SCHEDULE_DELAY", 5000, 3600000, &c->delay_ms, err) ||
        number(env, "OTEL_BSP_EXPORT_TIMEOUT", 30000, 3600000, &c->export_ms, err) ||
        number(env, timeout, 10000, 3600000, &request, err))
        return -1;
    if (queue == 0 || batch == 0)
        return sp_fail(err, "otel.config-invalid",
                       "OTEL_BSP_MAX_QUEUE_SIZE and OTEL_BSP_MAX_EXPORT_BATCH_SIZE must be > 0");
    c->queue_max = (uint32_t)queue;
    c->batch_max = (uint32_t)(batch < queue ? batch : queue); /* the spec's rule */
    c->request_ms = request ? request : 10000;
    return 0;
}

bool otel_config_wanted(sp_otel_getenv env)
{
    const char *exporter = var(env, "OTEL_TRACES_EXPORTER");
    return !truthy(var(env, "OTEL_SDK_DISABLED")) && !(exporter && strcmp(exporter, "none") == 0) &&
           (var(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || var(env, "OTEL_EXPORTER_OTLP_ENDPOINT"));
}

otel_config_rc otel_config_read(sp_otel_getenv env, otel_config *c, sp_error *err)
{
    if (!otel_config_wanted(env))
        return OTEL_CONFIG_OFF;
    memset(c, 0, sizeof *c);
    const char *exporter = var(env, "OTEL_TRACES_EXPORTER");
    if (exporter && strcmp(exporter, "otlp") != 0)
        return sp_fail(err, "otel.config-invalid",
                       "OTEL_TRACES_EXPORTER=%.64s: spore exports otlp or none", exporter),
               OTEL_CONFIG_INVALID;
    const char *protocol = var(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
    if (!protocol)
        protocol = var(env, "OTEL_EXPORTER_OTLP_PROTOCOL");
    if (protocol && strcmp(protocol, "http/json") != 0)
        return sp_fail(err, "otel.config-invalid",
                       "OTLP protocol %.64s: spore exports http/json only", protocol),
               OTEL_CONFIG_INVALID;
    otel_config_rc rc = endpoint(env, c, err);
    if (rc != OTEL_CONFIG_ON)
        return rc;
    const char *service = var(env, "OTEL_SERVICE_NAME");
    snprintf(c->service, sizeof c->service, "%s", service ? service : "spore");
    if (headers(env, c, err) || numbers(env, c, err))
        return OTEL_CONFIG_INVALID;
    return OTEL_CONFIG_ON;
}
