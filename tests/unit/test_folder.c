/*
 * test_folder.c - workflow folders built into packages (authoring.md §1,
 * docs/authoring.md): the settings merge, every topology both formats can
 * express, the build-only references, and every build error with its code,
 * file, line and column.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "authoring/authoring.h"
#include "check.h"
#include "json/json.h"

static char root[256];
static int folder_count;

/* A new folder below the test's temporary root. */
static const char *new_folder(void)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/f%d", root, ++folder_count);
    mkdir(dir, 0700);
    return dir;
}

/* Write `text` at `rel` below `dir`, creating folders on the way. */
static void put(const char *dir, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (char *c = path + strlen(dir) + 1; *c; c++)
        if (*c == '/') {
            *c = '\0';
            mkdir(path, 0700);
            *c = '/';
        }
    FILE *fp = fopen(path, "w");
    fputs(text, fp);
    fclose(fp);
}

static const char *const SETTINGS01 =
    "{\n"
    "  \"actions\": {\n"
    "    \"check\": {\"kind\": \"command\", \"argv\": [\"true\"], \"outcomes\": [\"ok\", \"red\"]},\n"
    "    \"fix\": {\"kind\": \"command\", \"argv\": [\"true\"]}\n"
    "  },\n"
    "  \"nodes\": {\n"
    "    \"check\": {\"action\": \"check\", \"input\": {\"$get\": [\"input\"]}},\n"
    "    \"fix\": {\"action\": \"fix\"},\n"
    "    \"wait\": {\"signal\": \"approval\"},\n"
    "    \"no\": {\"error\": {\"code\": \"review.rejected\", \"message\": \"rejected\"}}\n"
    "  },\n"
    "  \"limits\": {\"maxVisitsPerNode\": 3}\n"
    "}\n";

static const char *const DOT01 = "digraph review {\n"
                                 "  format = \"runspore.workflow/0.1\"; start = check\n"
                                 "  wait [kind = \"await-signal\"]; done [kind = complete]; no [kind = fail]\n"
                                 "  check -> wait\n"
                                 "  check -> fix [on = red]\n"
                                 "  fix -> check\n"
                                 "  wait -> done [on = approved]\n"
                                 "  wait -> no [on = rejected, label = \"no\"]\n"
                                 "}\n";

static void check_package(const char *dir, const char *want)
{
    sp_folder f;
    sp_error err = {0};
    if (sp_folder_read(dir, &f, &err)) {
        check_fail(__FILE__, __LINE__, "%s: %s: %s", dir, err.code, err.message);
        sp_error_clear(&err);
        return;
    }
    json_t *expected = sp_json_parse(want, strlen(want), &err);
    CHECK(expected != NULL);
    if (!sp_json_same(f.package, expected)) {
        char *got = sp_json_encode_alloc(f.package, NULL, NULL);
        check_fail(__FILE__, __LINE__, "%s: package\n  %s\nwant\n  %s", dir, got, want);
        free(got);
    }
    json_decref(expected);
    sp_folder_free(&f);
}

static void test_format01(void)
{
    const char *dir = new_folder();
    put(dir, "workflow.dot", DOT01);
    put(dir, "settings.json", SETTINGS01);
    check_package(dir,
                  "{\"format\":\"runspore.workflow/0.1\",\"name\":\"review\",\"start\":\"check\","
                  "\"limits\":{\"maxVisitsPerNode\":3},"
                  "\"actions\":{\"check\":{\"kind\":\"command\",\"argv\":[\"true\"],\"outcomes\":[\"ok\",\"red\"]},"
                  "\"fix\":{\"kind\":\"command\",\"argv\":[\"true\"]}},"
                  "\"nodes\":{\"check\":{\"kind\":\"activity\",\"action\":\"check\",\"input\":{\"$get\":[\"input\"]},"
                  "\"outcomes\":{\"ok\":\"wait\",\"red\":\"fix\"}},"
                  "\"fix\":{\"kind\":\"activity\",\"action\":\"fix\",\"outcomes\":{\"ok\":\"check\"}},"
                  "\"wait\":{\"kind\":\"await-signal\",\"signal\":\"approval\",\"outcomes\":{\"approved\":\"done\",\"rejected\":\"no\"}},"
                  "\"done\":{\"kind\":\"complete\"},"
                  "\"no\":{\"kind\":\"fail\",\"error\":{\"code\":\"review.rejected\",\"message\":\"rejected\"}}}}");
    /* the folder named by its workflow.dot is the same folder */
    char dot[600];
    snprintf(dot, sizeof dot, "%s/workflow.dot", dir);
    CHECK(sp_folder_named(dot) && sp_folder_named(dir));
    sp_folder f;
    sp_error err = {0};
    CHECK(sp_folder_read(dot, &f, &err) == 0);
    CHECK_STR(f.dir, dir);
    sp_folder_free(&f);
    snprintf(dot, sizeof dot, "%s/settings.json", dir);
    CHECK(!sp_folder_named(dot));
}

/* Every node kind and route member of 0.2: parallel branches and join, a
 * join's routes, map, sleep, a signal's timeout, loop limits' exhausted. */
static void test_format02(void)
{
    const char *dir = new_folder();
    put(dir, "workflow.dot",
        "digraph fan {\n"
        "  graph [format = \"spore.workflow/0.2\", start = review]\n"
        "  review [kind = parallel]; gather [kind = join]; each [kind = map]\n"
        "  pause [kind = sleep]; ask [kind = \"await-signal\"]; done [kind = complete]; bad [kind = fail]\n"
        "  review -> sec [branch = security]; review -> lint [branch = style]; review -> gather [on = join]\n"
        "  sec -> gather; lint -> gather; lint -> fix [on = red]; fix -> lint\n"
        "  gather -> each; gather -> bad [on = failed]\n"
        "  each -> pause; each -> bad [on = failed]\n"
        "  pause -> ask\n"
        "  ask -> done [on = approved]; ask -> bad [on = timeout]; ask -> bad [on = exhausted]\n"
        "}\n");
    put(dir, "settings.json",
        "{\"actions\": {\"a\": {\"kind\": \"command\", \"argv\": [\"true\"]},\n"
        "              \"l\": {\"kind\": \"command\", \"argv\": [\"true\"], \"outcomes\": [\"ok\", \"red\"]}},\n"
        " \"nodes\": {\"sec\": {\"action\": \"a\"}, \"lint\": {\"action\": \"l\"}, \"fix\": {\"action\": \"a\"},\n"
        "           \"each\": {\"items\": {\"$get\": [\"input\"]}, \"action\": \"a\", \"maxConcurrency\": 2},\n"
        "           \"pause\": {\"durationMs\": \"10\"},\n"
        "           \"ask\": {\"signal\": \"go\", \"timeoutMs\": \"60000\", \"loopLimits\": {\"approved\": 2}},\n"
        "           \"bad\": {\"error\": {\"code\": \"x\", \"message\": \"x\"}}}}\n");
    check_package(dir,
                  "{\"format\":\"spore.workflow/0.2\",\"name\":\"fan\",\"start\":\"review\","
                  "\"actions\":{\"a\":{\"kind\":\"command\",\"argv\":[\"true\"]},"
                  "\"l\":{\"kind\":\"command\",\"argv\":[\"true\"],\"outcomes\":[\"ok\",\"red\"]}},"
                  "\"nodes\":{"
                  "\"review\":{\"kind\":\"parallel\",\"branches\":{\"security\":\"sec\",\"style\":\"lint\"},\"join\":\"gather\"},"
                  "\"sec\":{\"kind\":\"activity\",\"action\":\"a\",\"outcomes\":{\"ok\":\"gather\"}},"
                  "\"lint\":{\"kind\":\"activity\",\"action\":\"l\",\"outcomes\":{\"ok\":\"gather\",\"red\":\"fix\"}},"
                  "\"fix\":{\"kind\":\"activity\",\"action\":\"a\",\"outcomes\":{\"ok\":\"lint\"}},"
                  "\"gather\":{\"kind\":\"join\",\"outcomes\":{\"ok\":\"each\",\"failed\":\"bad\"}},"
                  "\"each\":{\"kind\":\"map\",\"items\":{\"$get\":[\"input\"]},\"action\":\"a\",\"maxConcurrency\":2,"
                  "\"outcomes\":{\"ok\":\"pause\",\"failed\":\"bad\"}},"
                  "\"pause\":{\"kind\":\"sleep\",\"durationMs\":\"10\",\"outcomes\":{\"ok\":\"ask\"}},"
                  "\"ask\":{\"kind\":\"await-signal\",\"signal\":\"go\",\"timeoutMs\":\"60000\","
                  "\"loopLimits\":{\"approved\":2},\"outcomes\":{\"approved\":\"done\",\"timeout\":\"bad\",\"exhausted\":\"bad\"}},"
                  "\"done\":{\"kind\":\"complete\"},"
                  "\"bad\":{\"kind\":\"fail\",\"error\":{\"code\":\"x\",\"message\":\"x\"}}}}");
}

static void test_no_settings(void)
{
    const char *dir = new_folder();
    put(dir, "workflow.dot", "digraph tiny { format=\"runspore.workflow/0.1\"; start=done; done [kind=complete] }");
    check_package(dir, "{\"format\":\"runspore.workflow/0.1\",\"name\":\"tiny\",\"start\":\"done\","
                       "\"nodes\":{\"done\":{\"kind\":\"complete\"}}}");
}

static void test_references(void)
{
    const char *dir = new_folder();
    put(dir, "workflow.dot", "digraph refs { format=\"spore.workflow/0.2\"; start=ask; ask -> done; done [kind=complete] }");
    put(dir, "prompts/ask.md", "Say what you see.\n");
    put(dir, "schemas/answer.json", "{\"type\": \"object\",\n \"required\": [\"summary\"]}\n");
    put(dir, "schemas/ok.json", "{\"type\": \"object\"}");
    put(dir, "tools/run.sh", "#!/bin/sh\n");
    put(dir, "tools/lib/a.sh", "a\n");
    put(dir, "tools/lib/b.sh", "bb\n");
    put(dir, "settings.json",
        "{\"actions\": {\"agent\": {\"kind\": \"agent\", \"stepCli\": [\"spore-step\"],\n"
        "   \"outputSchema\": \"schemas/answer.json\", \"assets\": [\"tools/lib\", \"./tools/run.sh\", \"tools/lib/a.sh\"]}},\n"
        " \"nodes\": {\"ask\": {\"action\": \"agent\", \"instructions\": \"prompts/ask.md\",\n"
        "   \"input\": {\"context\": {\"$get\": [\"input\"]}}, \"outputSchemas\": {\"ok\": \"schemas/ok.json\"}}}}\n");
    check_package(dir,
                  "{\"format\":\"spore.workflow/0.2\",\"name\":\"refs\",\"start\":\"ask\","
                  "\"actions\":{\"agent\":{\"kind\":\"agent\",\"stepCli\":[\"spore-step\"],"
                  "\"outputSchema\":{\"type\":\"object\",\"required\":[\"summary\"]}}},"
                  "\"nodes\":{\"ask\":{\"kind\":\"activity\",\"action\":\"agent\","
                  "\"input\":{\"context\":{\"$get\":[\"input\"]},\"query\":\"Say what you see.\"},"
                  "\"outputSchemas\":{\"ok\":{\"type\":\"object\"}},\"outcomes\":{\"ok\":\"done\"}},"
                  "\"done\":{\"kind\":\"complete\"}}}");
    sp_folder f;
    sp_error err = {0};
    CHECK(sp_folder_read(dir, &f, &err) == 0);
    CHECK_INT(f.nassets, 3);
    if (f.nassets == 3) {
        CHECK_STR(f.assets[0].path, "tools/lib/a.sh");
        CHECK_STR(f.assets[1].path, "tools/lib/b.sh");
        CHECK_INT(f.assets[1].size, 3);
        CHECK_STR(f.assets[2].path, "tools/run.sh");
    }
    sp_folder_free(&f);
}

/* ---- build errors ---- */

typedef struct broken {
    const char *what;
    const char *dot;      /* NULL: a valid 0.1 graph */
    const char *settings; /* NULL: no settings.json */
    const char *code;
    const char *file;     /* "workflow.dot", "settings.json", or another file */
    unsigned line, column;
} broken;

#define GOOD_DOT "digraph g {\n  format=\"runspore.workflow/0.1\"; start=a\n  a -> done\n  done [kind=complete]\n}\n"
#define GOOD_SETTINGS "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"]}},\n \"nodes\": {\"a\": {\"action\": \"x\"}}}\n"

static const broken BROKEN[] = {
    {"a DOT syntax error", "digraph g {\n  a -- b\n}", GOOD_SETTINGS, "dot.invalid", "workflow.dot", 2, 5},
    {"no format", "digraph g { start=a; a -> done; done [kind=complete] }", GOOD_SETTINGS,
     "build.graph-format", "workflow.dot", 1, 9},
    {"an unknown format", "digraph g {\n format=\"runspore.workflow/9\"; start=a; a -> done; done [kind=complete] }",
     GOOD_SETTINGS, "build.graph-format", "workflow.dot", 2, 9},
    {"no start", "digraph g { format=\"runspore.workflow/0.1\"; a -> done; done [kind=complete] }",
     GOOD_SETTINGS, "build.graph-start", "workflow.dot", 1, 9},
    {"start is no node", "digraph g { format=\"runspore.workflow/0.1\"\n start=b; a -> done; done [kind=complete] }",
     GOOD_SETTINGS, "build.graph-start", "workflow.dot", 2, 8},
    {"a kind of another format", "digraph g { format=\"runspore.workflow/0.1\"; start=a\n a -> done; done [kind=parallel] }",
     GOOD_SETTINGS, "build.kind-unknown", "workflow.dot", 2, 24},
    {"a misspelled kind", "digraph g { format=\"runspore.workflow/0.1\"; start=a\n a [kind=actvity]; a -> done; done [kind=complete] }",
     GOOD_SETTINGS, "build.kind-unknown", "workflow.dot", 2, 10},
    {"a complete node with an edge", "digraph g { format=\"runspore.workflow/0.1\"; start=a\n a -> done\n done -> a\n done [kind=complete] }",
     GOOD_SETTINGS, "build.terminal-edge", "workflow.dot", 3, 2},
    {"a fail node with an edge", "digraph g { format=\"runspore.workflow/0.1\"; start=a\n a -> done; a -> f [on=failed]\n f -> done [on=x]; f [kind=fail]; done [kind=complete] }",
     "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"]}}, \"nodes\": {\"a\": {\"action\": \"x\"}, \"f\": {\"error\": {\"code\": \"e\", \"message\": \"m\"}}}}",
     "build.terminal-edge", "workflow.dot", 3, 2},
    {"two edges with one on", "digraph g { format=\"runspore.workflow/0.1\"; start=a\n a -> done\n a -> done [on=ok]; done [kind=complete] }",
     GOOD_SETTINGS, "build.duplicate-route", "workflow.dot", 3, 2},
    {"two branches of one name", "digraph g { format=\"spore.workflow/0.2\"; start=p; p [kind=parallel]; j [kind=join]\n p -> a [branch=x]; p -> b [branch=x]; p -> j [on=join] }",
     NULL, "build.duplicate-route", "workflow.dot", 2, 21},
    {"two joins", "digraph g { format=\"spore.workflow/0.2\"; start=p; p [kind=parallel]; j [kind=join]\n p -> j [on=join]; p -> j [on=join] }",
     NULL, "build.duplicate-route", "workflow.dot", 2, 20},
    {"a branch from an activity", "digraph g { format=\"spore.workflow/0.2\"; start=a\n a -> done [branch=x]; done [kind=complete] }",
     GOOD_SETTINGS, "build.route-invalid", "workflow.dot", 2, 20},
    {"a parallel edge that is neither branch nor join", "digraph g { format=\"spore.workflow/0.2\"; start=p; p [kind=parallel]\n p -> a }",
     NULL, "build.route-invalid", "workflow.dot", 2, 2},
    {"branch and on on one edge", "digraph g { format=\"spore.workflow/0.2\"; start=p; p [kind=parallel]\n p -> a [branch=x, on=join] }",
     NULL, "build.route-invalid", "workflow.dot", 2, 23},
    {"an on that is no outcome name", "digraph g { format=\"runspore.workflow/0.1\"; start=a\n a -> done [on=\"Not OK\"]; done [kind=complete] }",
     GOOD_SETTINGS, "build.route-invalid", "workflow.dot", 2, 16},
    {"settings that are not an object", GOOD_DOT, "[1]", "build.settings-invalid", "settings.json", 1, 1},
    {"an unknown settings member", GOOD_DOT, "{\"actions\": {},\n  \"nodse\": {}}", "build.settings-invalid",
     "settings.json", 2, 3},
    {"the format in settings", GOOD_DOT, "{\n\"format\": \"x\"}", "build.settings-invalid", "settings.json", 2, 1},
    {"nodes that are not an object", GOOD_DOT, "{\"nodes\": [\"a\"]}", "build.settings-invalid", "settings.json", 1, 11},
    {"a node entry that is not an object", GOOD_DOT, "{\"nodes\": {\"a\": \"x\"}}", "build.settings-invalid",
     "settings.json", 1, 17},
    {"settings for a node the graph lacks", GOOD_DOT,
     "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"]}},\n \"nodes\": {\"a\": {\"action\": \"x\"},\n   \"b\": {\"action\": \"x\"}}}",
     "build.settings-unknown-node", "settings.json", 3, 4},
    {"routes in settings", GOOD_DOT,
     "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"]}},\n \"nodes\": {\"a\": {\"action\": \"x\", \"outcomes\": {\"ok\": \"done\"}}}}",
     "build.settings-topology", "settings.json", 2, 33},
    {"a kind in settings", GOOD_DOT,
     "{\"nodes\": {\"a\": {\"kind\": \"activity\"}}}", "build.settings-topology", "settings.json", 1, 18},
    {"an activity without settings", GOOD_DOT, "{\"actions\": {}}", "build.activity-without-settings",
     "workflow.dot", 3, 3},
    {"a map without settings", "digraph g { format=\"spore.workflow/0.2\"; start=m\n m [kind=map]; m -> done; done [kind=complete] }",
     NULL, "build.activity-without-settings", "workflow.dot", 2, 2},
    {"a declared outcome with no edge", GOOD_DOT,
     "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"], \"outcomes\": [\"ok\", \"red\"]}},\n \"nodes\": {\"a\": {\"action\": \"x\"}}}",
     "build.outcome-unrouted", "workflow.dot", 3, 3},
    {"settings that are no JSON", GOOD_DOT, "{\"nodes\": {\n  \"a\": {\"action\": \"x\",}}}", "json.invalid",
     "settings.json", 2, 23},
    {"settings with a float", GOOD_DOT, "{\"limits\": {\n \"maxVisitsPerNode\": 1.5}}", "canonical.non-integer",
     "settings.json", 2, 22},
    {"an absolute instructions path", GOOD_DOT,
     "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"]}},\n \"nodes\": {\"a\": {\"action\": \"x\", \"instructions\": \"/etc/passwd\"}}}",
     "build.path-absolute", "settings.json", 2, 49},
    {"an instructions path with ..", GOOD_DOT,
     "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"]}},\n \"nodes\": {\"a\": {\"action\": \"x\", \"instructions\": \"p/../../x\"}}}",
     "build.path-parent", "settings.json", 2, 49},
    {"a missing instructions file", GOOD_DOT,
     "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"]}},\n \"nodes\": {\"a\": {\"action\": \"x\", \"instructions\": \"nope.md\"}}}",
     "build.path-missing", "settings.json", 2, 49},
    {"instructions that are no string", GOOD_DOT,
     "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"]}},\n \"nodes\": {\"a\": {\"action\": \"x\", \"instructions\": 7}}}",
     "build.reference-invalid", "settings.json", 2, 49},
    {"instructions with a query in the input", GOOD_DOT,
     "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"]}},\n \"nodes\": {\"a\": {\"action\": \"x\", \"instructions\": \"p.md\", \"input\": {\"query\": \"q\"}}}}",
     "build.instructions-conflict", "settings.json", 2, 49},
    {"an asset that escapes through a symlink", GOOD_DOT,
     "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"], \"assets\": [\"p.md\", \"out\"]}},\n \"nodes\": {\"a\": {\"action\": \"x\"}}}",
     "build.path-escapes", "settings.json", 1, 76},
    {"assets that are no list", GOOD_DOT,
     "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"], \"assets\": \"p.md\"}},\n \"nodes\": {\"a\": {\"action\": \"x\"}}}",
     "build.reference-invalid", "settings.json", 1, 67},
    {"a schema file that is no JSON", GOOD_DOT,
     "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"], \"outputSchema\": \"bad.json\"}},\n \"nodes\": {\"a\": {\"action\": \"x\"}}}",
     "json.invalid", "bad.json", 2, 8},
    {"an absolute runner module", GOOD_DOT,
     "{\"actions\": {\"x\": {\"kind\": \"component\",\n \"module\": \"/opt/r.wasm\"}},\n \"nodes\": {\"a\": {\"action\": \"x\"}}}",
     "build.path-absolute", "settings.json", 2, 12},
};

static void check_broken(const broken *b)
{
    const char *dir = new_folder();
    char dot[700], file[700], out[700];
    put(dir, "workflow.dot", b->dot ? b->dot : GOOD_DOT);
    if (b->settings)
        put(dir, "settings.json", b->settings);
    put(dir, "p.md", "prompt\n");
    put(dir, "bad.json", "{\n  \"a\": }\n");
    snprintf(out, sizeof out, "%s/..", dir);
    snprintf(dot, sizeof dot, "%s/out", dir);
    symlink(out, dot);
    sp_folder f;
    sp_error err = {0};
    if (sp_folder_read(dir, &f, &err) == 0) {
        check_fail(__FILE__, __LINE__, "%s: built", b->what);
        sp_folder_free(&f);
        return;
    }
    snprintf(file, sizeof file, "%s/%s", dir, b->file);
    const json_t *d = err.details;
    bool place = json_integer_value(json_object_get(d, "line")) == b->line &&
                 json_integer_value(json_object_get(d, "column")) == b->column;
    const char *got_file = json_string_value(json_object_get(d, "file"));
    if (strcmp(err.code, b->code) != 0 || !place || !got_file || strcmp(got_file, file) != 0)
        check_fail(__FILE__, __LINE__, "%s: %s %s:%lld:%lld (%s), want %s %s:%u:%u", b->what,
                   err.code, got_file ? got_file : "(no file)",
                   (long long)json_integer_value(json_object_get(d, "line")),
                   (long long)json_integer_value(json_object_get(d, "column")), err.message,
                   b->code, b->file, b->line, b->column);
    char prefix[800];
    snprintf(prefix, sizeof prefix, "%s:%u:%u: ", file, b->line, b->column);
    CHECK(strncmp(err.message, prefix, strlen(prefix)) == 0);
    check_count++;
    sp_error_clear(&err);
}

static void test_build_errors(void)
{
    for (size_t i = 0; i < sizeof BROKEN / sizeof BROKEN[0]; i++)
        check_broken(&BROKEN[i]);
}

static void test_missing_files(void)
{
    const char *dir = new_folder();
    sp_folder f;
    sp_error err = {0};
    CHECK(sp_folder_read(dir, &f, &err) == -1);
    CHECK_STR(err.code, "file.unreadable");
    sp_error_clear(&err);
    put(dir, "workflow.dot", GOOD_DOT);
    put(dir, "settings.json", GOOD_SETTINGS);
    char big[700];
    snprintf(big, sizeof big, "%s/big.bin", dir);
    CHECK(truncate(big, 0) == -1); /* it does not exist yet */
    FILE *fp = fopen(big, "w");
    fclose(fp);
    CHECK(truncate(big, (off_t)SP_ASSET_BYTES_MAX + 1) == 0); /* sparse: nothing is written */
    put(dir, "settings.json",
        "{\"actions\": {\"x\": {\"kind\": \"command\", \"argv\": [\"true\"], \"assets\": [\"big.bin\"]}}, "
        "\"nodes\": {\"a\": {\"action\": \"x\"}}}");
    CHECK(sp_folder_read(dir, &f, &err) == -1);
    CHECK_STR(err.code, "build.too-large");
    sp_error_clear(&err);
    unlink(big);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/spore-test-folder-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root))
        return 1;
    test_format01();
    test_format02();
    test_no_settings();
    test_references();
    test_build_errors();
    test_missing_files();
    char rm[400];
    snprintf(rm, sizeof rm, "rm -rf '%s'", root);
    if (system(rm) != 0)
        check_fail(__FILE__, __LINE__, "cannot remove %s", root);
    return check_done("test_folder");
}
