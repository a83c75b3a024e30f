/*
 * test_steplog.c - what an attempt keeps of a stream (runners/steplog.h,
 * base/tail.h): the ring keeps the last bytes and counts all of them; a
 * secret the window's edge cut in two leaves no piece behind, a whole one
 * is redacted; invalid UTF-8 is repaired; the kept text is at most 64 KiB,
 * cut at a character boundary, with the bytes before it counted; a file's
 * tail reads the same way; two streams make a pair, an absent one empty.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/tail.h"
#include "base/utf8.h"
#include "check.h"
#include "runners/steplog.h"

#define SECRET "ABCDEFGHIJ0123456789"

static void test_tail(void)
{
    sp_tail t;
    CHECK_INT(sp_tail_init(&t, 8), 0);
    sp_tail_put(&t, "hello ", 6);
    sp_tail_put(&t, "world", 5);
    size_t n = 0;
    char *c = sp_tail_copy(&t, &n);
    CHECK(c && n == 8 && strcmp(c, "lo world") == 0);
    CHECK_INT(sp_tail_dropped(&t), 3);
    free(c);
    sp_tail_put(&t, "0123456789abcdef", 16); /* longer than the ring */
    c = sp_tail_copy(&t, &n);
    CHECK(c && strcmp(c, "89abcdef") == 0);
    CHECK_INT(t.total, 27);
    free(c);
    sp_tail_free(&t);
    CHECK_INT(sp_tail_init(&t, 0), 0); /* count only */
    sp_tail_put(&t, "abc", 3);
    c = sp_tail_copy(&t, &n);
    CHECK(c && n == 0 && sp_tail_dropped(&t) == 3);
    free(c);
    sp_tail_free(&t);
}

static bool has_piece(const char *text, size_t len)
{
    const char *s = SECRET;
    for (size_t k = 4; k <= strlen(s); k++) /* every suffix of at least 4 bytes */
        if (memmem(text, len, s + strlen(s) - k, k))
            return true;
    return false;
}

static void test_secret_at_the_edge(void)
{
    sp_redactor *r = sp_redactor_new();
    sp_error err = {0};
    CHECK_INT(sp_redactor_add(r, SECRET, strlen(SECRET), &err), 0);
    CHECK(sp_steplog_ring(r) == SP_STEPLOG_KEEP + sp_redactor_longest_form(r));
    CHECK(sp_redactor_longest_form(r) >= strlen(SECRET));
    /* the window starts inside a secret: its first half was dropped */
    const char *window = "0123456789 and then: token=" SECRET " end\n";
    sp_log_stream s;
    CHECK_INT(sp_steplog_stream(window, strlen(window), strlen(window) + 1000, r, &s), 0);
    CHECK(!has_piece(s.text, s.len));
    CHECK(strstr(s.text, "***REDACTED*** end\n") != NULL);
    CHECK_INT(s.dropped, 1000 + sp_redactor_longest_form(r) - 1);
    free(s.text);
    /* nothing dropped: nothing cut at the start */
    CHECK_INT(sp_steplog_stream(window, strlen(window), strlen(window), r, &s), 0);
    CHECK(strncmp(s.text, "0123456789 and", 14) == 0 && s.dropped == 0);
    free(s.text);
    sp_redactor_free(r);
}

static void test_utf8_and_bound(void)
{
    sp_log_stream s;
    CHECK_INT(sp_steplog_stream("bad \xff\xfe!", 7, 7, NULL, &s), 0);
    CHECK(strcmp(s.text, "bad \xef\xbf\xbd\xef\xbf\xbd!") == 0);
    free(s.text);
    size_t n = 70001; /* "é" x 35000 after one ASCII byte: the cut falls mid-character */
    char *big = malloc(n);
    big[0] = 'a';
    for (size_t i = 1; i < n; i += 2)
        big[i] = '\xc3', big[i + 1] = '\xa9';
    CHECK_INT(sp_steplog_stream(big, n, n, NULL, &s), 0);
    CHECK(s.len <= SP_STEPLOG_KEEP && s.len >= SP_STEPLOG_KEEP - 1);
    CHECK(sp_utf8_valid(s.text, s.len) && (unsigned char)s.text[0] == 0xc3);
    CHECK_INT(s.dropped + s.len, n);
    free(s.text);
    free(big);
}

static void test_file(void)
{
    char path[] = "/tmp/spore-steplog-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    char line[1000];
    memset(line, 'x', sizeof line);
    for (int i = 0; i < 100; i++)
        CHECK(write(fd, line, sizeof line) == (ssize_t)sizeof line);
    close(fd);
    sp_log_stream s;
    CHECK_INT(sp_steplog_file(path, NULL, &s), 0);
    CHECK(s.len == SP_STEPLOG_KEEP && s.dropped == 100000 - SP_STEPLOG_KEEP);
    free(s.text);
    unlink(path);
    CHECK_INT(sp_steplog_file(path, NULL, &s), 0); /* gone: empty */
    CHECK(s.text && s.len == 0 && s.dropped == 0);
    sp_log_stream none = {0};
    sp_attempt_logs *l = sp_steplog_pair(&none, &s);
    CHECK(l && strcmp(l->out.text, "") == 0 && l->err.len == 0);
    CHECK(s.text == NULL && none.text == NULL);
    sp_attempt_logs_free(l);
}

int main(void)
{
    test_tail();
    test_secret_at_the_edge();
    test_utf8_and_bound();
    test_file();
    return check_done("test_steplog");
}
