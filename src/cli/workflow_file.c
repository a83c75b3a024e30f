/*
 * workflow_file.c - reading workflow files and JSON arguments for the CLI
 * (see workflow_file.h).
 */
#include "cli/workflow_file.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "json/json.h"

static json_t *parse_named(const char *what, const char *bytes, size_t len, sp_error *err)
{
    json_t *v = sp_json_parse(bytes, len, err);
    if (!v && strcmp(err->code, "canonical.syntax") == 0) {
        char message[SP_MESSAGE_MAX];
        snprintf(message, sizeof message, "%s", err->message);
        sp_fail(err, "json.invalid", "%s is not valid JSON: %s", what, message);
    } else if (!v) {
        char message[SP_MESSAGE_MAX];
        snprintf(message, sizeof message, "%s", err->message);
        char code[SP_CODE_MAX];
        snprintf(code, sizeof code, "%s", err->code);
        sp_fail(err, code, "%s: %s", what, message);
    }
    return v;
}

json_t *sp_workflow_file_read(const char *path, sp_error *err)
{
    size_t len;
    char *bytes = cli_read_file(path, SP_WORKFLOW_FILE_MAX, &len, err);
    if (!bytes)
        return NULL;
    json_t *doc = parse_named(path, bytes, len, err);
    free(bytes);
    return doc;
}

json_t *sp_json_argument(const char *what, const char *text, sp_error *err)
{
    return parse_named(what, text, strlen(text), err);
}

char *sp_workflow_dir(const char *path)
{
    struct stat st;
    if (strcmp(path, "-") == 0)
        return strdup(".");
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return strdup(path);
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}
