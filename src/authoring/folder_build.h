/*
 * folder_build.h - the steps of building a package from a workflow folder
 * (authoring.md §1), shared by folder.c (files, order, assembly),
 * topology.c (the DOT graph to kinds and routes), settings.c (the merge of
 * settings.json) and refs.c (build-only references).
 *
 * What it is for: one build context that every step reads and fills, and
 * one way to report a problem at its place in workflow.dot or
 * settings.json.
 *
 * What it must never do: report a problem without its file (and its line
 * and column when the file has one), or be used outside the component.
 */
#ifndef SPORE_AUTHORING_FOLDER_BUILD_H
#define SPORE_AUTHORING_FOLDER_BUILD_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>

#include "authoring/authoring.h"
#include "authoring/dot.h"
#include "authoring/located.h"

typedef struct folder_build {
    const char *dir;           /* the folder as given */
    char root[PATH_MAX];       /* its real path */
    char dot_file[PATH_MAX + 32];      /* "<dir>/workflow.dot", for messages */
    char settings_file[PATH_MAX + 32]; /* "<dir>/settings.json" */
    sp_dot_graph graph;
    bool v02;                  /* format spore.workflow/0.2 */
    char *settings_text;       /* NULL when there is no settings.json */
    size_t settings_len;
    json_t *settings;          /* {} without a file */
    json_t *nodes;             /* the package's nodes, being built */
    json_t *actions;           /* the package's actions (a copy of settings'), or NULL */
    sp_folder_asset *assets;   /* collected by refs.c, in order of appearance */
    size_t nassets, asset_cap;
    uint64_t asset_bytes;
    sp_error *err;
} folder_build;

/* A problem in workflow.dot at `pos`. */
int fb_dot_error(folder_build *b, const char *code, sp_text_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A problem in settings.json at the member `path` (npath segments): its key
 * when `at_key`, else its value. */
int fb_settings_error(folder_build *b, const char *code, const char *const *path, size_t npath,
                      bool at_key, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The DOT graph's name, format, start, node kinds and edges into b->nodes
 * ({kind, outcomes | branches, join}): build.graph-format,
 * build.graph-start, build.kind-unknown, build.terminal-edge,
 * build.route-invalid, build.duplicate-route. */
int fb_topology(folder_build *b);

/* settings.json merged into b->nodes and b->actions: build.settings-invalid,
 * build.settings-unknown-node, build.settings-topology,
 * build.activity-without-settings. */
int fb_settings(folder_build *b);

/* The build-only references inlined or collected: instructions, schema
 * files, assets (build.path-*, build.instructions-conflict,
 * build.reference-invalid, build.too-large). */
int fb_references(folder_build *b);

/* Whether kind `name` routes by `outcomes` (activity, await-signal, join,
 * map, sleep). */
bool fb_kind_has_outcomes(const char *kind);

#endif
