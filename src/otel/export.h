/*
 * export.h - one OTLP/HTTP POST of a JSON body with libcurl.
 *
 * What it is for: the exporter thread's only contact with the network:
 * connect and total timeouts, the configured headers, a response read and
 * thrown away up to a bound.
 *
 * What it must never do: wait past its timeout, keep more than
 * OTEL_RESPONSE_MAX bytes of a response, follow redirects, or print a
 * header value (headers carry credentials).
 */
#ifndef SPORE_OTEL_EXPORT_H
#define SPORE_OTEL_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "otel/config.h"

#define OTEL_RESPONSE_MAX (64u * 1024)

typedef struct otel_http otel_http;

otel_http *otel_http_new(const otel_config *c);
void otel_http_free(otel_http *h);

/* POST body to the endpoint, at most timeout_ms, and no longer than
 * *abort_at_ms (CLOCK_MONOTONIC ms; 0: no such bound) - a stop that runs out
 * of time ends a request in progress: true when the collector answered 2xx. */
bool otel_http_post(otel_http *h, const char *body, size_t len, uint64_t timeout_ms,
                    const _Atomic uint64_t *abort_at_ms);

#endif
