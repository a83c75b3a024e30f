/*
 * http.c - spore-step's one HTTP operation: a POST through libcurl to the
 * model gateway's Unix socket (local steps: the sandbox has no network) or
 * straight to baseUrl (the exec transport, where the environment's proxy
 * settings apply), with a time bound and a size bound on the reply. No
 * redirects, http and https only, no signals.
 *
 * Must never follow a redirect, keep reading past max_bytes, or put the
 * key anywhere but the one header line the wire names.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "step/step.h"

typedef struct sink {
    sp_buf *body;
    size_t max;
    bool too_large;
} sink;

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    sink *s = ctx;
    size_t len = size * n;
    if (s->body->len + len > s->max) {
        s->too_large = true;
        return 0; /* curl stops: CURLE_WRITE_ERROR */
    }
    sp_buf_append(s->body, data, len);
    return sp_buf_ok(s->body) ? len : 0;
}

static char *url_of(const step_config *c, const char *path)
{
    sp_buf u = SP_BUF_INIT;
    if (c->gateway[0])
        sp_buf_printf(&u, "http://spore-gateway%s", path);
    else
        sp_buf_printf(&u, "%s%s", c->base_url, path);
    return sp_buf_take(&u, NULL);
}

static void classify(CURLcode rc, const sink *s, CURL *h, step_http_reply *out)
{
    if (rc == CURLE_OK) {
        out->end = STEP_HTTP_DONE;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
        return;
    }
    if (s->too_large || rc == CURLE_FILESIZE_EXCEEDED)
        out->end = STEP_HTTP_TOO_LARGE;
    else if (rc == CURLE_OPERATION_TIMEDOUT)
        out->end = STEP_HTTP_TIMEOUT;
    else
        out->end = STEP_HTTP_TRANSPORT;
    snprintf(out->error, sizeof out->error, "%s", curl_easy_strerror(rc));
}

void step_http_post(const step_config *c, const char *path, const char *const *headers,
                    const char *body, size_t len, long long timeout_ms, size_t max_bytes,
                    step_http_reply *out)
{
    memset(out, 0, sizeof *out);
    CURL *h = curl_easy_init();
    char *url = url_of(c, path);
    struct curl_slist *list = NULL;
    for (const char *const *l = headers; l && *l; l++)
        list = curl_slist_append(list, *l);
    list = curl_slist_append(list, "Expect:");
    if (!h || !url || !list) {
        out->end = STEP_HTTP_TRANSPORT;
        snprintf(out->error, sizeof out->error, "out of memory");
    } else {
        sink s = {&out->body, max_bytes, false};
        curl_easy_setopt(h, CURLOPT_URL, url);
        if (c->gateway[0]) {
            curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->gateway);
            curl_easy_setopt(h, CURLOPT_NOPROXY, "*"); /* the socket is the only way out */
        }
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max_bytes);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
        curl_easy_setopt(h, CURLOPT_USERAGENT, "spore-step");
        classify(curl_easy_perform(h), &s, h, out);
    }
    curl_slist_free_all(list);
    free(url);
    if (h)
        curl_easy_cleanup(h);
}

void step_http_reply_free(step_http_reply *r)
{
    sp_buf_free(&r->body);
}
