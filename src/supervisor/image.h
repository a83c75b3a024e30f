/*
 * image.h - the supervisor program's executable image (image.c).
 *
 * What it must never do: be used outside this folder (launch.c starts the
 * program; nothing else needs its bytes).
 */
#ifndef SPORE_SUPERVISOR_IMAGE_H
#define SPORE_SUPERVISOR_IMAGE_H

#include <stddef.h>

/* The bytes of the static supervisor program built from main.c. */
const unsigned char *sp_supervisor_image(size_t *len);

#endif
