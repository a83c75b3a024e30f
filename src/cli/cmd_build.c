/*
 * cmd_build.c - `spore build <folder> [-o <file>]` and `spore inspect
 * <artifact> [--assets]` (authoring.md §2, cli.md §5): a workflow folder
 * sealed into one artifact file, and an artifact shown.
 *
 * Must never write an artifact the engine's validation has not accepted,
 * write one inside its folder, or show anything of an artifact before it
 * has been read and checked whole.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authoring/authoring.h"
#include "cli/cli.h"
#include "engine/validate.h"
#include "json/decimal.h"
#include "runners/runner.h" /* sp_seal_set: the sealed runner files */

#ifndef SPORE_VERSION
#define SPORE_VERSION "0.0.0"
#endif

static const char BUILD_HELP[] =
    "usage: spore build <folder> [-o <file>] [--json]\n"
    "\n"
    "Seals a workflow folder (workflow.dot, settings.json and the files they name)\n"
    "into one artifact file: the canonical package, its runner modules and granted\n"
    "files (sealed, runners.md), the assets its actions list, and a manifest. The\n"
    "same folder always gives the same bytes.\n"
    "\n"
    "  -o, --output <file>  where to write it (default: <folder>.spore beside the\n"
    "                       folder; never inside it)\n"
    "\n"
    "Checks everything spore validate checks. Exit 0 when written; 2 with the code\n"
    "(dot.invalid, build.*, workflow.invalid, component.*, ...; docs/authoring.md).\n"
    "Then: spore run <file>, spore inspect <file>.\n";

static const char INSPECT_HELP[] =
    "usage: spore inspect <artifact> [--assets] [--json]\n"
    "\n"
    "Reads an artifact made by spore build, checks it whole (every member, its\n"
    "digest, the manifest against the package) and prints its manifest and its\n"
    "package. --assets lists the assets it carries.\n"
    "\n"
    "Exit 0; 2 with the code (artifact.*) when the file is no valid artifact.\n";

/* The engine's seal set as the artifact writer's blobs (borrowed). */
static sp_artifact_blob *blobs_of(const sp_seal_set *set)
{
    sp_artifact_blob *b = calloc(set->n ? set->n : 1, sizeof *b);
    for (size_t i = 0; b && i < set->n; i++)
        b[i] = (sp_artifact_blob){set->items[i].digest, set->items[i].bytes, set->items[i].len};
    return b;
}

typedef struct built {
    char *path;
    char digest[SP_DIGEST_TEXT_LEN + 1];
    size_t bytes, nsealed;
    sp_validated v;
} built;

/* Validate and seal the folder's package, write the artifact. */
static int build_artifact(const sp_folder *f, const char *output, built *out, sp_error *err)
{
    sp_seal_set set = {0};
    sp_validate_opts opts = {f->dir, false, &set};
    sp_buf bytes = SP_BUF_INIT;
    if (sp_validate_workflow(f->package, NULL, NULL, &opts, &out->v, err))
        return -1;
    sp_artifact_blob *blobs = blobs_of(&set);
    sp_artifact_spec spec = {out->v.package, out->v.package_len, out->v.package_digest, blobs,
                             set.n, f, SPORE_VERSION};
    int rc = !blobs ? sp_oom(err) : sp_artifact_output_path(f, output, &out->path, err);
    if (rc == 0)
        rc = sp_artifact_write(&spec, &bytes, err);
    if (rc == 0)
        rc = sp_artifact_save(out->path, bytes.data, bytes.len, err);
    if (rc == 0) {
        sp_sha256_text(bytes.data, bytes.len, out->digest);
        out->bytes = bytes.len;
        out->nsealed = set.n;
    }
    sp_buf_free(&bytes);
    free(blobs);
    sp_seal_set_free(&set);
    return rc;
}

static void print_built(const cli *c, const sp_folder *f, const built *b)
{
    const char *name = json_string_value(json_object_get(f->package, "name"));
    const char *format = json_string_value(json_object_get(f->package, "format"));
    char next[512];
    cli_next_command(c, next, sizeof next, "run %s", b->path);
    if (c->json) {
        cli_print_json(json_pack("{s:s,s:s,s:o,s:s,s:s,s:s,s:o,s:o,s:s}", "artifact", b->path,
                                 "artifactDigest", b->digest, "bytes", sp_decimal_json(b->bytes),
                                 "name", name, "workflowFormat", format, "packageDigest",
                                 b->v.package_digest, "assets", sp_decimal_json(f->nassets),
                                 "sealedBlobs", sp_decimal_json(b->nsealed), "next", next));
        return;
    }
    printf("built %s (%zu bytes, %s)\n", b->path, b->bytes, b->digest);
    printf("%-12s %s (%s), %zu nodes, %zu actions\n", "workflow", name, format, b->v.nnodes,
           b->v.nactions);
    printf("%-12s %s (%zu bytes)\n", "package", b->v.package_digest, b->v.package_len);
    printf("%-12s %zu sealed runner file%s, %zu asset%s\n", "carries", b->nsealed,
           b->nsealed == 1 ? "" : "s", f->nassets, f->nassets == 1 ? "" : "s");
    printf("next: %s   (spore inspect %s shows it)\n", next, b->path);
}

int cmd_build(int argc, char **argv)
{
    cli c = {.command = "build"};
    const char *output = NULL, *o = NULL;
    const cli_option opts[] = {
        {"--output", true, &output, NULL},
        {"-o", true, &o, NULL},
        {NULL, false, NULL, NULL},
    };
    int rc = cli_begin(&c, argc, argv, opts, BUILD_HELP, 1, "one workflow folder");
    if (rc)
        return rc == CLI_HELP_SHOWN ? EXIT_OK : rc;
    sp_error err = {0};
    if (output && o) {
        sp_fail(&err, "usage", "give -o or --output, not both");
        return cli_error(&c, EXIT_USAGE, &err);
    }
    sp_folder f;
    built b = {0};
    if (!sp_folder_named(c.positional[0]))
        sp_fail(&err, "usage", "%s is no workflow folder (a folder holding workflow.dot, or the "
                               "workflow.dot itself)", c.positional[0]);
    else if (sp_folder_read(c.positional[0], &f, &err) == 0) {
        if (build_artifact(&f, output ? output : o, &b, &err) == 0)
            print_built(&c, &f, &b);
        sp_folder_free(&f);
    }
    free(b.path);
    sp_validated_free(&b.v);
    return err.code[0] ? cli_error(&c, cli_exit_for(err.code), &err) : EXIT_OK;
}

/* ---- inspect ---- */

static void print_files(const char *label, const json_t *files)
{
    for (size_t i = 0; i < json_array_size(files); i++) {
        const json_t *f = json_array_get(files, i);
        printf("%-12s %10s  %s  %s\n", label, json_string_value(json_object_get(f, "size")),
               json_string_value(json_object_get(f, "digest")),
               json_string_value(json_object_get(f, "path")));
    }
}

static void inspect_text(const char *path, const sp_artifact *a, bool assets)
{
    const json_t *m = a->manifest;
    const json_t *asset_list = json_object_get(m, "assets"), *sealed = json_object_get(m, "sealed");
    printf("%-12s %s\n", "artifact", path);
    printf("%-12s %s (%zu bytes)\n", "digest", a->digest, a->len);
    printf("%-12s %s (%s)\n", "workflow", json_string_value(json_object_get(m, "name")),
           json_string_value(json_object_get(m, "format")));
    printf("%-12s %s (%s bytes)\n", "package",
           json_string_value(json_object_get(m, "packageDigest")),
           json_string_value(json_object_get(m, "packageBytes")));
    printf("%-12s spore %s\n", "built by", json_string_value(json_object_get(m, "sporeVersion")));
    print_files("sealed", sealed);
    if (assets)
        print_files("asset", asset_list);
    else
        printf("%-12s %zu file%s%s\n", "assets", json_array_size(asset_list),
               json_array_size(asset_list) == 1 ? "" : "s",
               json_array_size(asset_list) ? " (--assets lists them)" : "");
    char *package = json_dumps(a->package, JSON_INDENT(2) | JSON_SORT_KEYS);
    printf("package:\n%s\n", package ? package : "?");
    free(package);
}

int cmd_inspect_artifact(int argc, char **argv)
{
    cli c = {.command = "inspect"};
    bool assets = false;
    const cli_option opts[] = {
        {"--assets", false, NULL, &assets},
        {NULL, false, NULL, NULL},
    };
    int rc = cli_begin(&c, argc, argv, opts, INSPECT_HELP, 1, "one artifact file");
    if (rc)
        return rc == CLI_HELP_SHOWN ? EXIT_OK : rc;
    sp_error err = {0};
    size_t len;
    sp_artifact a;
    char *bytes = cli_read_file(c.positional[0], SP_ARTIFACT_BYTES_MAX, &len, &err);
    if (!bytes || sp_artifact_read(bytes, len, &a, &err)) {
        free(bytes);
        return cli_error(&c, cli_exit_for(err.code), &err);
    }
    if (c.json) {
        json_t *out = json_pack("{s:s,s:s,s:o,s:O,s:O}", "artifact", c.positional[0],
                                "artifactDigest", a.digest, "bytes", sp_decimal_json(a.len),
                                "manifest", a.manifest, "package", a.package);
        if (out && assets)
            json_object_set(out, "assets", json_object_get(a.manifest, "assets"));
        cli_print_json(out);
    } else {
        inspect_text(c.positional[0], &a, assets);
    }
    sp_artifact_free(&a);
    free(bytes);
    return EXIT_OK;
}
