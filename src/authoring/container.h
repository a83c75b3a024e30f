/*
 * container.h - the byte layout of an artifact file (docs/authoring.md
 * "The artifact format"), without its meaning:
 *
 *   header   magic "\x89SPORE\r\n" (8) | version u32 = 1 | member count u32
 *   entries  per member: type u8 (1 = file) | 0 u8 | name length u16 |
 *            0 u32 | size u64 | SHA-256 of the bytes (32) | name
 *   data     the members' bytes, in entry order, nothing between them
 *
 * integers big-endian; members in strictly ascending byte order of names;
 * the file ends with the last member's bytes.
 *
 * What it is for: writing members so that the same members always give
 * the same bytes, and reading them back with every bound checked before
 * anything is trusted.
 *
 * What it must never do: accept a member type but 1 (a symlink, a folder,
 * a device), a name that is not a normal relative path (no "/" at the
 * start, no "." or ".." components, no empty component, no control byte,
 * at most SP_ARTIFACT_NAME_MAX bytes), two members of one name, a member
 * out of order, a member over SP_ARTIFACT_MEMBER_MAX, more than
 * SP_ARTIFACT_MEMBERS_MAX members, a file over SP_ARTIFACT_BYTES_MAX,
 * bytes that do not match their digest, a short file or trailing bytes.
 */
#ifndef SPORE_AUTHORING_CONTAINER_H
#define SPORE_AUTHORING_CONTAINER_H

#include <stddef.h>

#include "authoring/authoring.h"

/* Write `n` members (names in strictly ascending byte order) into `out`. */
int sp_container_write(const sp_artifact_member *members, size_t n, sp_buf *out, sp_error *err);

/* Read the members of `bytes` (*members malloc'd, pointing into `bytes`). */
int sp_container_read(const char *bytes, size_t len, sp_artifact_member **members, size_t *n,
                      sp_error *err);

#endif
