/*
 * cmd_trace.c - `spore trace <file.json>... [--json]` (cli.md §7): replays
 * golden kernel traces, one line per trace, then "N passed, N failed".
 * Exit 0 only if every trace passes.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "trace/trace.h"

static const char HELP[] =
    "usage: spore trace <trace.json>... [--json]\n"
    "\n"
    "Replays golden kernel traces (runspore.trace/0.1) against the built-in\n"
    "kernel and compares every step byte for byte: snapshot, digests,\n"
    "commands, diagnostics, or the failure's kind and code.\n"
    "Prints one line per trace and a final \"N passed, N failed\".\n"
    "With --json, one object with per-step detail.\n";

static void report_text(const char *path, const sp_trace *t, bool ok, const sp_trace_mismatch *m)
{
    if (ok) {
        printf("PASS %s (%zu steps)\n", sp_trace_name(t), sp_trace_step_count(t));
        return;
    }
    printf("FAIL %s (%s): step %zu: %s\n  expected: %s\n  actual:   %s\n", sp_trace_name(t), path,
           m->step, m->member, m->expected ? m->expected : "?", m->actual ? m->actual : "?");
}

static json_t *report_json(const sp_trace *t, bool ok, const sp_trace_mismatch *m, json_t *steps)
{
    json_t *r = json_pack("{s:s,s:b,s:o}", "name", sp_trace_name(t), "passed", ok, "steps", steps);
    if (r && !ok)
        json_object_set_new(r, "mismatch",
                            json_pack("{s:I,s:s,s:s,s:s}", "step", (json_int_t)m->step, "member",
                                      m->member, "expected", m->expected ? m->expected : "",
                                      "actual", m->actual ? m->actual : ""));
    return r;
}

int cmd_trace(int argc, char **argv)
{
    cli c = {.command = "trace"};
    sp_error err = {0};
    if (cli_parse(&c, argc, argv, NULL, &err))
        return cli_error(&c, EXIT_USAGE, &err);
    if (c.help)
        return cli_help(HELP);
    if (c.npositional == 0) {
        sp_fail(&err, "usage", "trace takes one or more trace files (see spore trace --help)");
        return cli_error(&c, EXIT_USAGE, &err);
    }
    size_t passed = 0, failed = 0;
    json_t *traces = c.json ? json_array() : NULL;
    for (int i = 0; i < c.npositional; i++) {
        const char *path = c.positional[i];
        sp_trace *t = sp_trace_load(path, &err);
        if (!t) {
            failed++;
            if (c.json)
                json_array_append_new(traces, json_pack("{s:s,s:b,s:{s:s,s:s}}", "file", path,
                                                        "passed", 0, "error", "code", err.code,
                                                        "message", err.message));
            else
                printf("FAIL %s: %s: %s\n", path, err.code, err.message);
            sp_error_clear(&err);
            continue;
        }
        sp_trace_mismatch m;
        json_t *steps = c.json ? json_array() : NULL;
        bool ok = sp_trace_replay(t, &m, steps);
        ok ? passed++ : failed++;
        if (c.json)
            json_array_append_new(traces, report_json(t, ok, &m, steps));
        else
            report_text(path, t, ok, &m);
        sp_trace_mismatch_clear(&m);
        sp_trace_free(t);
    }
    if (c.json)
        cli_print_json(json_pack("{s:o,s:I,s:I}", "traces", traces, "passed", (json_int_t)passed,
                                 "failed", (json_int_t)failed));
    else
        printf("%zu passed, %zu failed\n", passed, failed);
    return failed ? EXIT_RUN_FAILED : EXIT_OK;
}
