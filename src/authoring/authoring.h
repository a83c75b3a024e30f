/*
 * authoring.h - what the authoring component offers the command line:
 * workflow folders (workflow.dot + settings.json + the files they name)
 * built into packages, and artifacts (one sealed file per workflow) written
 * and read (authoring.md §1-2, docs/authoring.md).
 *
 * What it is for: turning what people write and ship into the one package
 * the kernel and the engine already know. A folder gives a package document
 * that the engine's normal validation then checks and seals
 * (sp_validate_workflow); an artifact carries that sealed package, the
 * sealed runner files and the assets, each member bounded and checked.
 *
 * What it must never do: validate what the kernel validates (only the
 * folder-specific build errors are its own, each with file, line and
 * column), read a reference outside its folder, run `dot`, accept an
 * artifact member it cannot account for, or pass its bounds (below).
 * Codes: dot.*, build.*, artifact.*, plus file.unreadable, file.too-large,
 * json.invalid and canonical.* for the files it reads.
 */
#ifndef SPORE_AUTHORING_AUTHORING_H
#define SPORE_AUTHORING_AUTHORING_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "digest/digest.h"

/* ---- workflow folders (authoring.md §1) ---- */

#define SP_FOLDER_DOT "workflow.dot"
#define SP_FOLDER_SETTINGS "settings.json"
#define SP_SETTINGS_BYTES_MAX (8u << 20)   /* settings.json */
#define SP_REFERENCE_BYTES_MAX (1u << 20)  /* one instructions or schema file */
#define SP_ASSETS_MAX 4000                 /* asset files of one folder */
#define SP_ASSET_BYTES_MAX (64u << 20)     /* one asset file */
#define SP_ASSETS_TOTAL_MAX (128u << 20)   /* every asset file */
#define SP_ASSET_DEPTH_MAX 32              /* folders below an asset folder */

/* An asset (authoring.md §1: `assets` of an action): a regular file below
 * the folder, named by its normal relative path. */
typedef struct sp_folder_asset {
    char *path; /* normal, relative to the folder */
    char *real; /* its real path, read when an artifact is written */
    uint64_t size;
} sp_folder_asset;

typedef struct sp_folder {
    char *dir;       /* the folder as given: runner modules and grants are sealed from here */
    json_t *package; /* the package document it gives (before the engine seals it) */
    sp_folder_asset *assets; /* ascending byte order of paths, unique */
    size_t nassets;
} sp_folder;

/* Whether `path` names a workflow folder: a directory, or a file whose
 * name is workflow.dot (then its directory is the folder). */
bool sp_folder_named(const char *path);

/* Build the package document of the folder `path` names: read
 * workflow.dot (strict DOT, dot.*), settings.json (optional: absent = {}),
 * merge them, inline the build-only references and collect the assets.
 * Every folder-specific problem is a build.* code with file, line and
 * column (docs/authoring.md lists them); the kernel's own rules are left to
 * the engine's validation of the package. */
int sp_folder_read(const char *path, sp_folder *out, sp_error *err);

void sp_folder_free(sp_folder *f);

/* ---- artifacts (authoring.md §2, docs/authoring.md "The artifact format") ---- */

#define SP_ARTIFACT_MAGIC "\x89SPORE\r\n" /* 8 bytes */
#define SP_ARTIFACT_MAGIC_LEN 8
#define SP_ARTIFACT_VERSION 1
#define SP_ARTIFACT_HEADER_BYTES 16      /* magic, version, member count */
#define SP_ARTIFACT_ENTRY_BYTES 48       /* a member's entry before its name */
#define SP_ARTIFACT_MEMBERS_MAX 4096
#define SP_ARTIFACT_NAME_MAX 255
#define SP_ARTIFACT_MEMBER_MAX (64u << 20)
#define SP_ARTIFACT_BYTES_MAX (256u << 20)
#define SP_ARTIFACT_MANIFEST_MAX (1u << 20)
#define SP_ARTIFACT_MEMBER_FILE 1        /* the only member type */
#define SP_ARTIFACT_MANIFEST "manifest.json"
#define SP_ARTIFACT_PACKAGE "package.json"
#define SP_ARTIFACT_BLOB_PREFIX "blobs/sha256-"

/* Bytes the artifact carries by digest ("sha256:<hex>" of the bytes). */
typedef struct sp_artifact_blob {
    const char *digest;
    const char *bytes;
    size_t len;
} sp_artifact_blob;

typedef struct sp_artifact_spec {
    const char *package;        /* canonical, sealed package bytes */
    size_t package_len;
    const char *package_digest; /* the kernel's digest of them */
    const sp_artifact_blob *sealed; /* the sealed runner files (the seal's blob set) */
    size_t nsealed;
    const sp_folder *folder;    /* its assets are read and carried */
    const char *spore_version;  /* "0.1.0" */
} sp_artifact_spec;

/* Where `spore build` writes the artifact of folder `f`: `given` (-o), or
 * "<folder>.spore" beside the folder; never inside the folder
 * (build.output-inside), never over a folder (file.unwritable). *path is
 * malloc'd. */
int sp_artifact_output_path(const sp_folder *f, const char *given, char **path, sp_error *err);

/* Put the artifact bytes at `path` whole (a temporary file beside it,
 * renamed over it) or not at all. file.unwritable. */
int sp_artifact_save(const char *path, const char *bytes, size_t len, sp_error *err);

/* Write the artifact of `spec` into `out`: the same inputs always give the
 * same bytes (fixed order, no time, no owner). build.too-large when a
 * bound would be passed, build.asset-changed when an asset is not what the
 * folder said, file.unreadable. */
int sp_artifact_write(const sp_artifact_spec *spec, sp_buf *out, sp_error *err);

typedef struct sp_artifact_member {
    const char *name; /* borrowed from the artifact bytes, not NUL-terminated */
    size_t name_len;
    const char *bytes;
    size_t len;
} sp_artifact_member;

typedef struct sp_artifact {
    char digest[SP_DIGEST_TEXT_LEN + 1]; /* sha256:<hex> of the whole file */
    size_t len;
    sp_artifact_member *members; /* ascending byte order of names */
    size_t nmembers;
    json_t *manifest;
    json_t *package; /* the package document */
    const char *package_bytes;
    size_t package_len;
} sp_artifact;

/* Whether `bytes` start with the artifact magic. */
bool sp_artifact_magic(const char *bytes, size_t len);

/* Read and check an artifact held in `bytes` (which must outlive `out`):
 * the container (artifact.magic, artifact.version, artifact.too-large,
 * artifact.truncated, artifact.trailing-bytes, artifact.member-type,
 * artifact.member-path, artifact.member-size, artifact.member-duplicate,
 * artifact.member-order, artifact.member-digest, artifact.member-unknown,
 * artifact.member-missing, artifact.member-unreferenced) and its contents
 * (artifact.manifest, artifact.package). */
int sp_artifact_read(const char *bytes, size_t len, sp_artifact *out, sp_error *err);

/* The blob member holding `digest`, or NULL. */
const sp_artifact_member *sp_artifact_blob_of(const sp_artifact *a, const char *digest);

void sp_artifact_free(sp_artifact *a);

/* Write the artifact's sealed files into a new private folder (mode 0700,
 * below $TMPDIR or /tmp), laid out as the package's `sealed` members name
 * them, with every relative folder grant present, so that the engine's
 * seal reads exactly the artifact's bytes and nothing beside it. *dir is
 * malloc'd; remove it with sp_remove_tree. artifact.package,
 * file.unwritable. */
int sp_artifact_unpack(const sp_artifact *a, char **dir, sp_error *err);

/* Remove a folder sp_artifact_unpack made, and everything in it. */
void sp_remove_tree(const char *dir);

#endif
