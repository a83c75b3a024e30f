/*
 * grants.c - the readable / writable entries of a sandbox, resolved and
 * pinned before the sandbox is built (the rules are in sandbox.h).
 *
 * What it is for: a symlink must never widen a grant. `writable:
 * ["rootlink"]` with rootlink -> / would otherwise mount the host's root
 * read-write into the sandbox; a readable link to /etc would show
 * /etc/shadow. Every entry is resolved, checked as a written path would be,
 * and held open, and bwrap mounts the descriptor, not the path.
 *
 * What it must never do: accept an entry whose resolved path a written
 * entry could not name, follow a symlink after the check, or leave a
 * descriptor open when it refuses.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/pin.h"
#include "sandbox/sandbox.h"

#define REFUSED "agent.grant-refused"

bool sp_sandbox_path_reserved(const char *p)
{
    static const char *const exact[] = {"/", "/usr", "/bin", "/sbin", "/lib", "/lib64",
                                        "/etc", "/tmp", "/var", NULL};
    static const char *const trees[] = {"/proc", "/dev", "/spore", "/var/secrets", NULL};
    size_t len = strlen(p);
    for (const char *const *r = exact; *r; r++) {
        size_t n = strlen(*r);
        if (strcmp(p, *r) == 0 || (len == n + 1 && strncmp(p, *r, n) == 0 && p[n] == '/'))
            return true;
    }
    for (const char *const *r = trees; *r; r++)
        if (sp_path_covers(*r, p))
            return true;
    return false;
}

/* What every entry is checked against. */
typedef struct context {
    const char *base;  /* as given: relative entries are joined to it */
    char *base_real;   /* ... and resolved */
    char *agent_real;  /* the agent directory, resolved */
} context;

typedef struct entry {
    const char *written;
    const char *what; /* "readable" | "writable" */
    bool writable;
} entry;

/* `why` completes "it ...". */
static int refuse(sp_error *err, const entry *e, const char *resolved, const char *reason,
                  const char *why)
{
    return sp_fail_details(err, REFUSED,
                           json_pack("{s:s,s:s,s:s?,s:s}", "grant", e->what, "entry", e->written,
                                     "resolved", resolved, "reason", reason),
                           "sandbox.%s entry \"%.300s\" is refused: it %s%s%.300s%s", e->what,
                           e->written, why, resolved ? " (resolved: " : "",
                           resolved ? resolved : "", resolved ? ")" : "");
}

static char *join(const char *base, const char *path)
{
    char *out = NULL;
    if (path[0] == '/')
        return strdup(path);
    size_t n = strlen(base);
    if (asprintf(&out, "%s%s%s", base, n && base[n - 1] == '/' ? "" : "/", path) < 0)
        return NULL;
    return out;
}

/* The checks on the resolved path beyond the pin's own. */
static int check_resolved(const context *c, const entry *e, const char *real, sp_error *err)
{
    if (e->written[0] != '/' && !sp_path_covers(c->base_real, real))
        return refuse(err, e, real, "outside-base",
                      "leaves the base directory through a symlink (a relative entry names "
                      "something inside it)");
    if (sp_sandbox_path_reserved(real))
        return refuse(err, e, real, "reserved",
                      "would cover a directory the sandbox provides itself");
    if (sp_path_covers(real, c->agent_real) || sp_path_covers(c->agent_real, real))
        return refuse(err, e, real, "agent-dir",
                      "would cover the agent directory, where the sandboxes live");
    return 0;
}

static int resolve_one(const context *c, const entry *e, sp_sandbox_grant *g, sp_error *err)
{
    g->fd = -1;
    g->writable = e->writable;
    if (!(g->entry = strdup(e->written)) || !(g->inside = join(c->base, e->written)))
        return sp_oom(err);
    sp_pin pin;
    sp_pin_status st = sp_pin_path(g->inside, &pin);
    char why[200];
    snprintf(why, sizeof why, st == SP_PIN_FAILED ? "cannot be resolved (%s)" : "%s",
             st == SP_PIN_FAILED ? strerror(errno) : sp_pin_status_text(st));
    if (st != SP_PIN_OK) {
        int rc = st == SP_PIN_MISSING
                     ? sp_fail(err, "agent.sandbox-unavailable",
                               "sandbox.%s entry %s does not exist", e->what, g->inside)
                     : refuse(err, e, pin.path, sp_pin_status_name(st), why);
        sp_pin_release(&pin);
        return rc;
    }
    g->resolved = pin.path;
    g->fd = pin.fd;
    return check_resolved(c, e, g->resolved, err);
}

static int by_mount_point(const void *a, const void *b)
{
    const sp_sandbox_grant *x = a, *y = b;
    int c = strcmp(x->inside, y->inside);
    return c ? c : (int)x->writable - (int)y->writable; /* the same path: writable wins */
}

/* A grant below another one is looked up by bwrap inside that one, where
 * the host's own symlinks are visible: the written path must name exactly
 * the place its resolved target has there (no symlink between the two),
 * or bwrap would follow whatever the link says at mount time. */
static int check_nested(const sp_sandbox_grants *g, size_t i, sp_error *err)
{
    const sp_sandbox_grant *in = &g->v[i], *around = NULL;
    for (size_t j = 0; j < i; j++) { /* sorted: the grants around it come first */
        const char *outer = g->v[j].inside;
        if (strcmp(outer, in->inside) != 0 && sp_path_covers(outer, in->inside))
            around = &g->v[j];
    }
    if (!around)
        return 0;
    const char *below = in->inside + strlen(around->inside);
    size_t n = strlen(around->resolved);
    bool same = strncmp(in->resolved, around->resolved, n) == 0 &&
                strcmp(in->resolved + n, below) == 0;
    if (same)
        return 0;
    entry e = {in->entry, in->writable ? "writable" : "readable", in->writable};
    return refuse(err, &e, in->resolved, "nested-link",
                  "lies inside another grant and passes through a symlink there (grant the "
                  "target by the path it has inside that grant)");
}

static int context_init(context *c, const char *base, sp_error *err)
{
    c->base = base;
    const char *agent = sp_sandbox_root(err);
    if (!agent)
        return -1;
    c->base_real = realpath(base, NULL);
    c->agent_real = realpath(agent, NULL);
    if (!c->base_real || !c->agent_real)
        return sp_fail(err, "agent.sandbox-unavailable",
                       "cannot resolve the base directory %s or the agent directory %s", base,
                       agent);
    return 0;
}

static size_t count(const char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

int sp_sandbox_grants_resolve(const char *const *readable, const char *const *writable,
                              const char *base, sp_sandbox_grants *out, sp_error *err)
{
    out->n = 0;
    out->v = NULL;
    size_t nr = count(readable), total = nr + count(writable);
    if (total == 0)
        return 0;
    context c = {0};
    int rc = context_init(&c, base, err);
    if (!rc && !(out->v = calloc(total, sizeof *out->v)))
        rc = sp_oom(err);
    for (size_t i = 0; !rc && i < total; i++) {
        entry e = {i < nr ? readable[i] : writable[i - nr], i < nr ? "readable" : "writable",
                   i >= nr};
        out->n++;
        rc = resolve_one(&c, &e, &out->v[i], err);
    }
    free(c.base_real);
    free(c.agent_real);
    if (rc) {
        sp_sandbox_grants_free(out);
        return -1;
    }
    qsort(out->v, out->n, sizeof *out->v, by_mount_point);
    for (size_t i = 0; !rc && i < out->n; i++)
        rc = check_nested(out, i, err);
    if (rc)
        sp_sandbox_grants_free(out);
    return rc;
}

void sp_sandbox_grants_free(sp_sandbox_grants *g)
{
    for (size_t i = 0; i < g->n; i++) {
        if (g->v[i].fd >= 0)
            close(g->v[i].fd);
        free(g->v[i].entry);
        free(g->v[i].inside);
        free(g->v[i].resolved);
    }
    free(g->v);
    g->v = NULL;
    g->n = 0;
}
