/*
 * cmd_validate.c - `spore validate <workflow> [--json]` (cli.md §2):
 * kernel validation, runner checks of every action and a dry run.started,
 * without opening any database, of a JSON package, a workflow folder or an
 * artifact. Exit 0 when valid, 2 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/workflow_file.h"
#include "engine/validate.h"
#include "json/json.h"

static const char HELP[] =
    "usage: spore validate <workflow> [--json]\n"
    "\n"
    "Checks a workflow without touching any database: canonical JSON, the\n"
    "kernel's rules W01-W11, every action's kind and fields, and a dry start\n"
    "with null input. <workflow> is a JSON package file, a workflow folder (or\n"
    "its workflow.dot: the folder is built first, docs/authoring.md) or an\n"
    "artifact made by spore build.\n"
    "\n"
    "Exit 0 when valid; 2 with the failing code (workflow.invalid,\n"
    "action.invalid, canonical.*, dot.invalid, build.*, artifact.*, ...) otherwise.\n";

int cmd_validate(int argc, char **argv)
{
    cli c = {.command = "validate"};
    sp_error err = {0};
    int begun = cli_begin(&c, argc, argv, NULL, HELP, 1, "one workflow (file, folder or artifact)");
    if (begun)
        return begun == CLI_HELP_SHOWN ? EXIT_OK : begun;
    sp_workflow_source src;
    if (sp_workflow_source_open(c.positional[0], &src, &err))
        return cli_error(&c, cli_exit_for(err.code), &err);
    sp_validated v;
    sp_validate_opts opts = {src.dir, false, NULL}; /* runners are sealed from here */
    int rc = sp_validate_workflow(src.doc, NULL, NULL, &opts, &v, &err);
    sp_workflow_source_close(&src);
    if (rc)
        return cli_error(&c, cli_exit_for(err.code), &err);
    if (c.json) {
        char n[32];
        snprintf(n, sizeof n, "%zu", v.package_len);
        cli_print_json(json_pack("{s:b,s:s,s:s}", "valid", 1, "packageBytes", n, "packageDigest",
                                 v.package_digest));
    } else {
        printf("valid: %s (%zu nodes, %zu actions, %zu package bytes, %s)\n", c.positional[0],
               v.nnodes, v.nactions, v.package_len, v.package_digest);
    }
    sp_validated_free(&v);
    return EXIT_OK;
}
