/*
 * output.c - where an artifact is written (see authoring.h): beside its
 * folder by default, never inside it (a later build would seal the
 * artifact into itself), always whole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "authoring/authoring.h"
#include "authoring/files.h"
#include "authoring/paths.h"

/* "<dir>.spore" for a folder named by a path that ends in a name; from its
 * real path for ".", ".." and the like. */
static char *default_path(const char *dir, const char *root)
{
    const char *slash = strrchr(dir, '/');
    const char *last = slash ? slash + 1 : dir;
    char *out = NULL;
    if (strcmp(last, ".") == 0 || strcmp(last, "..") == 0 || last[0] == '\0')
        return strcmp(root, "/") == 0 || asprintf(&out, "%s.spore", root) < 0 ? NULL : out;
    return asprintf(&out, "%s.spore", dir) < 0 ? NULL : out;
}

/* The real path the output would have: its folder's real path and its name. */
static int real_output(const char *path, char real[PATH_MAX * 2], sp_error *err)
{
    char *copy = strdup(path);
    if (!copy)
        return sp_oom(err);
    char *slash = strrchr(copy, '/');
    const char *parent = slash ? (slash == copy ? "/" : copy) : ".";
    const char *name = slash ? slash + 1 : copy;
    if (slash)
        *slash = '\0';
    char dir[PATH_MAX];
    int rc = 0;
    if (!realpath(parent, dir))
        rc = sp_fail(err, "file.unwritable", "cannot write %s: its folder %s: %s", path, parent,
                     strerror(errno));
    else
        snprintf(real, PATH_MAX * 2, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);
    free(copy);
    return rc;
}

int sp_artifact_output_path(const sp_folder *f, const char *given, char **path, sp_error *err)
{
    char root[PATH_MAX], real[PATH_MAX * 2];
    struct stat st;
    *path = NULL;
    if (!realpath(f->dir, root))
        return sp_fail(err, "file.unreadable", "cannot resolve the folder %s: %s", f->dir,
                       strerror(errno));
    char *out = given ? strdup(given) : default_path(f->dir, root);
    if (!out)
        return given ? sp_oom(err)
                     : sp_fail(err, "usage", "the folder %s has no name to build beside: give -o",
                               f->dir);
    int rc = real_output(out, real, err);
    if (rc == 0 && sp_path_below(root, real))
        rc = sp_fail(err, "build.output-inside",
                     "%s is inside the folder %s: the artifact is written beside the folder, "
                     "never into it (a later build would seal it into itself)",
                     out, f->dir);
    if (rc == 0 && stat(out, &st) == 0 && S_ISDIR(st.st_mode))
        rc = sp_fail(err, "file.unwritable", "%s is a folder, not a file to write", out);
    if (rc)
        free(out);
    else
        *path = out;
    return rc;
}

int sp_artifact_save(const char *path, const char *bytes, size_t len, sp_error *err)
{
    return sp_file_write_whole(path, bytes, len, err);
}
