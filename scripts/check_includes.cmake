# check_includes.cmake - the build's include check (src/CMakeLists.txt).
#
# What it is for: each component compiles against an include root that
# holds only what it may include, but a quoted include is first looked up
# beside the including file, and a path through "..", or an absolute one,
# would walk out of the root. This script fails the build on any quoted
# #include in src/ whose path is absolute or has a ".." segment, naming the
# file and line; with none it touches STAMP.
#
# What it must never do: pass a file it could not read, or change a source.
#
# usage: cmake -DSRC=<src dir> -DSTAMP=<stamp file> -P check_includes.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT SRC OR NOT STAMP)
  message(FATAL_ERROR "usage: cmake -DSRC=<dir> -DSTAMP=<file> -P check_includes.cmake")
endif()
file(GLOB_RECURSE files "${SRC}/*.c" "${SRC}/*.h" "${SRC}/*.cc")
set(bad "")
foreach(file ${files})
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${lines})
    if(line MATCHES "include[ \t]*\"(/|([^\"]*/)?\\.\\./|\\.\\.\")")
      file(RELATIVE_PATH rel "${SRC}" "${file}")
      list(APPEND bad "src/${rel}: ${line}")
    endif()
  endforeach()
endforeach()
if(bad)
  list(JOIN bad "\n  " shown)
  message(FATAL_ERROR "an include leaves its component's include root (no \"..\", no absolute "
                      "paths; include \"<component>/<header>.h\" from the root):\n  ${shown}")
endif()
file(TOUCH "${STAMP}")
