/*
 * export.c - OTLP/HTTP POSTs (export.h) over one reused libcurl handle.
 *
 * What it must never do: wait past the request's timeout, keep more than
 * OTEL_RESPONSE_MAX bytes of an answer, follow a redirect, use a signal
 * (CURLOPT_NOSIGNAL: the worker's own handlers stay its own), or print
 * headers.
 */
#include <curl/curl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "base/clock.h"
#include "otel/export.h"

struct otel_http {
    CURL *curl;
    struct curl_slist *headers;
    size_t answered; /* bytes of the current response */
    const _Atomic uint64_t *abort_at_ms;
};

/* libcurl's progress hook: non-zero ends the transfer (a stop ran out of time). */
static int progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                    curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    otel_http *h = ctx;
    uint64_t at = atomic_load(h->abort_at_ms);
    return at && sp_mono_ms() >= at;
}

/* The response is read and thrown away; past the bound the transfer ends. */
static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
    (void)data;
    otel_http *h = ctx;
    size_t len = size * n;
    h->answered += len;
    return h->answered > OTEL_RESPONSE_MAX ? 0 : len;
}

otel_http *otel_http_new(const otel_config *c)
{
    otel_http *h = calloc(1, sizeof *h);
    if (!h || !(h->curl = curl_easy_init())) {
        free(h);
        return NULL;
    }
    struct curl_slist *list = curl_slist_append(NULL, "Content-Type: application/json");
    for (size_t i = 0; list && i < c->nheaders; i++) {
        struct curl_slist *more = curl_slist_append(list, c->headers[i]);
        if (!more) {
            curl_slist_free_all(list);
            list = NULL;
        }
        list = more;
    }
    if (!list) {
        otel_http_free(h);
        return NULL;
    }
    h->headers = list;
    CURL *k = h->curl;
    curl_easy_setopt(k, CURLOPT_URL, c->endpoint);
    curl_easy_setopt(k, CURLOPT_HTTPHEADER, h->headers);
    curl_easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(k, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(k, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(k, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(k, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(k, CURLOPT_XFERINFODATA, h);
    return h;
}

void otel_http_free(otel_http *h)
{
    if (!h)
        return;
    curl_slist_free_all(h->headers);
    if (h->curl)
        curl_easy_cleanup(h->curl);
    free(h);
}

bool otel_http_post(otel_http *h, const char *body, size_t len, uint64_t timeout_ms,
                    const _Atomic uint64_t *abort_at_ms)
{
    h->abort_at_ms = abort_at_ms;
    CURL *k = h->curl;
    long ms = timeout_ms ? (long)timeout_ms : 1;
    h->answered = 0;
    curl_easy_setopt(k, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(k, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(k, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(k, CURLOPT_CONNECTTIMEOUT_MS, ms);
    if (curl_easy_perform(k) != CURLE_OK)
        return false;
    long code = 0;
    curl_easy_getinfo(k, CURLINFO_RESPONSE_CODE, &code);
    return code >= 200 && code < 300;
}
