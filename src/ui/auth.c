/*
 * auth.c - who may look and who may act: the token (when `--token` or
 * SPORE_UI_TOKEN is set: on every request, as `Authorization: Bearer`, the
 * HttpOnly SameSite=Strict cookie that `?token=` sets once, or `?token=`
 * itself), the Host a request names (loopback servers answer only to their
 * own name: no DNS rebinding), the session cookie and its CSRF token (an
 * HMAC of the session under a key made at start), and the Origin (or
 * Sec-Fetch-Site) of every action.
 *
 * Must never compare a secret in variable time, put the token or the key
 * in a page, or let an action through on a missing check.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/random.h"
#include "digest/hmac.h"
#include "ui/internal.h"

/* Equal in time independent of where they differ and of their lengths:
 * their MACs under the server key are compared. */
static bool secret_equal(const ui_ctx *ctx, const char *a, const char *b)
{
    unsigned char ma[SP_HMAC_LEN], mb[SP_HMAC_LEN];
    sp_hmac_sha256(ctx->secret, sizeof ctx->secret, a, strlen(a), ma);
    sp_hmac_sha256(ctx->secret, sizeof ctx->secret, b, strlen(b), mb);
    return sp_mac_equal(ma, mb, SP_HMAC_LEN);
}

static const char *bearer(const ui_request *r)
{
    const char *h = ui_header(r, "Authorization");
    return h && strncasecmp(h, "Bearer ", 7) == 0 ? h + 7 : NULL;
}

unsigned ui_auth_token(ui_request *r, bool *from_query, sp_error *err)
{
    *from_query = false;
    const char *want = r->ctx->cfg.token;
    if (!want)
        return 0;
    const char *given = bearer(r);
    if (!given)
        given = ui_cookie(r, "spore_token");
    if (!given && (given = ui_query(r, "token")))
        *from_query = true;
    if (given && secret_equal(r->ctx, given, want))
        return 0;
    *from_query = false;
    sp_fail(err, given ? "ui.token-invalid" : "ui.unauthorized",
            given ? "the token does not match" : "this server needs its token: open the URL "
                                                 "`spore ui` printed (with ?token=) or send "
                                                 "Authorization: Bearer <token>");
    return 401;
}

static bool is_hex(const char *s, size_t n)
{
    if (!s || strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789abcdef", s[i]))
            return false;
    return true;
}

void ui_auth_session(ui_request *r)
{
    const char *have = ui_cookie(r, "spore_session");
    if (is_hex(have, UI_SESSION_HEX)) {
        memcpy(r->session, have, UI_SESSION_HEX + 1);
        return;
    }
    sp_random_hex(r->session, UI_SESSION_HEX / 2);
    r->new_session = true;
}

void ui_auth_csrf(const ui_request *r, char out[UI_CSRF_HEX + 1])
{
    char data[UI_SESSION_HEX + 8];
    snprintf(data, sizeof data, "csrf:%s", r->session);
    sp_hmac_sha256_hex(r->ctx->secret, sizeof r->ctx->secret, data, strlen(data), UI_CSRF_HEX,
                       out);
}

/* The Host a browser names this server by: the address it listens on, or
 * (loopback) localhost with its port. Any Host when a token guards it. */
static bool host_ok(const ui_request *r, const char *host)
{
    const ui_ctx *ctx = r->ctx;
    if (!host)
        return false;
    if (strcmp(ctx->origin + 7, host) == 0) /* after "http://" */
        return true;
    char local[UI_HOST_MAX + 16];
    snprintf(local, sizeof local, "localhost:%u", (unsigned)ctx->cfg.listen.port);
    if (ctx->cfg.listen.loopback && strcmp(host, local) == 0)
        return true;
    return ctx->cfg.token != NULL;
}

unsigned ui_auth_host(const ui_request *r, sp_error *err)
{
    if (host_ok(r, ui_header(r, "Host")))
        return 0;
    sp_fail(err, "ui.host-refused", "this server answers to %s only", r->ctx->origin + 7);
    return 421;
}

static unsigned check_origin(const ui_request *r, sp_error *err)
{
    const char *origin = ui_header(r, "Origin");
    const char *host = ui_header(r, "Host");
    if (origin) {
        bool same = host && strncmp(origin, "http://", 7) == 0 && strcmp(origin + 7, host) == 0 &&
                    host_ok(r, host);
        if (same)
            return 0;
        sp_fail(err, "ui.origin-refused", "an action from another origin is refused");
        return 403;
    }
    const char *site = ui_header(r, "Sec-Fetch-Site");
    if (site && strcmp(site, "same-origin") == 0)
        return 0;
    sp_fail(err, "ui.origin-refused",
            site ? "an action from another site is refused"
                 : "an action needs an Origin header naming this server (browsers send it)");
    return 403;
}

static unsigned check_csrf(const ui_request *r, sp_error *err)
{
    const char *given = ui_field_value(r, "csrf");
    if (!given || !*given || r->new_session) {
        sp_fail(err, "ui.csrf-missing", "the form's CSRF token or the session cookie is missing: "
                                        "reload the page and send the form again");
        return 403;
    }
    char want[UI_CSRF_HEX + 1];
    ui_auth_csrf(r, want);
    if (secret_equal(r->ctx, given, want))
        return 0;
    sp_fail(err, "ui.csrf-invalid", "the form's CSRF token does not belong to this session: "
                                    "reload the page and send the form again");
    return 403;
}

unsigned ui_auth_action(const ui_request *r, sp_error *err)
{
    unsigned status = check_origin(r, err);
    return status ? status : check_csrf(r, err);
}

void ui_auth_cookies(const ui_request *r, bool token_cookie, ui_reply *out)
{
    if (r->new_session)
        snprintf(out->cookies[0], sizeof out->cookies[0],
                 "spore_session=%s; Path=/; HttpOnly; SameSite=Strict", r->session);
    if (token_cookie && r->ctx->cfg.token)
        snprintf(out->cookies[1], sizeof out->cookies[1],
                 "spore_token=%s; Path=/; HttpOnly; SameSite=Strict", r->ctx->cfg.token);
}
