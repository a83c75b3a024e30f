/*
 * workflow_file.h - where the CLI gets a workflow from (cli.md §5,
 * authoring.md §1-2): ONE loader for every command that takes a workflow
 * (validate, start, run, and any later one), accepting a JSON package
 * file, a workflow folder (or its workflow.dot), or an artifact built by
 * `spore build` (recognised by its magic, never by its name); and the
 * strict reading of JSON files and arguments (file.unreadable,
 * file.too-large, json.invalid, canonical.*).
 *
 * Must never read more than SP_WORKFLOW_FILE_MAX bytes of a JSON file or
 * SP_ARTIFACT_BYTES_MAX of an artifact, and never seal an artifact's
 * runners from anything but the artifact's own members.
 */
#ifndef SPORE_CLI_WORKFLOW_FILE_H
#define SPORE_CLI_WORKFLOW_FILE_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"
#include "digest/digest.h"

#define SP_WORKFLOW_FILE_MAX (8u << 20)

typedef enum sp_source_kind {
    SP_SOURCE_PACKAGE,  /* a JSON package file (or "-": standard input) */
    SP_SOURCE_FOLDER,   /* a workflow folder, built into a package */
    SP_SOURCE_ARTIFACT, /* an artifact file */
} sp_source_kind;

typedef struct sp_workflow_source {
    sp_source_kind kind;
    json_t *doc; /* the package document */
    char *dir;   /* runner modules and relative grants are sealed from here */
    bool scratch; /* dir holds an artifact's sealed files: removed by close */
    char artifact_digest[SP_DIGEST_TEXT_LEN + 1]; /* "" unless an artifact */
} sp_workflow_source;

/* Open the workflow `path` names. An artifact is checked whole
 * (artifact.*), its sealed files laid out in a private folder, and its
 * package checked to seal to the digest its manifest names
 * (artifact.package-mismatch). */
int sp_workflow_source_open(const char *path, sp_workflow_source *out, sp_error *err);

/* Release it (and remove an artifact's private folder). */
void sp_workflow_source_close(sp_workflow_source *s);

/* A JSON file in the canonical domain (--input-file). */
json_t *sp_workflow_file_read(const char *path, sp_error *err);

/* Parse a JSON argument (--input, --data, --output): json.invalid or canonical.*. */
json_t *sp_json_argument(const char *what, const char *text, sp_error *err);

#endif
