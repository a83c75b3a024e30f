/*
 * json_suite_agent.c - the JSONTestSuite (`test_parsing`, argv[1]) through
 * the step protocol's own parser (src/agent/jsontape.c) used as a JSON value
 * parser: every `n_` file rejected, every `y_` file accepted unless a stated
 * protocol rule rejects it, every `i_` file decided as the table says.
 * Value-parser mode: LF is whitespace (a protocol line never contains one);
 * CR outside strings stays a violation (no y_ file has one).
 *
 * Rules that reject a y_ file (agent-step.md §3): no duplicate member names
 * at any depth. The i_ decisions follow the same rules: numbers that
 * overflow a double are "Infinity" (rejected), numbers that underflow or
 * exceed 64-bit integers are finite (accepted), unpaired surrogate escapes
 * and invalid UTF-8 are rejected, nesting deeper than 64 is rejected, a
 * byte order mark is rejected.
 *
 * Must never skip: a missing directory, a file count other than the
 * expected one, or a table entry without its file is a failure.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/jsontape.h"
#include "check.h"

#define EXPECTED_Y 95
#define EXPECTED_N 188
#define EXPECTED_I 35

typedef struct decision {
    const char *file;
    const char *rule; /* NULL = accepted */
    int seen;
} decision;

static decision table[] = {
    /* y_ rejected by a protocol rule */
    {"y_object_duplicated_key.json", SP_JT_RULE_DUPLICATE, 0},
    {"y_object_duplicated_key_and_value.json", SP_JT_RULE_DUPLICATE, 0},
    /* i_: numbers */
    {"i_number_double_huge_neg_exp.json", NULL, 0},   /* underflows to 0: finite */
    {"i_number_huge_exp.json", SP_JT_RULE_NUMBER, 0}, /* overflows: Infinity */
    {"i_number_neg_int_huge_exp.json", SP_JT_RULE_NUMBER, 0},
    {"i_number_pos_double_huge_exp.json", SP_JT_RULE_NUMBER, 0},
    {"i_number_real_neg_overflow.json", SP_JT_RULE_NUMBER, 0},
    {"i_number_real_pos_overflow.json", SP_JT_RULE_NUMBER, 0},
    {"i_number_real_underflow.json", NULL, 0},
    {"i_number_too_big_neg_int.json", NULL, 0}, /* finite; never an integer where one is required */
    {"i_number_too_big_pos_int.json", NULL, 0},
    {"i_number_very_big_negative_int.json", NULL, 0},
    /* i_: unpaired surrogate escapes */
    {"i_object_key_lone_2nd_surrogate.json", SP_JT_RULE_SURROGATE, 0},
    {"i_string_1st_surrogate_but_2nd_missing.json", SP_JT_RULE_SURROGATE, 0},
    {"i_string_1st_valid_surrogate_2nd_invalid.json", SP_JT_RULE_SURROGATE, 0},
    {"i_string_incomplete_surrogate_and_escape_valid.json", SP_JT_RULE_SURROGATE, 0},
    {"i_string_incomplete_surrogate_pair.json", SP_JT_RULE_SURROGATE, 0},
    {"i_string_incomplete_surrogates_escape_valid.json", SP_JT_RULE_SURROGATE, 0},
    {"i_string_invalid_lonely_surrogate.json", SP_JT_RULE_SURROGATE, 0},
    {"i_string_invalid_surrogate.json", SP_JT_RULE_SURROGATE, 0},
    {"i_string_inverted_surrogates_U+1D11E.json", SP_JT_RULE_SURROGATE, 0},
    {"i_string_lone_second_surrogate.json", SP_JT_RULE_SURROGATE, 0},
    /* i_: invalid UTF-8 */
    {"i_string_UTF-16LE_with_BOM.json", SP_JT_RULE_UTF8, 0},
    {"i_string_UTF-8_invalid_sequence.json", SP_JT_RULE_UTF8, 0},
    {"i_string_UTF8_surrogate_U+D800.json", SP_JT_RULE_UTF8, 0},
    {"i_string_invalid_utf-8.json", SP_JT_RULE_UTF8, 0},
    {"i_string_iso_latin_1.json", SP_JT_RULE_UTF8, 0},
    {"i_string_lone_utf8_continuation_byte.json", SP_JT_RULE_UTF8, 0},
    {"i_string_not_in_unicode_range.json", SP_JT_RULE_UTF8, 0},
    {"i_string_overlong_sequence_2_bytes.json", SP_JT_RULE_UTF8, 0},
    {"i_string_overlong_sequence_6_bytes.json", SP_JT_RULE_UTF8, 0},
    {"i_string_overlong_sequence_6_bytes_null.json", SP_JT_RULE_UTF8, 0},
    {"i_string_truncated-utf-8.json", SP_JT_RULE_UTF8, 0},
    {"i_string_utf16BE_no_BOM.json", SP_JT_RULE_SYNTAX, 0}, /* NUL bytes outside strings */
    {"i_string_utf16LE_no_BOM.json", SP_JT_RULE_SYNTAX, 0},
    /* i_: structure */
    {"i_structure_500_nested_arrays.json", SP_JT_RULE_DEPTH, 0},
    {"i_structure_UTF-8_BOM_empty_object.json", SP_JT_RULE_BOM, 0},
};

static decision *find(const char *name)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].file, name) == 0)
            return &table[i];
    return NULL;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: json_suite_agent <json-test-suite-dir>\n");
        return 2;
    }
    DIR *d = opendir(argv[1]);
    CHECK(d != NULL);
    if (!d)
        return check_done("agent JSONTestSuite");
    int ny = 0, nn = 0, ni = 0;
    sp_jt t = {0};
    t.allow_lf = true;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        char kind = name[0];
        if ((kind != 'y' && kind != 'n' && kind != 'i') || name[1] != '_' ||
            !strstr(name, ".json"))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], name);
        size_t len;
        char *data = slurp(path, &len);
        CHECK(data != NULL);
        if (!data)
            continue;
        bool ok = sp_jt_parse(&t, data, len);
        const char *rule = ok ? NULL : t.rule;
        decision *dec = find(name);
        if (dec)
            dec->seen++;
        ny += kind == 'y';
        nn += kind == 'n';
        ni += kind == 'i';
        if (kind == 'n') {
            check_count++;
            if (ok)
                check_fail(__FILE__, __LINE__, "%s accepted, must be rejected", name);
        } else if (kind == 'y' && !dec) {
            check_count++;
            if (!ok)
                check_fail(__FILE__, __LINE__, "%s rejected (%s), must be accepted", name, rule);
        } else {
            check_count++;
            if (!dec)
                check_fail(__FILE__, __LINE__, "%s has no decision in the table", name);
            else if ((dec->rule == NULL) != ok || (rule && strcmp(rule, dec->rule) != 0))
                check_fail(__FILE__, __LINE__, "%s: got %s, want %s", name,
                           ok ? "accepted" : rule, dec->rule ? dec->rule : "accepted");
        }
        free(data);
    }
    closedir(d);
    sp_jt_free(&t);
    CHECK_INT(ny, EXPECTED_Y);
    CHECK_INT(nn, EXPECTED_N);
    CHECK_INT(ni, EXPECTED_I);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        check_count++;
        if (table[i].seen != 1)
            check_fail(__FILE__, __LINE__, "table entry %s matched %d files", table[i].file,
                       table[i].seen);
    }
    return check_done("agent JSONTestSuite");
}
