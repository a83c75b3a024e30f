/*
 * workflow_file.h - reading a workflow document from a file for the CLI:
 * size bound, strict JSON into the canonical domain, clear codes
 * (file.unreadable, file.too-large, json.invalid, canonical.*).
 *
 * Must never read more than SP_WORKFLOW_FILE_MAX bytes.
 */
#ifndef SPORE_CLI_WORKFLOW_FILE_H
#define SPORE_CLI_WORKFLOW_FILE_H

#include <jansson.h>

#include "base/error.h"

#define SP_WORKFLOW_FILE_MAX (8u << 20)

json_t *sp_workflow_file_read(const char *path, sp_error *err);

/* The folder a workflow file's relative paths (runner modules, grants) are
 * read from: the file's directory, or the path itself when it is a folder
 * ("." for standard input). malloc'd; NULL when out of memory. */
char *sp_workflow_dir(const char *path);

/* Parse a JSON argument (--input, --data, --output): json.invalid or canonical.*. */
json_t *sp_json_argument(const char *what, const char *text, sp_error *err);

#endif
