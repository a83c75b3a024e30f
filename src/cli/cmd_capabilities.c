/*
 * cmd_capabilities.c - `spore capabilities [--json]` (cli.md §7, engine.md
 * §9): what this host can serve. Workflows are refused at validate/start
 * for what is missing here, and steps needing it show capability-missing.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/capabilities.h"

static const char HELP[] =
    "usage: spore capabilities [--json]\n"
    "\n"
    "Lists the action kinds this spore runs, the kinds runnable async, the result\n"
    "channels, component worlds, agent transports, sandbox features found on this\n"
    "machine and the store adapters.\n";

int cmd_capabilities(int argc, char **argv)
{
    cli c = {.command = "capabilities"};
    sp_error err = {0};
    if (cli_parse(&c, argc, argv, NULL, &err))
        return cli_error(&c, EXIT_USAGE, &err);
    if (c.help)
        return cli_help(HELP);
    json_t *caps = sp_capabilities_json();
    if (!caps) {
        sp_oom(&err);
        return cli_error(&c, EXIT_INTERNAL, &err);
    }
    if (c.json) {
        cli_print_json(caps);
        return EXIT_OK;
    }
    const char *key;
    json_t *v;
    json_object_foreach(caps, key, v)
    {
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        printf("%-20s %s\n", key, text ? text : "?");
        free(text);
    }
    json_decref(caps);
    return EXIT_OK;
}
