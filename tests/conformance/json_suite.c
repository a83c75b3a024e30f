/*
 * json_suite.c - runs sp_json_parse over every file of the JSONTestSuite
 * `test_parsing` directory (argv[1]).
 *
 * Verdicts: every `n_` file is rejected, with canonical.syntax unless the
 * table below names an earlier problem of another kind; every `y_` file is
 * accepted unless the table names the canonical-domain rule that rejects it;
 * every `i_` file has an entry in the table. For every file in the table the
 * exact outcome is asserted (the error code, or acceptance and, where given,
 * the canonical bytes). Every accepted file must also re-encode, and its
 * encoding must pass sp_json_parse_canonical unchanged.
 *
 * The table is the one in docs/canonical-json.md; keep the two in sync.
 *
 * Must never skip: a missing or empty directory, a file count other than the
 * expected one, or a table entry without its file is a failure.
 */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"

/* The files of the copied suite (conformance/json-test-suite/README.md). */
#define EXPECTED_Y 95
#define EXPECTED_N 188
#define EXPECTED_I 35

#define ACCEPT NULL
#define SYNTAX "canonical.syntax"
#define NON_INTEGER "canonical.non-integer"
#define OUT_OF_RANGE "canonical.integer-out-of-range"
#define DUPLICATE "canonical.duplicate-key"
#define TOO_DEEP "canonical.too-deep"

/* Rules of kernel.md §7.2 / VECTORS.md §1 cited by the table. */
#define R_FLOAT "a number token with a fraction or exponent is non-integer unless its value is zero"
#define R_BIG_FLOAT "an integral float-form token above 2^53-1 is out of range, not non-integer"
#define R_RANGE "integers outside +-(2^53-1) are out of range (also beyond 64 bits)"
#define R_DUP "duplicate keys are rejected at any depth"
#define R_ZERO "a zero-valued number token becomes the integer 0"
#define R_NUL "the escape \\u0000 is a valid string character (keys included)"
#define R_DEPTH "nesting deeper than 32 is too-deep"
#define R_SURROGATE "a lone or misordered surrogate escape is invalid Unicode: syntax"
#define R_UTF8 "input must be UTF-8 (no overlongs, no encoded surrogates, <= U+10FFFF): syntax"
#define R_RAW_NUL "a raw NUL byte is a syntax error"
#define R_BOM "a byte order mark is not JSON whitespace: syntax"
#define R_EARLIEST "earliest problem wins: a well-formed number token before the syntax error"
#define R_ESCAPES "minimal escapes; '/' is never escaped; DEL and U+2028 stay raw"

typedef struct decision {
    const char *file;
    const char *code;      /* ACCEPT, or the error code sp_json_parse must give */
    const char *canonical; /* when accepted and non-NULL: the exact encoding */
    const char *rule;
    int seen;
} decision;

static decision table[] = {
    /* ---- y_: accepted by JSON, rejected (or normalized) by the profile ---- */
    {"y_number.json", OUT_OF_RANGE, NULL, R_BIG_FLOAT " ([123e65])", 0},
    {"y_number_double_close_to_zero.json", NON_INTEGER, NULL, R_FLOAT, 0},
    {"y_number_int_with_exp.json", NON_INTEGER, NULL, R_FLOAT " ([20e1] is 200)", 0},
    {"y_number_real_capital_e.json", OUT_OF_RANGE, NULL, R_BIG_FLOAT " ([1E22])", 0},
    {"y_number_real_capital_e_neg_exp.json", NON_INTEGER, NULL, R_FLOAT, 0},
    {"y_number_real_capital_e_pos_exp.json", NON_INTEGER, NULL, R_FLOAT " ([1E+2] is 100)", 0},
    {"y_number_real_exponent.json", OUT_OF_RANGE, NULL, R_BIG_FLOAT " ([123e45])", 0},
    {"y_number_real_fraction_exponent.json", OUT_OF_RANGE, NULL, R_BIG_FLOAT " ([123.456e78])", 0},
    {"y_number_real_neg_exp.json", NON_INTEGER, NULL, R_FLOAT, 0},
    {"y_number_real_pos_exponent.json", NON_INTEGER, NULL, R_FLOAT " ([1e+2] is 100)", 0},
    {"y_number_simple_real.json", NON_INTEGER, NULL, R_FLOAT, 0},
    {"y_object_duplicated_key.json", DUPLICATE, NULL, R_DUP, 0},
    {"y_object_duplicated_key_and_value.json", DUPLICATE, NULL, R_DUP, 0},
    {"y_object_extreme_numbers.json", OUT_OF_RANGE, NULL, R_BIG_FLOAT " (-1.0e+28 comes first)", 0},
    {"y_structure_lonely_negative_real.json", NON_INTEGER, NULL, R_FLOAT, 0},
    /* ---- y_: accepted, with the canonical form pinned ---- */
    {"y_number_0e+1.json", ACCEPT, "[0]", R_ZERO, 0},
    {"y_number_0e1.json", ACCEPT, "[0]", R_ZERO, 0},
    {"y_number_minus_zero.json", ACCEPT, "[0]", R_ZERO, 0},
    {"y_number_negative_zero.json", ACCEPT, "[0]", R_ZERO, 0},
    {"y_string_null_escape.json", ACCEPT, "[\"\\u0000\"]", R_NUL, 0},
    {"y_object_escaped_null_in_key.json", ACCEPT, "{\"foo\\u0000bar\":42}", R_NUL, 0},
    {"y_string_allowed_escapes.json", ACCEPT, "[\"\\\"\\\\/\\b\\f\\n\\r\\t\"]", R_ESCAPES, 0},
    {"y_string_with_del_character.json", ACCEPT, "[\"a\x7f" "a\"]", R_ESCAPES, 0},
    {"y_string_u+2028_line_sep.json", ACCEPT, "[\"\xe2\x80\xa8\"]", R_ESCAPES, 0},
    {"y_string_escaped_control_character.json", ACCEPT, "[\"\\u0012\"]", R_ESCAPES, 0},

    /* ---- n_: rejected, by an earlier problem than the syntax error ---- */
    {"n_number_-1.0..json", NON_INTEGER, NULL, R_EARLIEST " (-1.0, then '.')", 0},
    {"n_number_0.1.2.json", NON_INTEGER, NULL, R_EARLIEST " (0.1, then '.')", 0},
    {"n_number_invalid-negative-real.json", NON_INTEGER, NULL,
     R_EARLIEST " (-123.123, then 'foo')", 0},
    {"n_number_invalid-utf-8-in-exponent.json", NON_INTEGER, NULL,
     R_EARLIEST " (1e1, then 0xE5)", 0},
    {"n_number_with_alpha.json", NON_INTEGER, NULL, R_EARLIEST " (1.2, then 'a')", 0},
    {"n_number_with_alpha_char.json", NON_INTEGER, NULL,
     R_EARLIEST " (1.8011670033376514, then 'H')", 0},
    {"n_object_non_string_key_but_huge_number_instead.json", OUT_OF_RANGE, NULL,
     R_EARLIEST " (9999E9999 judged before the missing key)", 0},
    {"n_structure_100000_opening_arrays.json", TOO_DEEP, NULL,
     R_DEPTH " (before the truncation)", 0},
    {"n_structure_open_array_object.json", TOO_DEEP, NULL, R_DEPTH " (before the truncation)", 0},

    /* ---- i_: implementation-defined, decided ---- */
    {"i_number_double_huge_neg_exp.json", NON_INTEGER, NULL, R_FLOAT " ([123.456e-789])", 0},
    {"i_number_huge_exp.json", OUT_OF_RANGE, NULL, R_BIG_FLOAT " ([0.4e00669...006])", 0},
    {"i_number_neg_int_huge_exp.json", OUT_OF_RANGE, NULL, R_BIG_FLOAT " ([-1e+9999])", 0},
    {"i_number_pos_double_huge_exp.json", OUT_OF_RANGE, NULL, R_BIG_FLOAT " ([1.5e+9999])", 0},
    {"i_number_real_neg_overflow.json", OUT_OF_RANGE, NULL, R_BIG_FLOAT " ([-123123e100000])", 0},
    {"i_number_real_pos_overflow.json", OUT_OF_RANGE, NULL, R_BIG_FLOAT " ([123123e100000])", 0},
    {"i_number_real_underflow.json", NON_INTEGER, NULL, R_FLOAT " ([123e-10000000])", 0},
    {"i_number_too_big_neg_int.json", OUT_OF_RANGE, NULL, R_RANGE, 0},
    {"i_number_too_big_pos_int.json", OUT_OF_RANGE, NULL, R_RANGE, 0},
    {"i_number_very_big_negative_int.json", OUT_OF_RANGE, NULL, R_RANGE, 0},
    {"i_object_key_lone_2nd_surrogate.json", SYNTAX, NULL, R_SURROGATE, 0},
    {"i_string_1st_surrogate_but_2nd_missing.json", SYNTAX, NULL, R_SURROGATE, 0},
    {"i_string_1st_valid_surrogate_2nd_invalid.json", SYNTAX, NULL, R_SURROGATE, 0},
    {"i_string_UTF-16LE_with_BOM.json", SYNTAX, NULL, R_UTF8 " (UTF-16)", 0},
    {"i_string_UTF-8_invalid_sequence.json", SYNTAX, NULL, R_UTF8, 0},
    {"i_string_UTF8_surrogate_U+D800.json", SYNTAX, NULL, R_UTF8, 0},
    {"i_string_incomplete_surrogate_and_escape_valid.json", SYNTAX, NULL, R_SURROGATE, 0},
    {"i_string_incomplete_surrogate_pair.json", SYNTAX, NULL, R_SURROGATE, 0},
    {"i_string_incomplete_surrogates_escape_valid.json", SYNTAX, NULL, R_SURROGATE, 0},
    {"i_string_invalid_lonely_surrogate.json", SYNTAX, NULL, R_SURROGATE, 0},
    {"i_string_invalid_surrogate.json", SYNTAX, NULL, R_SURROGATE, 0},
    {"i_string_invalid_utf-8.json", SYNTAX, NULL, R_UTF8, 0},
    {"i_string_inverted_surrogates_U+1D11E.json", SYNTAX, NULL, R_SURROGATE, 0},
    {"i_string_iso_latin_1.json", SYNTAX, NULL, R_UTF8 " (ISO-8859-1)", 0},
    {"i_string_lone_second_surrogate.json", SYNTAX, NULL, R_SURROGATE, 0},
    {"i_string_lone_utf8_continuation_byte.json", SYNTAX, NULL, R_UTF8, 0},
    {"i_string_not_in_unicode_range.json", SYNTAX, NULL, R_UTF8, 0},
    {"i_string_overlong_sequence_2_bytes.json", SYNTAX, NULL, R_UTF8, 0},
    {"i_string_overlong_sequence_6_bytes.json", SYNTAX, NULL, R_UTF8, 0},
    {"i_string_overlong_sequence_6_bytes_null.json", SYNTAX, NULL, R_UTF8, 0},
    {"i_string_truncated-utf-8.json", SYNTAX, NULL, R_UTF8, 0},
    {"i_string_utf16BE_no_BOM.json", SYNTAX, NULL, R_RAW_NUL " (UTF-16)", 0},
    {"i_string_utf16LE_no_BOM.json", SYNTAX, NULL, R_RAW_NUL " (UTF-16)", 0},
    {"i_structure_500_nested_arrays.json", TOO_DEEP, NULL, R_DEPTH, 0},
    {"i_structure_UTF-8_BOM_empty_object.json", SYNTAX, NULL, R_BOM, 0},
};

#define TABLE_SIZE (sizeof table / sizeof table[0])

static int failures;

static void fail(const char *file, const char *fmt, const char *a, const char *b)
{
    failures++;
    fprintf(stderr, "FAIL %s: ", file);
    fprintf(stderr, fmt, a ? a : "(none)", b ? b : "(none)");
    fputc('\n', stderr);
}

static decision *find(const char *file)
{
    for (size_t i = 0; i < TABLE_SIZE; i++)
        if (strcmp(table[i].file, file) == 0)
            return &table[i];
    return NULL;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *bigger = realloc(buf, cap *= 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
        }
        buf = bigger;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* An accepted value must encode, and its encoding must be canonical. */
static void check_encoding(const char *file, json_t *v, const char *want)
{
    sp_error err = {0};
    size_t len = 0;
    char *enc = sp_json_encode_alloc(v, &len, &err);
    if (!enc) {
        fail(file, "accepted but does not encode: %s%s", err.code, "");
        sp_error_clear(&err);
        return;
    }
    if (want && (len != strlen(want) || memcmp(enc, want, len) != 0))
        fail(file, "canonical form %s, want %s", enc, want);
    json_t *again = sp_json_parse_canonical(enc, len, &err);
    if (!again)
        fail(file, "its encoding is refused by parse_canonical: %s%s", err.code, "");
    else if (!sp_json_same(v, again))
        fail(file, "its encoding parses to another value%s%s", "", "");
    json_decref(again);
    free(enc);
    sp_error_clear(&err);
}

static void run_file(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len = 0;
    char *bytes = read_file(path, &len);
    if (!bytes) {
        fail(name, "cannot read: %s%s", strerror(errno), "");
        return;
    }
    decision *d = find(name);
    if (d)
        d->seen++;
    sp_error err = {0};
    json_t *v = sp_json_parse(bytes, len, &err);
    /* parse_canonical must never accept what parse rejects */
    json_t *strict = sp_json_parse_canonical(bytes, len, NULL);
    if (!v && strict)
        fail(name, "parse_canonical accepts what parse rejects (%s)%s", err.code, "");
    json_decref(strict);

    char kind = name[0];
    if (d) {
        if (d->code == ACCEPT && !v)
            fail(name, "rejected with %s, want accepted (%s)", err.code, d->rule);
        else if (d->code != ACCEPT && v)
            fail(name, "accepted, want %s (%s)", d->code, d->rule);
        else if (d->code != ACCEPT && strcmp(err.code, d->code) != 0)
            fail(name, "rejected with %s, want %s", err.code, d->code);
        if (v && d->code == ACCEPT)
            check_encoding(name, v, d->canonical);
    } else if (kind == 'y') {
        if (!v)
            fail(name, "rejected with %s (%s), but no rule in the table rejects it", err.code,
                 err.message);
        else
            check_encoding(name, v, NULL);
    } else if (kind == 'n') {
        if (v)
            fail(name, "accepted invalid JSON%s%s", "", "");
        else if (strcmp(err.code, SYNTAX) != 0)
            fail(name, "rejected with %s, want %s (or an entry in the table)", err.code, SYNTAX);
    } else if (kind == 'i') {
        fail(name, "implementation-defined file without a decision in the table (got %s)%s",
             v ? "accepted" : err.code, "");
    }
    json_decref(v);
    sp_error_clear(&err);
    free(bytes);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s JSON-TEST-SUITE-DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "FAIL: cannot open %s: %s\n", dir, strerror(errno));
        return 1;
    }
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".json") != 0)
            continue; /* README.md, LICENSE */
        if (count == cap) {
            cap = cap ? cap * 2 : 512;
            char **bigger = realloc(names, cap * sizeof *names);
            if (!bigger) {
                fprintf(stderr, "FAIL: out of memory\n");
                return 1;
            }
            names = bigger;
        }
        names[count++] = strdup(e->d_name);
    }
    closedir(d);
    if (count)
        qsort(names, count, sizeof *names, by_name);

    int ny = 0, nn = 0, ni = 0;
    for (size_t i = 0; i < count; i++) {
        const char *name = names[i];
        if (strncmp(name, "y_", 2) == 0)
            ny++;
        else if (strncmp(name, "n_", 2) == 0)
            nn++;
        else if (strncmp(name, "i_", 2) == 0)
            ni++;
        else {
            fail(name, "unexpected file name (no y_, n_ or i_ prefix)%s%s", "", "");
            continue;
        }
        run_file(dir, name);
    }

    for (size_t i = 0; i < TABLE_SIZE; i++) {
        if (table[i].seen != 1)
            fail(table[i].file, "table entry without its file in the suite%s%s", "", "");
        if (table[i].file[0] == 'n' && (table[i].code == ACCEPT || !strcmp(table[i].code, SYNTAX)))
            fail(table[i].file, "an n_ entry must name a non-syntax error%s%s", "", "");
    }
    if (ny != EXPECTED_Y || nn != EXPECTED_N || ni != EXPECTED_I) {
        failures++;
        fprintf(stderr, "FAIL: found %d y_, %d n_, %d i_ files in %s; want %d, %d, %d\n", ny,
                nn, ni, dir, EXPECTED_Y, EXPECTED_N, EXPECTED_I);
    }
    printf("json-test-suite: %zu files (%d y_, %d n_, %d i_), %zu table entries, %d failed\n",
           count, ny, nn, ni, TABLE_SIZE, failures);
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    return failures ? 1 : 0;
}
