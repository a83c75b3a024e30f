/*
 * measure.c - the benchmarks' clock and samples (see measure.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "measure.h"

double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void bench_sample_add(bench_samples *s, double x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        double *v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            fprintf(stderr, "bench: samples: out of memory\n");
            exit(2);
        }
        s->v = v, s->cap = cap;
    }
    s->v[s->n++] = x;
}

int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_percentile(bench_samples *s, double p)
{
    if (s->n == 0)
        return NAN;
    qsort(s->v, s->n, sizeof *s->v, bench_cmp_double);
    size_t rank = (size_t)(p * (double)s->n + 0.999999);
    rank = rank < 1 ? 1 : rank > s->n ? s->n : rank;
    return s->v[rank - 1];
}

void bench_samples_free(bench_samples *s)
{
    free(s->v);
    *s = (bench_samples){0};
}

void bench_on_revision(void *ctx, const sp_run_view *run, uint64_t elapsed_ms)
{
    (void)elapsed_ms;
    bench_revisions *p = ctx;
    if (run->revision <= p->seen)
        return;
    double t = bench_now_ms();
    if (p->seen == 0)
        p->first_at = t;
    else
        for (uint64_t d = run->revision - p->seen, i = 0; i < d; i++)
            bench_sample_add(p->s, (t - p->seen_at) / (double)d);
    p->seen = run->revision;
    p->seen_at = p->last_at = t;
}
