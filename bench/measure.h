/*
 * measure.h - what the benchmarks share: a monotonic clock in milliseconds,
 * a growing list of samples and its nearest-rank percentiles, and the
 * revision-to-revision step latency of a run.
 *
 * Must never be linked into spore itself (benchmarks only), or assert on
 * what it measures.
 */
#ifndef SPORE_BENCH_MEASURE_H
#define SPORE_BENCH_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

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

/* Step latencies from run_until_parked's progress callback: a step is one
 * committed turn (revision j+1 consumes step j's result), and the time
 * between the first passes that see consecutive revisions is a step's
 * latency (shared equally when one pass sees several). The clock starts at
 * the first revision seen; last_at - first_at is the measured span. */
typedef struct bench_revisions {
    bench_samples *s;
    uint64_t seen; /* highest revision seen; 0 = none yet */
    double seen_at, first_at, last_at;
} bench_revisions;

/* An sp_progress_fn; ctx is a bench_revisions. */
void bench_on_revision(void *ctx, const sp_run_view *run, uint64_t elapsed_ms);

#endif
