/*
 * common.c - option parsing, error printing, JSON output and bounded file
 * reading for the subcommands (see cli.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "cli/cli.h"

static const cli_option *find_option(const cli_option *opts, const char *name)
{
    for (; opts && opts->name; opts++)
        if (strcmp(opts->name, name) == 0)
            return opts;
    return NULL;
}

int cli_parse(cli *c, int argc, char **argv, const cli_option *opts, sp_error *err)
{
    const cli_option globals[] = {
        {"--json", false, NULL, &c->json},
        {"--help", false, NULL, &c->help},
        {"-h", false, NULL, &c->help},
        {"--db", true, &c->db, NULL},
        {"--lease-ms", true, &c->lease_ms, NULL},
        {"--heartbeat-ms", true, &c->heartbeat_ms, NULL},
        {"--poll-ms", true, &c->poll_ms, NULL},
        {"--grace-ms", true, &c->grace_ms, NULL},
        {"--store-retry-ms", true, &c->store_retry_ms, NULL},
        {"--allow-shared-store", false, NULL, &c->allow_shared_store},
        {NULL, false, NULL, NULL},
    };
    bool options_done = false;
    for (int i = 0; i < argc; i++) {
        char *arg = argv[i];
        if (options_done || arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (c->npositional == CLI_MAX_POSITIONAL)
                return sp_fail(err, "usage", "too many arguments");
            c->positional[c->npositional++] = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            options_done = true;
            continue;
        }
        char name[64];
        const char *inline_value = strchr(arg, '=');
        size_t nlen = inline_value ? (size_t)(inline_value - arg) : strlen(arg);
        if (nlen >= sizeof name)
            return sp_fail(err, "usage", "unknown option %s (see --help)", arg);
        memcpy(name, arg, nlen);
        name[nlen] = '\0';
        const cli_option *o = find_option(opts, name);
        if (!o)
            o = find_option(globals, name);
        if (!o)
            return sp_fail(err, "usage", "unknown option %s (see spore %s --help)", name,
                           c->command);
        if (!o->takes_value) {
            if (inline_value)
                return sp_fail(err, "usage", "option %s takes no value", name);
            *o->flag = true;
            continue;
        }
        if (inline_value)
            *o->value = inline_value + 1;
        else if (i + 1 < argc)
            *o->value = argv[++i];
        else
            return sp_fail(err, "usage", "option %s needs a value", name);
    }
    return 0;
}

void cli_print_json(json_t *obj)
{
    if (!obj) {
        printf("{\"error\":{\"code\":\"runtime.out-of-memory\",\"message\":\"out of memory\"},"
               "\"format\":\"" CLI_FORMAT "\"}\n");
        return;
    }
    json_object_set_new(obj, "format", json_string(CLI_FORMAT));
    char *text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    if (text) {
        puts(text);
        free(text);
    }
    json_decref(obj);
    fflush(stdout);
}

int cli_error(const cli *c, int exit_code, sp_error *err)
{
    const char *code = err->code[0] ? err->code : "runtime";
    if (c && c->json) {
        json_t *e = json_pack("{s:s,s:s}", "code", code, "message", err->message);
        if (e && err->details)
            json_object_set(e, "details", err->details);
        cli_print_json(json_pack("{s:o}", "error", e));
    } else {
        fprintf(stderr, "spore: %s: %s\n", code, err->message);
    }
    sp_error_clear(err);
    return exit_code;
}

int cli_help(const char *text)
{
    fputs(text, stdout);
    return EXIT_OK;
}

char *cli_read_file(const char *path, size_t limit, size_t *len, sp_error *err)
{
    FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!fp) {
        sp_fail(err, "file.unreadable", "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    sp_buf b = SP_BUF_INIT;
    b.limit = limit;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0 && sp_buf_ok(&b))
        sp_buf_append(&b, chunk, n);
    bool failed = ferror(fp);
    int saved = errno;
    if (fp != stdin)
        fclose(fp);
    if (failed) {
        sp_buf_free(&b);
        sp_fail(err, "file.unreadable", "cannot read %s: %s", path, strerror(saved));
        return NULL;
    }
    if (b.over_limit) {
        sp_buf_free(&b);
        sp_fail(err, "file.too-large", "%s is larger than %zu bytes", path, limit);
        return NULL;
    }
    if (b.oom) {
        sp_buf_free(&b);
        sp_oom(err);
        return NULL;
    }
    if (!b.data)
        sp_buf_append(&b, "", 0);
    return sp_buf_take(&b, len);
}

int cli_exit_for(const char *code)
{
    static const char *const internal[] = {"store.", "kernel.load", "runtime", "signal",
                                           "internal", NULL};
    for (const char *const *p = internal; *p; p++)
        if (strncmp(code, *p, strlen(*p)) == 0)
            return EXIT_INTERNAL;
    return EXIT_USAGE;
}
