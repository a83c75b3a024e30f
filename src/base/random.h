/*
 * random.h - OS randomness for identifiers (run IDs, keys, nonces).
 * Must never be used by the kernel (it is deterministic by contract).
 */
#ifndef SPORE_BASE_RANDOM_H
#define SPORE_BASE_RANDOM_H

#include <stddef.h>

/* 2*nbytes lowercase hex characters + NUL from getrandom() (nbytes <= 32). */
void sp_random_hex(char *out, size_t nbytes);

#endif
