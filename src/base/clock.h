/*
 * clock.h - the monotonic clock and a plain sleep, for timeouts, bounds and
 * pacing (never for times that are stored or shown: those are the store's
 * clock, sp_clock).
 * Must never be used by the kernel (it is deterministic by contract).
 */
#ifndef SPORE_BASE_CLOCK_H
#define SPORE_BASE_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t sp_mono_ms(void);
/* Sleep about `ms` milliseconds; a signal may end it early. */
void sp_sleep_ms(uint64_t ms);

#endif
