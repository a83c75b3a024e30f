/*
 * bench_agent_reader.c - the step protocol reader's throughput (agent-step.md
 * §10 A4) on 64 MiB of valid event lines, next to a plain line-splitting
 * pass (memchr for LF) over the same bytes in the same run, so the printed
 * ratio survives a change of machine.
 *
 * usage: bench_agent_reader [--reps N]
 *
 * The stream is exactly SP_AGENT_STDOUT_MAX bytes: a start record, events of
 * every kind (thinking text, tool calls with an input object, tool results,
 * token counts) of 100 B to 4 KiB, and a result. Three passes are timed:
 *   split   count LFs with memchr (the floor: touching every byte once);
 *   reader  sp_agent_reader_feed in 64 KiB chunks (what arrives from a pipe):
 *           line assembly, the strict parse, envelope and per-kind schemas;
 *   session the reader plus the kept events of the runner (first and last
 *           25 rendered, redacted, canonical) and the stderr log.
 * Each is repeated --reps times (default 5); the best run is reported.
 *
 * What it must never do: assert on speed, or time a pass that failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/reader.h"
#include "agent/session.h"
#include "base/buf.h"

#define SID "bench-0123456789ab"
#define CHUNK 65536

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void text(sp_buf *b, size_t n, unsigned seed)
{
    static const char words[] = "the parser reads the file and then checks every row for ";
    for (size_t i = 0; i < n; i++)
        sp_buf_append_char(b, words[(i + seed) % (sizeof words - 1)]);
}

static void event(sp_buf *b, unsigned long long seq)
{
    sp_buf_printf(b, "{\"v\":1,\"type\":\"event\",\"stepId\":\"" SID "\",\"seq\":%llu,"
                     "\"ts\":\"2025-01-01T00:00:00.000Z\",", seq);
    switch (seq % 4) {
    case 0:
        sp_buf_append_str(b, "\"kind\":\"thinking\",\"data\":{\"text\":\"");
        text(b, 100 + (seq * 37) % 900, (unsigned)seq);
        sp_buf_append_str(b, "\"}}\n");
        break;
    case 1:
        sp_buf_append_str(b, "\"kind\":\"tool_call\",\"data\":{\"name\":\"Read\",\"input\":{\"path\":"
                             "\"src/import/csv.c\",\"lines\":[120,160],\"opts\":{\"follow\":false,"
                             "\"encoding\":\"utf-8\"}},\"call_id\":\"call-");
        sp_buf_printf(b, "%llu\"}}\n", seq);
        break;
    case 2:
        sp_buf_append_str(b, "\"kind\":\"tool_result\",\"data\":{\"output\":\"");
        text(b, 1000 + (seq * 53) % 3000, (unsigned)seq);
        sp_buf_printf(b, "\\n\\tdone\",\"call_id\":\"call-%llu\"}}\n", seq - 1);
        break;
    default:
        sp_buf_printf(b, "\"kind\":\"result\",\"data\":{\"text\":\"partial\",\"input_tokens\":%llu,"
                         "\"output_tokens\":%llu,\"cost_usd\":0.0031,\"response_model\":\"fake-1\"}}\n",
                      seq * 13, seq * 3);
    }
}

/* Exactly SP_AGENT_STDOUT_MAX bytes of a valid stream. */
static sp_buf make_stream(unsigned long long *events)
{
    static const char start[] = "{\"v\":1,\"type\":\"start\",\"stepId\":\"" SID "\"}\n";
    static const char result_head[] = "{\"v\":1,\"type\":\"result\",\"stepId\":\"" SID
                                      "\",\"status\":200,\"body\":{\"success\":true,\"summary\":\"";
    static const char result_tail[] = "\"}}\n";
    sp_buf b = SP_BUF_INIT;
    sp_buf_append_str(&b, start);
    unsigned long long seq = 0;
    size_t reserve = sizeof result_head + sizeof result_tail + 8192;
    while (b.len + reserve < SP_AGENT_STDOUT_MAX)
        event(&b, ++seq);
    sp_buf_append_str(&b, result_head);
    size_t pad = SP_AGENT_STDOUT_MAX - b.len - (sizeof result_tail - 1);
    text(&b, pad, 7);
    sp_buf_append_str(&b, result_tail);
    *events = seq;
    return b;
}

static double time_split(const sp_buf *s, size_t *lines)
{
    double t0 = now_s();
    size_t n = 0;
    const char *p = s->data, *end = s->data + s->len;
    while (p < end) {
        const char *lf = memchr(p, '\n', (size_t)(end - p));
        if (!lf)
            break;
        n++;
        p = lf + 1;
    }
    *lines = n;
    return now_s() - t0;
}

static double time_reader(const sp_buf *s, unsigned long long want_events, int *ok)
{
    sp_agent_reader r;
    double t0 = now_s();
    sp_agent_reader_init(&r, SID, NULL, NULL);
    for (size_t at = 0; at < s->len; at += CHUNK) {
        size_t n = s->len - at < CHUNK ? s->len - at : CHUNK;
        if (!sp_agent_reader_feed(&r, s->data + at, n))
            break;
    }
    double t = now_s() - t0;
    uint64_t line;
    *ok = r.state == SP_READER_DONE && !sp_agent_reader_eof_rule(&r, &line) &&
          r.events == want_events;
    if (!*ok)
        fprintf(stderr, "bench_agent_reader: the reader refused the stream: %s at line %llu\n",
                r.rule ? r.rule : "(eof)", (unsigned long long)r.rule_line);
    sp_agent_reader_free(&r);
    return t;
}

static void count_kept(void *ctx, const char *json, size_t len)
{
    (void)len;
    if (json)
        (*(size_t *)ctx)++;
}

static double time_session(const sp_buf *s, int *ok)
{
    sp_redactor *red = sp_redactor_new();
    sp_error err = {0};
    sp_redactor_add(red, "sk-bench-secret-0123456789abcdef", 32, &err);
    size_t kept = 0;
    sp_agent_session session;
    sp_agent_session_cfg cfg = {SID, red, "bench", 1, count_kept, &kept};
    double t0 = now_s();
    sp_agent_session_init(&session, &cfg);
    for (size_t at = 0; at < s->len; at += CHUNK) {
        size_t n = s->len - at < CHUNK ? s->len - at : CHUNK;
        if (!sp_agent_session_stdout(&session, s->data + at, n))
            break;
    }
    sp_agent_end end = {SP_AGENT_EXITED, 0, 0, ""};
    sp_agent_outcome o;
    sp_agent_session_finish(&session, &end, NULL, true, &o);
    double t = now_s() - t0;
    *ok = o.status == SP_AGENT_SUCCESS && kept == 51;
    if (!*ok)
        fprintf(stderr, "bench_agent_reader: the session ended %s (%zu kept)\n", o.code, kept);
    sp_agent_outcome_free(&o);
    sp_agent_session_free(&session);
    sp_redactor_free(red);
    return t;
}

int main(int argc, char **argv)
{
    int reps = 5;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
    if (reps < 1)
        reps = 1;
    unsigned long long events;
    sp_buf s = make_stream(&events);
    if (!sp_buf_ok(&s) || s.len != SP_AGENT_STDOUT_MAX) {
        fprintf(stderr, "bench_agent_reader: cannot build the stream\n");
        return 2;
    }
    double split = 1e9, reader = 1e9, session = 1e9;
    size_t lines = 0;
    for (int i = 0; i < reps; i++) {
        int ok1, ok2;
        double a = time_split(&s, &lines), b = time_reader(&s, events, &ok1),
               c = time_session(&s, &ok2);
        if (!ok1 || !ok2) {
            fprintf(stderr, "bench_agent_reader: a pass failed; nothing timed\n");
            return 2;
        }
        split = a < split ? a : split;
        reader = b < reader ? b : reader;
        session = c < session ? c : session;
    }
    double mib = (double)s.len / (1024.0 * 1024.0);
    printf("stream: %.0f MiB, %zu lines (%llu events), best of %d\n", mib, lines, events, reps);
    printf("%-8s %8.1f MiB/s  %10.0f lines/s\n", "split", mib / split, (double)lines / split);
    printf("%-8s %8.1f MiB/s  %10.0f lines/s  %.1fx the split pass\n", "reader", mib / reader,
           (double)lines / reader, reader / split);
    printf("%-8s %8.1f MiB/s  %10.0f lines/s  %.1fx the split pass\n", "session", mib / session,
           (double)lines / session, session / split);
    sp_buf_free(&s);
    return 0;
}
