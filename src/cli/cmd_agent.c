/*
 * cmd_agent.c - `spore agent classify` (cli.md §7): classify a captured
 * step-CLI exchange exactly as the agent runner would, through the same
 * code (src/agent/session.c: the protocol reader fed in chunks, the stderr
 * log, result.json only when the ending calls for it, the outcome table).
 *
 * Must never print a secret (every text goes through the redactor built
 * from --secret-file), read more of stdout than the reader accepts, or
 * classify differently from the runner.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/redact.h"
#include "agent/session.h"
#include "cli/cli.h"

static const char HELP[] =
    "usage: spore agent classify --exit <code|signal:N> --stdout <file> --stderr <file>\n"
    "                            --step-id <id> [--result-file <file>]\n"
    "                            [--secret-file <file>]... [--lost-stream] [--json]\n"
    "\n"
    "Classifies a captured step-CLI exchange exactly as the agent runner would\n"
    "(agent-step.md §3-6) and prints the outcome: status, code, retryable, taint,\n"
    "breaker effect, the redacted error, the structured output and details.\n"
    "--lost-stream says the transport lost the stream (then --exit is not needed).\n"
    "result.json (--result-file) is read only after exit 4 or a lost stream.\n"
    "\n"
    "Exit 0 whenever the exchange could be classified; 2 on usage errors or\n"
    "unreadable files.\n";

#define MAX_SECRETS 128

typedef struct args {
    const char *exit_text, *out, *err, *result, *step_id;
    const char *secrets[MAX_SECRETS];
    int nsecrets;
    bool lost, json, help;
} args;

static int parse(int argc, char **argv, args *a, sp_error *err)
{
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i];
        const char **slot = NULL;
        if (strcmp(o, "--json") == 0) {
            a->json = true;
            continue;
        }
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            a->help = true;
            continue;
        }
        if (strcmp(o, "--lost-stream") == 0) {
            a->lost = true;
            continue;
        }
        if (strcmp(o, "--exit") == 0)
            slot = &a->exit_text;
        else if (strcmp(o, "--stdout") == 0)
            slot = &a->out;
        else if (strcmp(o, "--stderr") == 0)
            slot = &a->err;
        else if (strcmp(o, "--result-file") == 0)
            slot = &a->result;
        else if (strcmp(o, "--step-id") == 0)
            slot = &a->step_id;
        else if (strcmp(o, "--secret-file") == 0) {
            if (a->nsecrets == MAX_SECRETS)
                return sp_fail(err, "usage", "at most %d --secret-file options", MAX_SECRETS);
            slot = &a->secrets[a->nsecrets++];
        } else {
            return sp_fail(err, "usage", "unknown argument %s (see spore agent classify --help)",
                           o);
        }
        if (i + 1 >= argc)
            return sp_fail(err, "usage", "option %s needs a value", o);
        *slot = argv[++i];
    }
    return 0;
}

static int parse_end(const args *a, sp_agent_end *end, sp_error *err)
{
    memset(end, 0, sizeof *end);
    if (a->lost) {
        end->kind = SP_AGENT_LOST;
        return 0;
    }
    if (!a->exit_text)
        return sp_fail(err, "usage", "give --exit <code|signal:N> or --lost-stream");
    const char *t = a->exit_text;
    bool signal = strncmp(t, "signal:", 7) == 0;
    if (signal)
        t += 7;
    char *endp;
    errno = 0;
    long v = strtol(t, &endp, 10);
    if (!*t || *endp || errno || v < 0 || v > (signal ? 64 : 255) || (signal && v == 0))
        return sp_fail(err, CLI_INVALID_VALUE, "--exit takes 0..255 or signal:1..64");
    end->kind = signal ? SP_AGENT_SIGNALED : SP_AGENT_EXITED;
    if (signal)
        end->signal = (int)v;
    else
        end->exit_code = (int)v;
    return 0;
}

static int load_secrets(const args *a, sp_redactor *r, sp_error *err)
{
    for (int i = 0; i < a->nsecrets; i++) {
        size_t len;
        char *data = cli_read_file(a->secrets[i], SP_REDACT_SECRET_MAX, &len, err);
        if (!data) {
            if (strcmp(err->code, "file.too-large") == 0)
                sp_fail(err, "agent.secret-too-large",
                        "%s is longer than %u bytes: it could not be redacted reliably",
                        a->secrets[i], SP_REDACT_SECRET_MAX);
            return -1;
        }
        int rc = sp_redactor_add(r, data, len, err);
        explicit_bzero(data, len);
        free(data);
        if (rc)
            return -1;
    }
    return 0;
}

/* Feed a file in chunks; stdout stops at the first violation, as the
 * runner stops reading (and kills the step) there. */
static int feed(const char *path, sp_agent_session *s, bool is_stdout, sp_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return sp_fail(err, "file.unreadable", "cannot open %s: %s", path, strerror(errno));
    char chunk[65536];
    size_t n;
    bool more = true;
    while (more && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (is_stdout)
            more = sp_agent_session_stdout(s, chunk, n);
        else
            sp_agent_session_stderr(s, chunk, n);
    }
    bool failed = ferror(f);
    fclose(f);
    if (failed)
        return sp_fail(err, "file.unreadable", "cannot read %s", path);
    return 0;
}

static void print_text(const sp_agent_outcome *o)
{
    printf("%-10s %s\n", "status", sp_agent_status_name(o->status));
    if (o->code[0])
        printf("%-10s %s\n", "code", o->code);
    printf("%-10s %s\n", "retryable", o->retryable ? "yes" : "no");
    printf("%-10s %s\n", "taint", o->taint ? "yes" : "no");
    printf("%-10s %s\n", "breaker", sp_breaker_effect_name(o->breaker));
    if (o->error)
        printf("%-10s %s\n", "error", o->error);
    if (o->output) {
        char *text = json_dumps(o->output, JSON_COMPACT | JSON_SORT_KEYS);
        printf("%-10s %s\n", "output", text ? text : "?");
        free(text);
    }
    if (o->details) {
        char *text = json_dumps(o->details, JSON_COMPACT | JSON_SORT_KEYS);
        printf("%-10s %s\n", "details", text ? text : "?");
        free(text);
    }
}

static int classify(int argc, char **argv)
{
    args a = {0};
    cli c = {.command = "agent classify"};
    sp_error err = {0};
    int rc = parse(argc, argv, &a, &err);
    a.json = a.json || cli_leading()->json || cli_json_wanted(argc, argv, NULL);
    a.help = a.help || cli_leading()->help;
    c.json = a.json;
    if (rc)
        return cli_error(&c, EXIT_USAGE, &err);
    if (a.help)
        return cli_help(HELP);
    if (!a.out || !a.err || !a.step_id) {
        sp_fail(&err, "usage", "--stdout, --stderr and --step-id are required");
        return cli_error(&c, EXIT_USAGE, &err);
    }
    sp_agent_end end;
    if (parse_end(&a, &end, &err))
        return cli_error(&c, EXIT_USAGE, &err);
    sp_redactor *r = sp_redactor_new();
    if (!r) {
        sp_oom(&err);
        return cli_error(&c, EXIT_INTERNAL, &err);
    }
    if (load_secrets(&a, r, &err)) {
        sp_redactor_free(r);
        return cli_error(&c, EXIT_USAGE, &err);
    }
    sp_agent_session s;
    sp_agent_session_cfg cfg = {a.step_id, r, "", 0, NULL, NULL};
    if (sp_agent_session_init(&s, &cfg)) {
        sp_redactor_free(r);
        sp_fail(&err, CLI_INVALID_VALUE, "--step-id must match ^[a-z0-9-]{1,40}$");
        return cli_error(&c, EXIT_USAGE, &err);
    }
    if (feed(a.out, &s, true, &err) || feed(a.err, &s, false, &err)) {
        sp_agent_session_free(&s);
        sp_redactor_free(r);
        return cli_error(&c, EXIT_USAGE, &err);
    }
    sp_agent_outcome o;
    sp_agent_session_finish(&s, &end, a.result, true, &o);
    if (a.json)
        cli_print_json(json_pack("{s:o}", "outcome", sp_agent_outcome_json(&o)));
    else
        print_text(&o);
    sp_agent_outcome_free(&o);
    sp_agent_session_free(&s);
    sp_redactor_free(r);
    return EXIT_OK;
}

static const char AGENT_HELP[] =
    "usage: spore agent classify ... (see spore agent classify --help)\n"
    "\n"
    "Agent steps (docs/agents.md). Subcommands:\n"
    "  classify   classify a captured step-CLI exchange as the agent runner would\n";

int cmd_agent(int argc, char **argv)
{
    if (argc >= 1 && strcmp(argv[0], "classify") == 0)
        return classify(argc - 1, argv + 1);
    if ((argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) ||
        (argc == 0 && cli_leading()->help))
        return cli_help(AGENT_HELP);
    cli c = {.command = "agent", .json = cli_leading()->json || cli_json_wanted(argc, argv, NULL)};
    sp_error err = {0};
    sp_fail(&err, "usage", "spore agent takes the subcommand classify (see spore agent --help)");
    return cli_error(&c, EXIT_USAGE, &err);
}
