/*
 * unpack.c - an artifact's sealed files laid out in a private folder (see
 * authoring.h): the engine's seal then reads the artifact's own bytes,
 * exactly as it reads a workflow folder, and nothing beside the artifact.
 *
 * Must never write outside the new folder (every path is a normal relative
 * path, files are created new, never through a symlink), and never leave
 * the folder behind on failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "authoring/authoring.h"
#include "authoring/paths.h"
#include "authoring/sealed.h"

static int unwritable(sp_error *err, const char *what, const char *path)
{
    return sp_fail(err, "file.unwritable", "cannot %s %s: %s", what, path, strerror(errno));
}

/* Every folder on the way to `rel` (a normal relative path) below `dir`;
 * with `whole`, `rel` itself too. */
static int make_folders(const char *dir, const char *rel, bool whole, sp_error *err)
{
    char path[PATH_MAX];
    size_t base = (size_t)snprintf(path, sizeof path, "%s/", dir);
    if (base + strlen(rel) >= sizeof path)
        return sp_fail(err, "artifact.package", "the sealed path %s is too long", rel);
    for (const char *c = rel;; c++) {
        if (*c == '/' || (*c == '\0' && whole)) {
            memcpy(path + base, rel, (size_t)(c - rel));
            path[base + (size_t)(c - rel)] = '\0';
            if (mkdir(path, 0700) && errno != EEXIST)
                return unwritable(err, "create the folder", path);
        }
        if (*c == '\0')
            return 0;
    }
}

static int write_file(const char *dir, const char *rel, const sp_artifact_member *m, sp_error *err)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, rel) >= sizeof path)
        return sp_fail(err, "artifact.package", "the sealed path %s is too long", rel);
    if (make_folders(dir, rel, false, err))
        return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno == EEXIST || errno == EISDIR
                   ? sp_fail(err, "artifact.package", "the sealed path %s is also a folder", rel)
                   : unwritable(err, "create", path);
    size_t done = 0;
    while (done < m->len) {
        ssize_t n = write(fd, m->bytes + done, m->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(fd);
            return unwritable(err, "write", path);
        }
        done += (size_t)n;
    }
    return close(fd) ? unwritable(err, "write", path) : 0;
}

typedef struct grant_folders {
    const char *dir;
    sp_error *err;
} grant_folders;

/* A runner's relative folder grants, present even when they hold no file
 * (an entry that is not a normal path is left to the seal to judge). */
static int make_grant_folders(const json_t *runner, void *ctx)
{
    grant_folders *g = ctx;
    const json_t *folders = json_object_get(json_object_get(runner, "grants"), "folders");
    for (size_t i = 0; i < json_array_size(folders); i++) {
        const json_t *entry = json_array_get(folders, i);
        char normal[SP_RELPATH_MAX + 1];
        if (!json_is_string(entry) ||
            sp_relpath_normalize(json_string_value(entry), json_string_length(entry), normal) !=
                SP_RELPATH_OK)
            continue;
        if (make_folders(g->dir, normal, true, g->err))
            return -1;
    }
    return 0;
}

static int lay_out(const sp_artifact *a, const char *dir, sp_error *err)
{
    sp_sealed_list l;
    if (sp_package_sealed(a->package, &l, err))
        return -1;
    int rc = 0;
    for (size_t i = 0; i < l.n && rc == 0; i++) {
        const sp_artifact_member *m = sp_artifact_blob_of(a, l.files[i].digest);
        rc = m ? write_file(dir, l.files[i].path, m, err)
               : sp_fail(err, "artifact.member-missing",
                         "the sealed file %s is not in the artifact", l.files[i].path);
    }
    sp_sealed_list_free(&l);
    grant_folders g = {dir, err};
    if (rc == 0 && sp_package_runners(a->package, make_grant_folders, &g))
        rc = err->code[0] ? -1 : sp_oom(err);
    return rc;
}

int sp_artifact_unpack(const sp_artifact *a, char **dir, sp_error *err)
{
    const char *tmp = getenv("TMPDIR");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/spore-artifact-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    *dir = NULL;
    if (!mkdtemp(path))
        return unwritable(err, "create a private folder in", tmp && tmp[0] == '/' ? tmp : "/tmp");
    if (lay_out(a, path, err)) {
        sp_remove_tree(path);
        return -1;
    }
    if (!(*dir = strdup(path))) {
        sp_remove_tree(path);
        return sp_oom(err);
    }
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

void sp_remove_tree(const char *dir)
{
    if (dir)
        nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}
