#!/usr/bin/env bash
# test_embed.sh - the embedding example (examples/embed/) built the way a
# user builds it: install the project into a temporary prefix with
# `cmake --install`, then compile the example with its own Makefile through
# pkg-config against that prefix only (shared and static), run it, and check
# what it prints; also compile the public header alone, pedantically, as C
# and C++, to prove it needs nothing but standard headers.
#
# Must never build from the source tree's headers or libraries, or leave
# files behind (everything lives in one temporary directory).
#
# usage: test_embed.sh <build-dir> <source-dir> <cc> [extra cflags/ldflags]
set -euo pipefail

build=$1 src=$2 cc=$3 extra=${4:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spore-embed-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
for f in include/spore/spore.h lib/libspore.a lib/libspore.so lib/pkgconfig/spore.pc bin/spore; do
  [ -e "$prefix/$f" ] || fail "the install lacks $f"
done

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
version=$(pkg-config --modversion spore)
grep -q "^#define SPORE_VERSION \"$version\"" "$prefix/include/spore/spore.h" ||
  fail "spore.pc says $version, the header disagrees"
case " $(pkg-config --cflags spore) " in
  *" -I$prefix/include "*) ;;
  *) fail "pkg-config --cflags does not point into the prefix: $(pkg-config --cflags spore)" ;;
esac

# The header alone: standard headers only, strict C99/C11, and C++.
bad=$(grep -E '^\s*#\s*include' "$prefix/include/spore/spore.h" | grep -vE '<(stdbool|stddef|stdint)\.h>' || true)
[ -z "$bad" ] || fail "spore.h includes more than standard headers: $bad"
printf '#include <spore/spore.h>\nint main(void) { return spore_version() == 0; }\n' >"$tmp/h.c"
for std in c99 c11; do
  "$cc" -std=$std -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$prefix/include" "$tmp/h.c" ||
    fail "spore.h does not compile as $std"
done
if command -v g++ >/dev/null; then
  g++ -x c++ -std=c++11 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$prefix/include" "$tmp/h.c" ||
    fail "spore.h does not compile as C++"
fi

check_first_run() {
  local out=$1
  grep -q '^libspore '"$version"', store ' "$out" || fail "no banner"
  grep -q '^run run_[0-9a-f]* (new)$' "$out" || fail "the run was not new"
  grep -q '^  reserve attempt 1 (effect key .*): service busy, will retry$' "$out" || fail "no first attempt"
  grep -q '^  reserve attempt 2 (effect key .*): reserved$' "$out" || fail "no retry"
  local k1 k2
  k1=$(sed -n 's/^  reserve attempt 1 (effect key \(.*\)):.*/\1/p' "$out")
  k2=$(sed -n 's/^  reserve attempt 2 (effect key \(.*\)):.*/\1/p' "$out")
  [ -n "$k1" ] && [ "$k1" = "$k2" ] || fail "effect keys differ across attempts: '$k1' '$k2'"
  [ "$(grep -c '^  confirm attempt 1: confirmed$' "$out")" = 1 ] || fail "confirm did not run once"
  grep -q '^parked: completed$' "$out" || fail "not completed"
  grep -q '^status: {.*"result":{"output":{"confirmed":true,"order":{"customer":"ada","reservation":{"request":{"customer":"ada","item":"lamp"},"reservation":"res-'"$k1"'"}}}}.*"status":"completed"}$' "$out" ||
    fail "unexpected status line"
}

build_and_run() {
  local mode=$1 dir=$tmp/embed-$1
  cp -r "$src/examples/embed" "$dir"
  rm -f "$dir/embed" "$dir"/embed.db*
  local static=()
  [ "$mode" = static ] && static=(STATIC=1)
  make -s -C "$dir" CC="$cc" CFLAGS="-O1 -g -Werror $extra" LDFLAGS="$extra" "${static[@]}" \
       >"$tmp/make-$mode.log" 2>&1 ||
    { cat "$tmp/make-$mode.log"; fail "make ($mode)"; }
  if [ "$mode" = static ]; then
    # (ldd's whole output first: `ldd | grep -q` under pipefail fails when
    # grep exits before ldd has written everything)
    ! grep -q libspore <<<"$(ldd "$dir/embed")" || fail "the static build links libspore.so"
  else
    grep -q "$prefix/lib/libspore.so" <<<"$(ldd "$dir/embed")" || fail "the shared build does not use the prefix's libspore.so"
  fi
  (cd "$dir" && ./embed workflow.json embed.db) >"$tmp/run1-$mode.out" 2>&1 ||
    { cat "$tmp/run1-$mode.out"; fail "first run ($mode)"; }
  check_first_run "$tmp/run1-$mode.out" || { cat "$tmp/run1-$mode.out"; exit 1; }
  # Again, same database and start key: the same run, nothing runs again.
  (cd "$dir" && ./embed workflow.json embed.db) >"$tmp/run2-$mode.out" 2>&1 ||
    { cat "$tmp/run2-$mode.out"; fail "second run ($mode)"; }
  grep -q '^run run_[0-9a-f]* (existing)$' "$tmp/run2-$mode.out" || fail "second run was not the existing run"
  ! grep -q 'attempt' "$tmp/run2-$mode.out" || fail "a step ran again"
  [ "$(grep '^status:' "$tmp/run1-$mode.out")" = "$(grep '^status:' "$tmp/run2-$mode.out")" ] ||
    fail "the status changed"
  # The spore command reads the same run from the same database.
  id=$(sed -n 's/^run \(run_[0-9a-f]*\) .*/\1/p' "$tmp/run1-$mode.out")
  "$prefix/bin/spore" status "$id" --db "$dir/embed.db" --json | grep -q '"status": *"completed"' ||
    fail "spore status does not see the completed run"
  echo "ok: $mode"
}

build_and_run shared
build_and_run static
cat "$tmp/run1-static.out"
