/*
 * workflow_file.c - the one workflow loader of the CLI and the reading of
 * JSON files and arguments (see workflow_file.h). Never lets an artifact's
 * runners be sealed from anything but the artifact, nor leaves its private
 * folder behind.
 */
#include "cli/workflow_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "authoring/authoring.h"
#include "cli/cli.h"
#include "engine/validate.h"
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

/* The folder a JSON package file's relative paths are read from: its
 * directory ("." for standard input). */
static char *package_dir(const char *path)
{
    if (strcmp(path, "-") == 0)
        return strdup(".");
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* Whether the file at `path` starts with the artifact magic. */
static bool artifact_file(const char *path)
{
    char head[SP_ARTIFACT_MAGIC_LEN];
    FILE *fp = strcmp(path, "-") == 0 ? NULL : fopen(path, "rb");
    size_t n = fp ? fread(head, 1, sizeof head, fp) : 0;
    if (fp)
        fclose(fp);
    return sp_artifact_magic(head, n);
}

static int open_package(const char *path, sp_workflow_source *out, sp_error *err)
{
    out->kind = SP_SOURCE_PACKAGE;
    if (!(out->doc = sp_workflow_file_read(path, err)))
        return -1;
    return (out->dir = package_dir(path)) ? 0 : sp_oom(err);
}

static int open_folder(const char *path, sp_workflow_source *out, sp_error *err)
{
    sp_folder f;
    out->kind = SP_SOURCE_FOLDER;
    if (sp_folder_read(path, &f, err))
        return -1;
    out->doc = f.package;
    out->dir = f.dir;
    f.package = NULL;
    f.dir = NULL;
    sp_folder_free(&f);
    return 0;
}

/* The artifact's package seals, from its own members, to the digest the
 * artifact names: what a run of it records is what was built. */
static int check_sealing(const sp_workflow_source *s, const sp_artifact *a, sp_error *err)
{
    sp_validated v;
    sp_validate_opts opts = {s->dir, false, NULL};
    if (sp_validate_workflow(s->doc, NULL, NULL, &opts, &v, err))
        return -1;
    const char *want = json_string_value(json_object_get(a->manifest, "packageDigest"));
    int rc = strcmp(v.package_digest, want) == 0
                 ? 0
                 : sp_fail(err, "artifact.package-mismatch",
                           "the artifact's package seals to %s, not to the %s it names",
                           v.package_digest, want);
    sp_validated_free(&v);
    return rc;
}

static int open_artifact(const char *path, sp_workflow_source *out, sp_error *err)
{
    size_t len;
    sp_artifact a;
    out->kind = SP_SOURCE_ARTIFACT;
    char *bytes = cli_read_file(path, SP_ARTIFACT_BYTES_MAX, &len, err);
    if (!bytes)
        return -1;
    int rc = sp_artifact_read(bytes, len, &a, err);
    if (rc == 0) {
        snprintf(out->artifact_digest, sizeof out->artifact_digest, "%s", a.digest);
        out->doc = json_incref(a.package);
        rc = sp_artifact_unpack(&a, &out->dir, err);
        out->scratch = rc == 0;
        if (rc == 0)
            rc = check_sealing(out, &a, err);
        sp_artifact_free(&a);
    }
    free(bytes);
    return rc;
}

int sp_workflow_source_open(const char *path, sp_workflow_source *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = sp_folder_named(path)  ? open_folder(path, out, err)
             : artifact_file(path) ? open_artifact(path, out, err)
                                   : open_package(path, out, err);
    if (rc)
        sp_workflow_source_close(out);
    return rc;
}

void sp_workflow_source_close(sp_workflow_source *s)
{
    if (s->scratch)
        sp_remove_tree(s->dir);
    json_decref(s->doc);
    free(s->dir);
    memset(s, 0, sizeof *s);
}
