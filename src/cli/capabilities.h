/*
 * capabilities.h - what this host can serve (engine.md §9 handshake, cli.md
 * §7): action kinds, kinds runnable async, result channels, component
 * worlds, agent transports, sandbox features found on this machine, store
 * adapters. Printed by `spore capabilities`.
 *
 * Must never report a feature it did not detect on this machine.
 */
#ifndef SPORE_CLI_CAPABILITIES_H
#define SPORE_CLI_CAPABILITIES_H

#include <jansson.h>

/* A new JSON object describing this host (NULL on out-of-memory). */
json_t *sp_capabilities_json(void);

#endif
