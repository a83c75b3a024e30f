/*
 * common.c - option parsing, error printing, JSON output and bounded file
 * reading for the subcommands (see cli.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "cli/cli.h"

/* The global options given before the command (`spore --db x --json list`),
 * set once by main() through cli_parse_leading(); every command starts from
 * them. */
static cli leading_globals;

static const cli_option *find_option(const cli_option *opts, const char *name)
{
    for (; opts && opts->name; opts++)
        if (strcmp(opts->name, name) == 0)
            return opts;
    return NULL;
}

enum { NGLOBALS = 13 };

/* The global options (cli.md §1), bound to the fields of `c`. */
static void global_options(cli *c, cli_option out[NGLOBALS])
{
    const cli_option globals[NGLOBALS] = {
        {"--json", false, NULL, &c->json},
        {"--help", false, NULL, &c->help},
        {"-h", false, NULL, &c->help},
        {"--db", true, &c->db, NULL},
        {"--lease-ms", true, &c->lease_ms, NULL},
        {"--heartbeat-ms", true, &c->heartbeat_ms, NULL},
        {"--poll-ms", true, &c->poll_ms, NULL},
        {"--grace-ms", true, &c->grace_ms, NULL},
        {"--store-retry-ms", true, &c->store_retry_ms, NULL},
        {"--concurrency", true, &c->concurrency, NULL},
        {"--max-wait", true, &c->max_wait, NULL},
        {"--allow-shared-store", false, NULL, &c->allow_shared_store},
        {NULL, false, NULL, NULL},
    };
    memcpy(out, globals, sizeof globals);
}

/* The option named by `arg` ("--name" or "--name=value"): the command's own
 * first, then the globals. NULL when unknown; *inline_value is the text after
 * '=' or NULL. */
static const cli_option *lookup(const char *arg, const cli_option *own, const cli_option *globals,
                                char *name, size_t name_size, const char **inline_value)
{
    *inline_value = strchr(arg, '=');
    size_t nlen = *inline_value ? (size_t)(*inline_value - arg) : strlen(arg);
    if (*inline_value)
        (*inline_value)++;
    if (nlen >= name_size)
        return NULL;
    memcpy(name, arg, nlen);
    name[nlen] = '\0';
    const cli_option *o = find_option(own, name);
    return o ? o : find_option(globals, name);
}

static bool is_option(const char *arg)
{
    return arg[0] == '-' && strcmp(arg, "-") != 0;
}

bool cli_json_wanted(int argc, char **argv, const cli_option *own)
{
    cli scratch = {0};
    cli_option globals[NGLOBALS];
    global_options(&scratch, globals);
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (!is_option(argv[i]))
            continue;
        char name[64];
        const char *inline_value;
        const cli_option *o = lookup(argv[i], own, globals, name, sizeof name, &inline_value);
        if (o && o->flag == &scratch.json)
            return true;
        if (o && o->takes_value && !inline_value)
            i++; /* skip the option's value: `--input --json` is an input */
    }
    return false;
}

/* An empty value is never a valid global option value (`--db ''` must not
 * silently mean ./spore.db). */
static int check_global_values(cli *c, sp_error *err)
{
    cli_option globals[NGLOBALS];
    global_options(c, globals);
    for (const cli_option *o = globals; o->name; o++)
        if (o->takes_value && *o->value && !(*o->value)[0])
            return sp_fail(err, CLI_INVALID_VALUE, "%s needs a value, not an empty string",
                           o->name);
    return 0;
}

/* One option at argv[*i]; advances *i past its value. */
static int parse_option(cli *c, int argc, char **argv, int *i, const cli_option *own,
                        const cli_option *globals, sp_error *err)
{
    char name[64];
    const char *inline_value;
    const cli_option *o = lookup(argv[*i], own, globals, name, sizeof name, &inline_value);
    if (!o)
        return sp_fail(err, "usage", "unknown option %s (see spore %s%s--help)", argv[*i],
                       strcmp(c->command, "spore") == 0 ? "" : c->command,
                       strcmp(c->command, "spore") == 0 ? "" : " ");
    if (!o->takes_value) {
        if (inline_value)
            return sp_fail(err, "usage", "option %s takes no value", name);
        *o->flag = true;
        return 0;
    }
    if (inline_value)
        *o->value = inline_value;
    else if (*i + 1 < argc)
        *o->value = argv[++*i];
    else
        return sp_fail(err, "usage", "option %s needs a value", name);
    return 0;
}

/* The global options given before the command, where the command's own
 * line did not set them (one table, bound to both: global_options). */
static void copy_globals(cli *to, cli *from)
{
    cli_option dst[NGLOBALS], src[NGLOBALS];
    global_options(to, dst);
    global_options(from, src);
    for (int i = 0; dst[i].name; i++) {
        if (dst[i].takes_value && !*dst[i].value)
            *dst[i].value = *src[i].value;
        else if (!dst[i].takes_value)
            *dst[i].flag = *dst[i].flag || *src[i].flag;
    }
}

int cli_parse(cli *c, int argc, char **argv, const cli_option *opts, sp_error *err)
{
    cli_option globals[NGLOBALS];
    global_options(c, globals);
    /* an error is JSON wherever --json stands, also before it */
    c->json = c->json || leading_globals.json || cli_json_wanted(argc, argv, opts);
    bool options_done = false;
    for (int i = 0; i < argc; i++) {
        char *arg = argv[i];
        if (options_done || !is_option(arg)) {
            if (c->npositional == CLI_MAX_POSITIONAL)
                return sp_fail(err, "usage", "too many arguments");
            c->positional[c->npositional++] = arg;
        } else if (strcmp(arg, "--") == 0) {
            options_done = true;
        } else if (parse_option(c, argc, argv, &i, opts, globals, err)) {
            return -1;
        }
    }
    copy_globals(c, &leading_globals); /* the command's own line wins */
    return check_global_values(c, err);
}

int cli_begin(cli *c, int argc, char **argv, const cli_option *opts, const char *help, int nargs,
              const char *takes)
{
    sp_error err = {0};
    if (cli_parse(c, argc, argv, opts, &err))
        return cli_error(c, EXIT_USAGE, &err);
    if (c->help) {
        cli_help(help);
        return CLI_HELP_SHOWN;
    }
    if (nargs != CLI_ANY_ARGS && c->npositional != nargs) {
        sp_fail(&err, "usage", "%s takes %s (see spore %s --help)", c->command, takes, c->command);
        return cli_error(c, EXIT_USAGE, &err);
    }
    return 0;
}

int cli_parse_leading(int argc, char **argv, int *command_index, sp_error *err)
{
    cli *c = &leading_globals;
    memset(c, 0, sizeof *c);
    c->command = "spore";
    cli_option globals[NGLOBALS];
    global_options(c, globals);
    int i = 0;
    while (i < argc && is_option(argv[i]) && strcmp(argv[i], "--version") != 0) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (parse_option(c, argc, argv, &i, NULL, globals, err))
            return -1;
        i++;
    }
    *command_index = i;
    return check_global_values(c, err);
}

const cli *cli_leading(void)
{
    return &leading_globals;
}

void cli_print_json_to(FILE *out, json_t *obj)
{
    if (!obj) {
        fprintf(out, "{\"error\":{\"code\":\"runtime.out-of-memory\",\"message\":\"out of "
                     "memory\"},\"format\":\"" CLI_FORMAT "\"}\n");
        return;
    }
    json_object_set_new(obj, "format", json_string(CLI_FORMAT));
    char *text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    if (text) {
        fprintf(out, "%s\n", text);
        free(text);
    }
    json_decref(obj);
    fflush(out);
}

void cli_print_json(json_t *obj) { cli_print_json_to(stdout, obj); }

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

static bool shell_safe(const char *s)
{
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+-", *s))
            return false;
    return true;
}

void cli_next_command(const cli *c, char *out, size_t n, const char *fmt, ...)
{
    int used = snprintf(out, n, "spore ");
    va_list ap;
    va_start(ap, fmt);
    if (used >= 0 && (size_t)used < n)
        used += vsnprintf(out + used, n - (size_t)used, fmt, ap);
    va_end(ap);
    const char *db = c->db;
    if (!db || !*db || strncmp(db, "postgres", 8) == 0 || used < 0 || (size_t)used >= n)
        return;
    if (shell_safe(db) && !strchr(db, '\''))
        snprintf(out + used, n - (size_t)used, " --db %s", db);
    else if (!strchr(db, '\''))
        snprintf(out + used, n - (size_t)used, " --db '%s'", db);
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
    /* store and internal failures; `signal` alone is the CLI's own code for
     * a failure to install signal handlers, not the signal.* answers */
    static const char *const internal_prefixes[] = {"store.", "kernel.load", "runtime",
                                                    "internal", "schema.", NULL};
    if (strcmp(code, "signal") == 0)
        return EXIT_INTERNAL;
    for (const char *const *p = internal_prefixes; *p; p++)
        if (strncmp(code, *p, strlen(*p)) == 0)
            return EXIT_INTERNAL;
    return EXIT_USAGE;
}
