/*
 * measure.h - what the benchmarks share: a monotonic clock in milliseconds,
 * a growing list of samples and its nearest-rank percentiles.
 *
 * Must never be linked into spore itself (benchmarks only), or assert on
 * what it measures.
 */
#ifndef SPORE_BENCH_MEASURE_H
#define SPORE_BENCH_MEASURE_H

#include <stddef.h>

/* CLOCK_MONOTONIC in milliseconds. */
double bench_now_ms(void);

typedef struct bench_samples {
    double *v;
    size_t n, cap;
} bench_samples;

/* Append one sample (exits 2 when out of memory: a benchmark cannot go on). */
void bench_sample_add(bench_samples *s, double x);
/* Nearest-rank percentile, p in [0, 1] (sorts the samples); NaN when empty. */
double bench_percentile(bench_samples *s, double p);
void bench_samples_free(bench_samples *s);
/* qsort's comparison of doubles, ascending. */
int bench_cmp_double(const void *a, const void *b);

#endif
