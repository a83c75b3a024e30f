/*
 * listen.c - the address `spore ui --listen` takes: "host:port" with a
 * numeric IPv4 address, or "[v6]:port"; whether it is loopback (127.0.0.0/8,
 * ::1), which decides whether a token is required (authoring.md §4).
 *
 * Must never resolve a name (no DNS: "localhost" is written 127.0.0.1).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui.h"

static int bad(const char *text, sp_error *err)
{
    return sp_fail(err, "usage.invalid-value",
                   "--listen takes <IPv4>:<port> or [<IPv6>]:<port> (e.g. %s), not \"%.80s\"",
                   UI_DEFAULT_LISTEN, text);
}

static int parse_port(const char *p, uint16_t *out)
{
    char *end;
    if (!*p || *p == '-' || *p == '+')
        return -1;
    unsigned long v = strtoul(p, &end, 10);
    if (*end || v > 65535)
        return -1;
    *out = (uint16_t)v;
    return 0;
}

int ui_parse_listen(const char *text, ui_listen *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    const char *colon = text[0] == '[' ? strstr(text, "]:") : strrchr(text, ':');
    if (!colon)
        return bad(text, err);
    const char *host = text[0] == '[' ? text + 1 : text;
    size_t n = (size_t)(colon - host);
    out->ipv6 = text[0] == '[';
    if (n == 0 || n >= sizeof out->host || parse_port(colon + (out->ipv6 ? 2 : 1), &out->port))
        return bad(text, err);
    memcpy(out->host, host, n);
    unsigned char addr[16];
    if (inet_pton(out->ipv6 ? AF_INET6 : AF_INET, out->host, addr) != 1)
        return bad(text, err);
    static const unsigned char v6_loopback[16] = {[15] = 1};
    out->loopback = out->ipv6 ? memcmp(addr, v6_loopback, 16) == 0 : addr[0] == 127;
    return 0;
}
