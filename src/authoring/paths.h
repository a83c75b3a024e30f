/*
 * paths.h - the relative paths of workflow folders and artifacts: the
 * build-only references of settings.json (instructions, assets, schema
 * files) and the member names of an artifact (authoring.md §1-2).
 *
 * What it is for: one judgement of a path, shared by the folder builder
 * (a reference is relative, has no "..", stays inside the folder after
 * symlinks) and the artifact reader (a member name is already normal).
 *
 * What it must never do: accept an absolute path, a ".." component, a NUL
 * or control byte or a backslash, or a path longer than SP_RELPATH_MAX; or
 * call a path inside the folder whose real path leaves it.
 */
#ifndef SPORE_AUTHORING_PATHS_H
#define SPORE_AUTHORING_PATHS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define SP_RELPATH_MAX 1024

typedef enum sp_relpath_verdict {
    SP_RELPATH_OK,
    SP_RELPATH_EMPTY,
    SP_RELPATH_ABSOLUTE,
    SP_RELPATH_PARENT,   /* a ".." component */
    SP_RELPATH_BAD_BYTE, /* NUL, a control byte, a backslash, not UTF-8 */
    SP_RELPATH_TOO_LONG,
} sp_relpath_verdict;

/* Normalize `in` (len bytes) into `out` (SP_RELPATH_MAX + 1 bytes): "."
 * components and repeated or trailing slashes dropped ("./a//b/" -> "a/b"). */
sp_relpath_verdict sp_relpath_normalize(const char *in, size_t len, char *out);

/* What is wrong, for messages ("is absolute", ...). */
const char *sp_relpath_problem(sp_relpath_verdict v);

/* Whether `name` is exactly its own normal form (an artifact member name). */
bool sp_relpath_is_normal(const char *name, size_t len);

/* Where a normal relative path really is below the folder whose real path
 * is `root`: SP_INSIDE_OK with `real` filled, SP_INSIDE_MISSING when it does
 * not exist, SP_INSIDE_ESCAPES when it resolves outside (through a
 * symlink). */
typedef enum sp_inside { SP_INSIDE_OK, SP_INSIDE_MISSING, SP_INSIDE_ESCAPES } sp_inside;
sp_inside sp_folder_resolve(const char *root, const char *rel, char real[PATH_MAX]);

/* Whether the real path `path` is `root` or below it. */
bool sp_path_below(const char *root, const char *path);

#endif
