/*
 * cmd_validate.c - `spore validate <workflow.json> [--json]` (cli.md §2):
 * kernel validation, runner checks of every action and a dry run.started,
 * without opening any database. Exit 0 when valid, 2 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/workflow_file.h"
#include "engine/validate.h"
#include "json/json.h"

static const char HELP[] =
    "usage: spore validate <workflow.json> [--json]\n"
    "\n"
    "Checks a workflow without touching any database: canonical JSON, the\n"
    "kernel's rules W01-W11, every action's kind and fields, and a dry start\n"
    "with null input.\n"
    "\n"
    "Exit 0 when valid; 2 with the failing code (workflow.invalid,\n"
    "action.invalid, canonical.*, ...) otherwise.\n";

int cmd_validate(int argc, char **argv)
{
    cli c = {.command = "validate"};
    sp_error err = {0};
    int begun = cli_begin(&c, argc, argv, NULL, HELP, 1, "one workflow file");
    if (begun)
        return begun == CLI_HELP_SHOWN ? EXIT_OK : begun;
    json_t *doc = sp_workflow_file_read(c.positional[0], &err);
    if (!doc)
        return cli_error(&c, cli_exit_for(err.code), &err);
    sp_validated v;
    char *dir = sp_workflow_dir(c.positional[0]); /* runners are sealed from here */
    sp_validate_opts opts = {dir, false, NULL};
    int rc = dir ? sp_validate_workflow(doc, NULL, NULL, &opts, &v, &err) : sp_oom(&err);
    free(dir);
    json_decref(doc);
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
