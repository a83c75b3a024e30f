/*
 * config.h - the exporter's settings from the OpenTelemetry SDK's
 * environment variables (docs/tracing.md "Environment").
 *
 * What it is for: one place that reads OTEL_* variables, applies the
 * specification's defaults and bounds every value (numbers, header count
 * and sizes, endpoint length).
 *
 * What it must never do: accept a header that could split an HTTP request
 * (CR, LF, NUL, a key outside the token characters), or an unbounded value.
 */
#ifndef SPORE_OTEL_CONFIG_H
#define SPORE_OTEL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "otel/otel.h"

#define OTEL_ENDPOINT_MAX 2048
#define OTEL_HEADERS_MAX 32        /* headers in OTEL_EXPORTER_OTLP_HEADERS */
#define OTEL_HEADER_MAX 4096       /* one "key: value" line */
#define OTEL_HEADERS_TEXT_MAX 16384 /* the variable itself */
#define OTEL_SERVICE_MAX 256
#define OTEL_QUEUE_MAX 65536u      /* OTEL_BSP_MAX_QUEUE_SIZE is capped here */

typedef struct otel_config {
    char endpoint[OTEL_ENDPOINT_MAX + 1]; /* the full URL of the traces endpoint */
    char service[OTEL_SERVICE_MAX + 1];   /* OTEL_SERVICE_NAME, default "spore" */
    char headers[OTEL_HEADERS_MAX][OTEL_HEADER_MAX + 1]; /* "Key: value" */
    size_t nheaders;
    uint32_t queue_max;     /* OTEL_BSP_MAX_QUEUE_SIZE: 2048 */
    uint32_t batch_max;     /* OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 512 (<= queue_max) */
    uint64_t delay_ms;      /* OTEL_BSP_SCHEDULE_DELAY: 5000 */
    uint64_t export_ms;     /* OTEL_BSP_EXPORT_TIMEOUT: 30000 (the bound of a flush) */
    uint64_t request_ms;    /* OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT: 10000 (one request) */
} otel_config;

typedef enum otel_config_rc {
    OTEL_CONFIG_ON,      /* *out is set */
    OTEL_CONFIG_OFF,     /* tracing is off: no endpoint, disabled, exporter none */
    OTEL_CONFIG_INVALID, /* err: otel.config-invalid */
} otel_config_rc;

otel_config_rc otel_config_read(sp_otel_getenv env, otel_config *out, sp_error *err);

/* Tracing is asked for (an endpoint is set, not disabled): a few getenv
 * calls, before anything is allocated. */
bool otel_config_wanted(sp_otel_getenv env);

#endif
