/*
 * test_ui_unit.c - the web view's pure parts (src/ui/): the --listen
 * address and whether it is loopback, HTML escaping and URL encoding,
 * bounded blocks that cut on a character boundary and say so, the routes
 * (and their refusals), the compiled-in assets.
 */
#define _GNU_SOURCE /* memmem */
#include <string.h>

#include "check.h"
#include "ui/html.h"
#include "ui/internal.h"

static void test_listen(void)
{
    ui_listen l;
    sp_error err = {0};
    CHECK(ui_parse_listen("127.0.0.1:8233", &l, &err) == 0);
    CHECK_STR(l.host, "127.0.0.1");
    CHECK_INT(l.port, 8233);
    CHECK(l.loopback && !l.ipv6);
    CHECK(ui_parse_listen("127.8.9.10:0", &l, &err) == 0 && l.loopback && l.port == 0);
    CHECK(ui_parse_listen("0.0.0.0:80", &l, &err) == 0 && !l.loopback);
    CHECK(ui_parse_listen("192.168.1.2:80", &l, &err) == 0 && !l.loopback);
    CHECK(ui_parse_listen("[::1]:8233", &l, &err) == 0 && l.loopback && l.ipv6);
    CHECK_STR(l.host, "::1");
    CHECK(ui_parse_listen("[::]:8233", &l, &err) == 0 && !l.loopback);
    const char *bad[] = {"localhost:8233", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536",
                         "127.0.0.1:-1", "127.0.0.1:+80", ":8233", "[::1]8233", "1.2.3:80",
                         "127.0.0.1:80x", NULL};
    for (const char **p = bad; *p; p++) {
        memset(&err, 0, sizeof err);
        CHECK(ui_parse_listen(*p, &l, &err) != 0);
        CHECK_STR(err.code, "usage.invalid-value");
    }
}

static void test_escaping(void)
{
    sp_buf b = SP_BUF_INIT;
    ui_esc(&b, "<a href=\"x\">&'</a>");
    CHECK_STR(b.data, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    sp_buf_reset(&b);
    ui_url_enc(&b, "a b/c?d=e&f\xc3\xa9");
    CHECK_STR(b.data, "a%20b%2Fc%3Fd%3De%26f%C3%A9");
    sp_buf_reset(&b);
    ui_text_tail(&b, "\xc3\xa9\xc3\xa9<x>", 6); /* cut inside the first é: starts at the second */
    CHECK(strstr(b.data, "2 more bytes not shown") != NULL);
    CHECK(strstr(b.data, "<pre class=\"log\">\xc3\xa9&lt;x&gt;</pre>") != NULL);
    sp_buf_reset(&b);
    json_t *v = json_pack("{s:s}", "k", "<script>");
    ui_json_block(&b, v, 1000);
    CHECK(strstr(b.data, "&lt;script&gt;") != NULL && !strstr(b.data, "<script>"));
    sp_buf_reset(&b);
    ui_json_block(&b, v, 5);
    CHECK(strstr(b.data, "more bytes not shown") != NULL);
    json_decref(v);
    sp_buf_free(&b);
}

static unsigned route(ui_request *r, const char *method, const char *path, sp_error *err)
{
    memset(r, 0, sizeof *r);
    memset(err, 0, sizeof *err);
    return ui_route_request(r, method, path, err);
}

static void test_routes(void)
{
    ui_request r;
    sp_error err;
    CHECK(route(&r, "GET", "/", &err) == 0 && r.route == UI_ROUTE_RUNS);
    CHECK(route(&r, "GET", "/runs", &err) == 0 && r.route == UI_ROUTE_RUNS);
    CHECK(route(&r, "GET", "/runs/run_1a", &err) == 0 && r.route == UI_ROUTE_RUN);
    CHECK_STR(r.run_id, "run_1a");
    CHECK(route(&r, "GET", "/runs/run_1a/stream", &err) == 0 && r.route == UI_ROUTE_STREAM);
    CHECK(route(&r, "POST", "/runs/run_1a/resolve", &err) == 0 && r.route == UI_ROUTE_ACTION &&
          r.action == UI_ACTION_RESOLVE);
    CHECK(route(&r, "GET", "/assets/ui.css", &err) == 0 && r.route == UI_ROUTE_ASSET);
    CHECK_STR(r.asset, "ui.css");
    CHECK_INT(route(&r, "GET", "/runs/run_1a/signal", &err), 405);
    CHECK_STR(err.code, "ui.method-not-allowed");
    CHECK_INT(route(&r, "POST", "/runs/run_1a", &err), 405);
    CHECK_INT(route(&r, "DELETE", "/runs", &err), 405);
    CHECK_INT(route(&r, "GET", "/runs/a%20b", &err), 400);
    CHECK_STR(err.code, "usage.invalid-value");
    CHECK_INT(route(&r, "GET", "/runs/run_1a/nope", &err), 404);
    CHECK_STR(err.code, "ui.not-found");
    CHECK_INT(route(&r, "GET", "/etc/passwd", &err), 404);
    char longer[UI_URL_MAX + 16] = "/runs/";
    memset(longer + 6, 'a', UI_URL_MAX);
    longer[UI_URL_MAX + 6] = '\0';
    CHECK_INT(route(&r, "GET", longer, &err), 414);
    CHECK_STR(err.code, "ui.url-too-long");
    char id129[200] = "/runs/";
    memset(id129 + 6, 'a', 129);
    id129[135] = '\0';
    CHECK_INT(route(&r, "GET", id129, &err), 400);
}

static void test_assets(void)
{
    ui_reply out = {0};
    CHECK(ui_asset("ui.js", &out) && out.static_len > 100);
    CHECK(memmem(out.static_body, out.static_len, "EventSource", 11) != NULL);
    CHECK(ui_asset("ui.css", &out) && strstr(out.content_type, "text/css") != NULL);
    CHECK(!ui_asset("../ui.h", &out));
    CHECK(!ui_asset("", &out));
}

int main(void)
{
    test_listen();
    test_escaping();
    test_routes();
    test_assets();
    return check_done("test_ui_unit");
}
