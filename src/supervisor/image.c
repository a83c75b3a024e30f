/*
 * image.c - the supervisor program (main.c, linked static) carried inside
 * libspore, so that a worker never has to find it on disk: the build links
 * the program first and the assembler includes its bytes here verbatim
 * (SPORE_SUPERVISOR_PROGRAM, its path in the build tree; src/CMakeLists.txt).
 *
 * What it must never do: hold anything but the bytes, or be edited to point
 * at a program outside the build.
 */
#include "supervisor/image.h"

#ifndef SPORE_SUPERVISOR_PROGRAM
#error "SPORE_SUPERVISOR_PROGRAM: the path of the built supervisor program (src/CMakeLists.txt)"
#endif

__asm__(".pushsection .rodata\n"
        ".balign 16\n"
        ".hidden sp_supervisor_image_start\n"
        ".hidden sp_supervisor_image_end\n"
        "sp_supervisor_image_start:\n"
        ".incbin \"" SPORE_SUPERVISOR_PROGRAM "\"\n"
        "sp_supervisor_image_end:\n"
        ".popsection\n");

extern const unsigned char sp_supervisor_image_start[] __attribute__((visibility("hidden")));
extern const unsigned char sp_supervisor_image_end[] __attribute__((visibility("hidden")));

const unsigned char *sp_supervisor_image(size_t *len)
{
    *len = (size_t)(sp_supervisor_image_end - sp_supervisor_image_start);
    return sp_supervisor_image_start;
}
