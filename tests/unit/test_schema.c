/*
 * test_schema.c - unit tests of src/schema/: the output-schema subset of
 * kernel.md §5 (every keyword accepted, every refused construct with its
 * exact JSON Pointer and rule), checks that pass and fail with the exact
 * path into the value and rule, and the "never the value" rule (no error
 * of a check holds a marker string taken from the checked value).
 *
 * Must never pass without compiling or checking: every helper counts a
 * check and reports the caller's line on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "check.h"
#include "schema/schema.h"

static json_t *load(int line, const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!v)
        check_fail(__FILE__, line, "test JSON does not parse: %s (%s)", jerr.text, text);
    return v;
}

static sp_schema *compile_at(int line, const char *text)
{
    json_t *doc = load(line, text);
    sp_schema *s = NULL;
    sp_schema_error err;
    int rc = doc ? sp_schema_compile(doc, &s, &err) : -1;
    json_decref(doc);
    if (rc != 0)
        check_fail(__FILE__, line, "compile refused (%d) at \"%s\" rule %s: %s", rc, err.path,
                   err.rule, err.message);
    return s;
}

#define COMPILES(text) compiles_at(__LINE__, (text))
static void compiles_at(int line, const char *text)
{
    check_count++;
    sp_schema_free(compile_at(line, text));
}

#define REFUSED(text, path, rule) refused_at(__LINE__, (text), (path), (rule))
static void refused_at(int line, const char *text, const char *path, const char *rule)
{
    check_count++;
    json_t *doc = load(line, text);
    if (!doc)
        return;
    sp_schema *s = NULL;
    sp_schema_error err;
    int rc = sp_schema_compile(doc, &s, &err);
    json_decref(doc);
    if (rc != -1 || s) {
        check_fail(__FILE__, line, "compile gave %d, want -1 (%s)", rc, text);
        sp_schema_free(s);
        return;
    }
    if (strcmp(err.path, path) != 0 || strcmp(err.rule, rule) != 0 || !err.message[0])
        check_fail(__FILE__, line, "refused at \"%s\" rule %s (%s), want \"%s\" rule %s",
                   err.path, err.rule, err.message, path, rule);
}

/* Check `value` against `s`: path NULL means it must match. */
#define CHECKS(s, value, path, rule) checks_at(__LINE__, (s), (value), (path), (rule))
static void checks_at(int line, const sp_schema *s, const char *value, const char *path,
                      const char *rule)
{
    check_count++;
    json_t *v = load(line, value);
    if (!v || !s) {
        json_decref(v);
        check_fail(__FILE__, line, "no schema or no value");
        return;
    }
    sp_schema_error err;
    int rc = sp_schema_check(s, v, &err);
    int quiet = sp_schema_check(s, v, NULL);
    json_decref(v);
    if (quiet != rc)
        check_fail(__FILE__, line, "check without an error gave %d, with one %d", quiet, rc);
    if (!path) {
        if (rc != 0)
            check_fail(__FILE__, line, "%s refused at \"%s\" rule %s: %s", value, err.path,
                       err.rule, err.message);
        return;
    }
    if (rc != 1)
        check_fail(__FILE__, line, "%s: check gave %d, want 1", value, rc);
    else if (strcmp(err.path, path) != 0 || strcmp(err.rule, rule) != 0 || !err.message[0])
        check_fail(__FILE__, line, "%s refused at \"%s\" rule %s (%s), want \"%s\" rule %s",
                   value, err.path, err.rule, err.message, path, rule);
}

/* `n` nested schemas: {"type":"array","items": ... {<inner>} ...}. */
static char *nested_items(int n, const char *inner)
{
    size_t cap = (size_t)n * 40 + strlen(inner) + 1;
    char *s = malloc(cap), *p = s;
    for (int i = 0; i < n - 1; i++)
        p += sprintf(p, "{\"type\":\"array\",\"items\":");
    p += sprintf(p, "%s", inner);
    for (int i = 0; i < n - 1; i++)
        *p++ = '}';
    *p = '\0';
    return s;
}

static char *repeat(const char *unit, int n, const char *before, const char *after)
{
    char *s = malloc(strlen(before) + strlen(unit) * (size_t)n + strlen(after) + 1);
    strcpy(s, before);
    for (int i = 0; i < n; i++)
        strcat(s, unit);
    strcat(s, after);
    return s;
}

/* ---- compile: what the subset accepts ---- */

static void test_accepts_every_keyword(void)
{
    COMPILES("{}");
    COMPILES("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"minLength\":0,"
             "\"maxLength\":3,\"description\":\"d\",\"title\":\"t\"}},\"required\":[\"a\"],"
             "\"additionalProperties\":false}");
    COMPILES("{\"type\":\"object\",\"properties\":{},\"required\":[]}");
    COMPILES("{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":-5,\"maximum\":5},"
             "\"minItems\":0,\"maxItems\":3}");
    COMPILES("{\"type\":\"boolean\"}");
    COMPILES("{\"type\":\"null\",\"description\":\"nothing\"}");
    COMPILES("{\"enum\":[\"a\",1,-2,true,false,null]}");
    COMPILES("{\"type\":\"string\",\"enum\":[\"a\",\"b\"]}");
    COMPILES("{\"const\":\"x\"}");
    COMPILES("{\"const\":null}");
    COMPILES("{\"const\":7,\"type\":\"integer\"}");
    COMPILES("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}],\"description\":\"x\","
             "\"title\":\"y\"}");
    COMPILES("{\"$defs\":{\"n\":{\"type\":\"string\"}},\"type\":\"object\",\"properties\":{"
             "\"a\":{\"$ref\":\"#/$defs/n\"},\"b\":{\"$ref\":\"#/$defs/n\",\"title\":\"b\"}}}");
    COMPILES("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"type\":\"integer\"}},"
             "\"$ref\":\"#/$defs/a\"}");
    COMPILES("{\"$defs\":{\"a/b\":{\"type\":\"null\"},\"c~d\":{\"type\":\"string\"}},"
             "\"anyOf\":[{\"$ref\":\"#/$defs/a~1b\"},{\"$ref\":\"#/$defs/c~0d\"}]}");
    /* an unused definition is compiled (and checked) too */
    COMPILES("{\"$defs\":{\"unused\":{\"type\":\"string\"}},\"type\":\"null\"}");
    COMPILES("{\"type\":\"integer\",\"minimum\":-9007199254740991,\"maximum\":9007199254740991}");
}

static void test_depth_limit(void)
{
    char *ok = nested_items(32, "{\"type\":\"integer\"}");
    COMPILES(ok);
    free(ok);
    char *deep = nested_items(33, "{\"type\":\"integer\"}");
    char *path = repeat("/items", 32, "", "");
    REFUSED(deep, path, "depth");
    free(deep);
    free(path);

    /* after inlining: a definition of height 31 fits at depth 2 (its own
     * place), not at depth 3 */
    char *def = nested_items(31, "{\"type\":\"null\"}");
    char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"$defs\":{\"d\":%s},\"type\":\"object\",\"properties\":{\"a\":"
             "{\"$ref\":\"#/$defs/d\"}}}", def);
    COMPILES(buf);
    snprintf(buf, sizeof buf,
             "{\"$defs\":{\"d\":%s},\"type\":\"object\",\"properties\":{\"a\":"
             "{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/d\"}}}}", def);
    REFUSED(buf, "/properties/a/items/$ref", "depth");
    free(def);
    /* a definition of height 32 does not fit at its own place */
    def = nested_items(32, "{\"type\":\"null\"}");
    snprintf(buf, sizeof buf, "{\"$defs\":{\"d\":%s}}", def);
    path = repeat("/items", 31, "/$defs/d", "");
    REFUSED(buf, path, "depth");
    free(path);
    free(def);
}

/* Definitions d1..d<levels> that use the one below twice: the inlined
 * size of d<i> is 2^(i+1) - 1 schemas. */
static char *doubling(int levels)
{
    char *buf = malloc(8192), *p = buf;
    p += sprintf(p, "{\"$defs\":{\"d0\":{\"type\":\"null\"}");
    for (int i = 1; i <= levels; i++)
        p += sprintf(p, ",\"d%d\":{\"anyOf\":[{\"$ref\":\"#/$defs/d%d\"},{\"$ref\":\"#/$defs/d%d\"}]}",
                     i, i - 1, i - 1);
    sprintf(p, "},\"$ref\":\"#/$defs/d%d\"}", levels);
    return buf;
}

static void test_size_limit(void)
{
    char *ok = doubling(12); /* 8191 schemas once inlined */
    sp_schema *s = compile_at(__LINE__, ok);
    CHECKS(s, "null", NULL, NULL);
    CHECKS(s, "1", "", "anyOf");
    sp_schema_free(s);
    free(ok);
    char *big = doubling(13); /* 16383 */
    REFUSED(big, "/$defs/d13", "size");
    free(big);
}

/* ---- compile: what it refuses, where and by which rule ---- */

static void test_refuses_types_and_forms(void)
{
    REFUSED("true", "", "schema");
    REFUSED("[]", "", "schema");
    REFUSED("{\"type\":[\"string\",\"null\"]}", "/type", "type");
    REFUSED("{\"type\":\"number\"}", "/type", "type");
    REFUSED("{\"type\":\"Object\"}", "/type", "type");
    REFUSED("{\"type\":3}", "/type", "type");
    REFUSED("{\"type\":\"object\",\"properties\":{\"a\":true}}", "/properties/a", "schema");
    REFUSED("{\"type\":\"object\",\"properties\":[]}", "/properties", "properties");
    REFUSED("{\"description\":1}", "/description", "description");
    REFUSED("{\"title\":null}", "/title", "title");
    REFUSED("{\"anyOf\":[{}],\"title\":[]}", "/title", "title");
}

static void test_refuses_unknown_keywords(void)
{
    static const char *const unknown[] = {"patternProperties", "oneOf", "allOf", "not",
                                          "$schema", "$id", "format", "pattern", "prefixItems",
                                          "if", "default", "definitions", "exclusiveMinimum",
                                          "multipleOf", "uniqueItems", "$comment"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        char text[200], path[64];
        snprintf(text, sizeof text, "{\"type\":\"object\",\"%s\":{}}", unknown[i]);
        snprintf(path, sizeof path, "/%s", unknown[i]);
        REFUSED(text, path, "unsupported");
    }
    REFUSED("{\"type\":\"object\",\"properties\":{\"x/y\":{\"type\":\"string\",\"format\":\"email\"}}}",
            "/properties/x~1y/format", "unsupported");
    REFUSED("{\"type\":\"object\",\"properties\":{\"a~b\":{\"oneOf\":[]}}}",
            "/properties/a~0b/oneOf", "unsupported");
}

static void test_refuses_object_keywords(void)
{
    REFUSED("{\"type\":\"object\",\"additionalProperties\":true}", "/additionalProperties",
            "additionalProperties");
    REFUSED("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}",
            "/additionalProperties", "additionalProperties");
    REFUSED("{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"a\",\"b\"]}",
            "/required/1", "required");
    REFUSED("{\"type\":\"object\",\"required\":[\"a\"]}", "/required/0", "required");
    REFUSED("{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"a\",\"a\"]}",
            "/required/1", "required");
    REFUSED("{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[1]}", "/required/0",
            "required");
    REFUSED("{\"type\":\"object\",\"required\":\"a\"}", "/required", "required");
    /* the object keywords need "type": "object" */
    REFUSED("{\"properties\":{}}", "/properties", "properties");
    REFUSED("{\"type\":\"string\",\"required\":[]}", "/required", "required");
    REFUSED("{\"additionalProperties\":false}", "/additionalProperties", "additionalProperties");
}

static void test_refuses_array_and_bounds(void)
{
    REFUSED("{\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}", "/items", "items");
    REFUSED("{\"type\":\"array\",\"items\":true}", "/items", "items");
    REFUSED("{\"items\":{}}", "/items", "items");
    REFUSED("{\"type\":\"string\",\"minItems\":1}", "/minItems", "minItems");
    REFUSED("{\"type\":\"array\",\"maxLength\":1}", "/maxLength", "maxLength");
    REFUSED("{\"type\":\"string\",\"minimum\":1}", "/minimum", "minimum");
    REFUSED("{\"type\":\"integer\",\"maxItems\":1}", "/maxItems", "maxItems");
    REFUSED("{\"minLength\":1}", "/minLength", "minLength");
    REFUSED("{\"type\":\"string\",\"minLength\":-1}", "/minLength", "minLength");
    REFUSED("{\"type\":\"string\",\"maxLength\":1.5}", "/maxLength", "maxLength");
    REFUSED("{\"type\":\"array\",\"maxItems\":\"3\"}", "/maxItems", "maxItems");
    REFUSED("{\"type\":\"array\",\"minItems\":-3}", "/minItems", "minItems");
    REFUSED("{\"type\":\"integer\",\"minimum\":0.5}", "/minimum", "minimum");
    REFUSED("{\"type\":\"integer\",\"maximum\":1.0}", "/maximum", "maximum");
}

static void test_refuses_enum_const(void)
{
    REFUSED("{\"enum\":[\"a\",1.5]}", "/enum/1", "enum");
    REFUSED("{\"enum\":[2.0]}", "/enum/0", "enum");
    REFUSED("{\"enum\":[{}]}", "/enum/0", "enum");
    REFUSED("{\"enum\":[\"a\",[1]]}", "/enum/1", "enum");
    REFUSED("{\"enum\":[]}", "/enum", "enum");
    REFUSED("{\"enum\":\"a\"}", "/enum", "enum");
    REFUSED("{\"const\":1.5}", "/const", "const");
    REFUSED("{\"const\":[]}", "/const", "const");
    REFUSED("{\"const\":{\"a\":1}}", "/const", "const");
}

static void test_refuses_any_of(void)
{
    REFUSED("{\"anyOf\":[{\"type\":\"string\"}],\"type\":\"string\"}", "/type", "anyOf");
    REFUSED("{\"anyOf\":[{}],\"enum\":[1]}", "/enum", "anyOf");
    REFUSED("{\"anyOf\":[{}],\"$ref\":\"#/$defs/a\",\"$defs\":{\"a\":{}}}", "/$ref", "anyOf");
    REFUSED("{\"anyOf\":[]}", "/anyOf", "anyOf");
    REFUSED("{\"anyOf\":{}}", "/anyOf", "anyOf");
    REFUSED("{\"anyOf\":[{},1]}", "/anyOf/1", "schema");
    REFUSED("{\"anyOf\":[{\"type\":\"object\",\"additionalProperties\":true}]}",
            "/anyOf/0/additionalProperties", "additionalProperties");
}

static void test_refuses_refs(void)
{
    REFUSED("{\"$defs\":{},\"$ref\":\"#/$defs/missing\"}", "/$ref", "$ref");
    REFUSED("{\"$ref\":\"#/$defs/missing\"}", "/$ref", "$ref");
    REFUSED("{\"$defs\":{\"x\":{}},\"$ref\":\"#/definitions/x\"}", "/$ref", "$ref");
    REFUSED("{\"$defs\":{\"x\":{}},\"$ref\":\"other.json#/$defs/x\"}", "/$ref", "$ref");
    REFUSED("{\"$ref\":\"#\"}", "/$ref", "$ref");
    REFUSED("{\"$defs\":{\"x\":{}},\"$ref\":\"#/$defs/\"}", "/$ref", "$ref");
    REFUSED("{\"$defs\":{\"a\":{\"type\":\"object\",\"properties\":{\"b\":{}}}},"
            "\"$ref\":\"#/$defs/a/properties/b\"}", "/$ref", "$ref");
    REFUSED("{\"$defs\":{\"a b\":{}},\"$ref\":\"#/$defs/a%20b\"}", "/$ref", "$ref");
    REFUSED("{\"$defs\":{\"a~b\":{}},\"$ref\":\"#/$defs/a~2b\"}", "/$ref", "$ref");
    REFUSED("{\"$ref\":1}", "/$ref", "$ref");
    REFUSED("{\"$defs\":{\"a\":{}},\"$ref\":\"#/$defs/a\",\"type\":\"string\"}", "/type", "$ref");
    REFUSED("{\"$defs\":{\"a\":{\"type\":\"string\"}},\"type\":\"object\",\"properties\":{"
            "\"p\":{\"$ref\":\"#/$defs/a\",\"minLength\":1}}}", "/properties/p/minLength", "$ref");
    /* $defs only at the root, as an object of schemas */
    REFUSED("{\"type\":\"object\",\"properties\":{\"a\":{\"$defs\":{}}}}", "/properties/a/$defs",
            "$defs");
    REFUSED("{\"$defs\":[]}", "/$defs", "$defs");
    REFUSED("{\"$defs\":{\"a\":{\"type\":\"strin\"}}}", "/$defs/a/type", "type");
    REFUSED("{\"$defs\":{\"a\":5}}", "/$defs/a", "schema");
}

static void test_refuses_cycles(void)
{
    REFUSED("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},"
            "\"type\":\"null\"}", "/$defs/b/$ref", "$ref");
    REFUSED("{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"next\":"
            "{\"$ref\":\"#/$defs/node\"}}}},\"$ref\":\"#/$defs/node\"}",
            "/$defs/node/properties/next/$ref", "$ref");
    REFUSED("{\"$defs\":{\"self\":{\"$ref\":\"#/$defs/self\"}}}", "/$defs/self/$ref", "$ref");
    /* a definition behind a cycle is not named: the cycle is */
    REFUSED("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/c\"},"
            "\"c\":{\"anyOf\":[{\"type\":\"null\"},{\"$ref\":\"#/$defs/b\"}]}}}",
            "/$defs/c/anyOf/1/$ref", "$ref");
    /* a long chain of aliases is no cycle, and no deep recursion either */
    char *chain = malloc(200000), *p = chain;
    p += sprintf(p, "{\"$defs\":{\"e\":{\"type\":\"integer\"}");
    for (int i = 0; i < 5000; i++) {
        if (i + 1 < 5000)
            p += sprintf(p, ",\"a%d\":{\"$ref\":\"#/$defs/a%d\"}", i, i + 1);
        else
            p += sprintf(p, ",\"a%d\":{\"$ref\":\"#/$defs/e\"}", i);
    }
    sprintf(p, "},\"$ref\":\"#/$defs/a0\"}");
    sp_schema *s = compile_at(__LINE__, chain);
    CHECKS(s, "7", NULL, NULL);
    CHECKS(s, "\"7\"", "", "type");
    sp_schema_free(s);
    free(chain);
}

/* ---- check: paths into the value and rules ---- */

static const char *ITEMS_SCHEMA =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"items\"],"
    " \"properties\":{"
    "  \"items\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":5,\"items\":"
    "   {\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"name\"],"
    "    \"properties\":{"
    "     \"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4},"
    "     \"n\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":10},"
    "     \"tag\":{\"enum\":[\"a\",\"b\",3,null]},"
    "     \"k\":{\"const\":true}}}},"
    "  \"mode\":{\"anyOf\":[{\"type\":\"string\",\"maxLength\":2},{\"type\":\"null\"}]},"
    "  \"a/b~c\":{\"type\":\"boolean\"}}}";

static void test_check_paths_and_rules(void)
{
    sp_schema *s = compile_at(__LINE__, ITEMS_SCHEMA);
    CHECKS(s, "{\"items\":[{\"name\":\"x\"}]}", NULL, NULL);
    CHECKS(s, "{\"items\":[{\"name\":\"abcd\",\"n\":0,\"tag\":null,\"k\":true},{\"name\":\"x\","
              "\"n\":10,\"tag\":3}],\"mode\":null,\"a/b~c\":false}", NULL, NULL);
    CHECKS(s, "{\"items\":[{\"name\":\"x\"},{\"name\":\"x\"},{\"name\":\"x\"},{\"name\":\"\"}]}",
           "/items/3/name", "minLength");
    CHECKS(s, "{\"items\":[{\"name\":\"abcde\"}]}", "/items/0/name", "maxLength");
    CHECKS(s, "{\"items\":[{\"name\":5}]}", "/items/0/name", "type");
    CHECKS(s, "{\"items\":[{\"name\":\"x\"},{}]}", "/items/1/name", "required");
    CHECKS(s, "{}", "/items", "required");
    CHECKS(s, "{\"items\":[{\"name\":\"x\",\"extra\":1}]}", "/items/0", "additionalProperties");
    CHECKS(s, "{\"items\":[{\"name\":\"x\"}],\"other\":1}", "", "additionalProperties");
    CHECKS(s, "{\"items\":[{\"name\":\"x\",\"n\":-1}]}", "/items/0/n", "minimum");
    CHECKS(s, "{\"items\":[{\"name\":\"x\",\"n\":11}]}", "/items/0/n", "maximum");
    CHECKS(s, "{\"items\":[{\"name\":\"x\",\"n\":1.0}]}", "/items/0/n", "type");
    CHECKS(s, "{\"items\":[{\"name\":\"x\",\"n\":\"1\"}]}", "/items/0/n", "type");
    CHECKS(s, "{\"items\":[{\"name\":\"x\",\"tag\":\"c\"}]}", "/items/0/tag", "enum");
    CHECKS(s, "{\"items\":[{\"name\":\"x\",\"tag\":3.0}]}", "/items/0/tag", "enum");
    CHECKS(s, "{\"items\":[{\"name\":\"x\",\"tag\":false}]}", "/items/0/tag", "enum");
    CHECKS(s, "{\"items\":[{\"name\":\"x\",\"k\":false}]}", "/items/0/k", "const");
    CHECKS(s, "{\"items\":[{\"name\":\"x\",\"k\":1}]}", "/items/0/k", "const");
    CHECKS(s, "{\"items\":[]}", "/items", "minItems");
    CHECKS(s, "{\"items\":[{\"name\":\"x\"},{\"name\":\"x\"},{\"name\":\"x\"},{\"name\":\"x\"},"
              "{\"name\":\"x\"},{\"name\":\"x\"}]}", "/items", "maxItems");
    CHECKS(s, "{\"items\":{}}", "/items", "type");
    CHECKS(s, "{\"items\":[{\"name\":\"x\"}],\"mode\":3}", "/mode", "anyOf");
    CHECKS(s, "{\"items\":[{\"name\":\"x\"}],\"mode\":\"abc\"}", "/mode", "anyOf");
    CHECKS(s, "{\"items\":[{\"name\":\"x\"}],\"mode\":\"ab\"}", NULL, NULL);
    CHECKS(s, "{\"items\":[{\"name\":\"x\"}],\"a/b~c\":null}", "/a~1b~0c", "type");
    CHECKS(s, "[]", "", "type");
    CHECKS(s, "null", "", "type");
    /* the first mismatch in the fixed order: required before the members */
    CHECKS(s, "{\"items\":[{\"n\":-1}]}", "/items/0/name", "required");
    sp_schema_free(s);
}

static void test_check_lengths_are_code_points(void)
{
    sp_schema *s = compile_at(__LINE__, "{\"type\":\"string\",\"minLength\":2,\"maxLength\":4}");
    CHECKS(s, "\"h\\u00e9ll\"", NULL, NULL);                     /* 4 code points, 5 bytes */
    CHECKS(s, "\"\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00\"", NULL, NULL);
    CHECKS(s, "\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\"", "", "maxLength"); /* 5, 10 bytes */
    CHECKS(s, "\"\\ud83d\\ude00\"", "", "minLength");           /* 1 code point, 4 bytes */
    CHECKS(s, "\"a\\u0000\"", NULL, NULL);                        /* U+0000 counts */
    sp_schema_free(s);
}

static void test_check_types(void)
{
    static const struct {
        const char *type, *good, *bad;
    } cases[] = {
        {"object", "{}", "[]"},     {"array", "[]", "{}"},    {"string", "\"\"", "1"},
        {"integer", "-3", "3.5"},   {"boolean", "false", "0"}, {"null", "null", "false"},
        {"integer", "0", "\"0\""},  {"boolean", "true", "null"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[64];
        snprintf(text, sizeof text, "{\"type\":\"%s\"}", cases[i].type);
        sp_schema *s = compile_at(__LINE__, text);
        CHECKS(s, cases[i].good, NULL, NULL);
        CHECKS(s, cases[i].bad, "", "type");
        sp_schema_free(s);
    }
    sp_schema *any = compile_at(__LINE__, "{\"description\":\"anything\"}");
    CHECKS(any, "1.5", NULL, NULL);
    CHECKS(any, "{\"a\":[1,{}]}", NULL, NULL);
    sp_schema_free(any);
    /* an enum without a type: 1 and 1.0 are not the same value */
    sp_schema *e = compile_at(__LINE__, "{\"enum\":[1,\"a\\u0000b\"]}");
    CHECKS(e, "1", NULL, NULL);
    CHECKS(e, "1.0", "", "enum");
    CHECKS(e, "\"a\\u0000b\"", NULL, NULL);
    CHECKS(e, "\"a\"", "", "enum");
    sp_schema_free(e);
}

static void test_check_refs(void)
{
    sp_schema *s = compile_at(__LINE__,
        "{\"$defs\":{\"id\":{\"type\":\"string\",\"minLength\":3},"
        "  \"pair\":{\"type\":\"object\",\"required\":[\"from\",\"to\"],\"properties\":{"
        "    \"from\":{\"$ref\":\"#/$defs/id\"},\"to\":{\"$ref\":\"#/$defs/id\"}}}},"
        " \"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/pair\"}}");
    CHECKS(s, "[{\"from\":\"abc\",\"to\":\"defg\"}]", NULL, NULL);
    CHECKS(s, "[{\"from\":\"abc\",\"to\":\"defg\"},{\"from\":\"abc\",\"to\":\"de\"}]", "/1/to",
           "minLength");
    CHECKS(s, "[{\"from\":\"ab\",\"to\":\"defg\"}]", "/0/from", "minLength");
    CHECKS(s, "[{\"from\":\"abc\"}]", "/0/to", "required");
    sp_schema_free(s);
}

static void test_check_deep_value(void)
{
    char *schema = nested_items(32, "{\"type\":\"integer\"}");
    sp_schema *s = compile_at(__LINE__, schema);
    free(schema);
    char *good = repeat("[", 31, "", "1");
    char *bad = repeat("[", 31, "", "\"x\"");
    char *tail = repeat("]", 31, "", "");
    char *g = repeat("", 0, good, tail), *b = repeat("", 0, bad, tail);
    char *path = repeat("/0", 31, "", "");
    CHECKS(s, g, NULL, NULL);
    CHECKS(s, b, path, "type");
    free(good), free(bad), free(tail), free(g), free(b), free(path);
    sp_schema_free(s);
}

static void test_long_paths_are_cut(void)
{
    char *key = repeat("x", 300, "", "");
    char *schema = repeat("", 0, "{\"type\":\"object\",\"properties\":{\"", "");
    char buf[2048];
    snprintf(buf, sizeof buf, "%s%s\":{\"type\":\"string\"}}}", schema, key);
    sp_schema *s = compile_at(__LINE__, buf);
    snprintf(buf, sizeof buf, "{\"%s\":1}", key);
    json_t *v = load(__LINE__, buf);
    sp_schema_error err;
    CHECK_INT(sp_schema_check(s, v, &err), 1);
    CHECK_INT(strlen(err.path), SP_SCHEMA_PATH_MAX - 1);
    CHECK(strncmp(err.path, "/xxx", 4) == 0);
    CHECK(strcmp(err.path + strlen(err.path) - 3, "...") == 0);
    json_decref(v);
    sp_schema_free(s);
    free(key);
    free(schema);

    /* a cut never splits a character: "é" is two bytes */
    key = repeat("\\u00e9", 200, "", "");
    snprintf(buf, sizeof buf, "{\"type\":\"object\",\"properties\":{\"%s\":{\"type\":\"null\"}}}",
             key);
    s = compile_at(__LINE__, buf);
    snprintf(buf, sizeof buf, "{\"%s\":1}", key);
    v = load(__LINE__, buf);
    CHECK_INT(sp_schema_check(s, v, &err), 1);
    CHECK_INT(strlen(err.path), 1 + 2 * 125 + 3);
    CHECK(sp_utf8_valid(err.path, strlen(err.path)));
    json_decref(v);
    sp_schema_free(s);
    free(key);
}

/* ---- the "never the value" rule ---- */

#define MARK "QZXMARK"

static void never_the_value_at(int line, const sp_schema *s, const char *value)
{
    check_count++;
    json_t *v = load(line, value);
    sp_schema_error err;
    int rc = v && s ? sp_schema_check(s, v, &err) : -1;
    json_decref(v);
    if (rc != 1)
        check_fail(__FILE__, line, "%s: check gave %d, want a mismatch", value, rc);
    else if (strstr(err.path, MARK) || strstr(err.message, MARK) || strstr(err.rule, MARK) ||
             strstr(err.path, "QZX") || strstr(err.message, "QZX"))
        check_fail(__FILE__, line, "the error holds a part of the value: \"%s\" %s %s", err.path,
                   err.rule, err.message);
}

static void test_never_the_value(void)
{
    sp_schema *s = compile_at(__LINE__, ITEMS_SCHEMA);
    static const char *const values[] = {
        "\"" MARK "\"",
        "{\"" MARK "\":1}",
        "{\"items\":[{\"name\":\"x\"}],\"" MARK "\":\"" MARK "\"}",
        "{\"items\":[{\"name\":\"x\",\"" MARK "\":{\"" MARK "\":[\"" MARK "\"]}}]}",
        "{\"items\":[{\"name\":\"" MARK "\"}]}",
        "{\"items\":[{\"name\":\"x\",\"tag\":\"" MARK "\"}]}",
        "{\"items\":[{\"name\":\"x\",\"k\":\"" MARK "\"}]}",
        "{\"items\":[{\"name\":[\"" MARK "\"]}]}",
        "{\"items\":[{\"name\":\"x\"}],\"mode\":\"" MARK "\"}",
        "{\"items\":\"" MARK "\"}",
        "{\"items\":[\"" MARK "\"]}",
        "[\"" MARK "\",{\"" MARK "\":null}]",
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        never_the_value_at(__LINE__, s, values[i]);
    sp_schema_free(s);
    sp_schema *c = compile_at(__LINE__, "{\"const\":\"x\"}");
    never_the_value_at(__LINE__, c, "\"" MARK "\"");
    sp_schema_free(c);
}

int main(void)
{
    test_accepts_every_keyword();
    test_depth_limit();
    test_size_limit();
    test_refuses_types_and_forms();
    test_refuses_unknown_keywords();
    test_refuses_object_keywords();
    test_refuses_array_and_bounds();
    test_refuses_enum_const();
    test_refuses_any_of();
    test_refuses_refs();
    test_refuses_cycles();
    test_check_paths_and_rules();
    test_check_lengths_are_code_points();
    test_check_types();
    test_check_refs();
    test_check_deep_value();
    test_long_paths_are_cut();
    test_never_the_value();
    return check_done("test_schema");
}
