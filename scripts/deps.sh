#!/usr/bin/env bash
# deps.sh - install the Debian 12 packages spore needs to build, test and run.
#
# The only place that installs anything. As root it runs apt-get; otherwise
# it prints the exact command to run and exits 1. Nothing is downloaded at
# build time and nothing is vendored (D3).
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config      # compiler, CMake >= 3.25, CTest
  libjansson-dev                        # JSON parsing (D4)
  libsqlite3-dev                        # embedded store (D6)
  libssl-dev                            # SHA-256 and HMAC (D5)
  clang libclang-rt-14-dev              # sanitizer build and libFuzzer targets
  procps psmisc util-linux              # ps, pkill, setsid used by the tests
  jq                                    # JSON in the example workflows' shell steps
  sqlite3                               # the CLI tests read the database (audit, receipts)
  # ---- PostgreSQL store (store.md §6) ----
  libpq-dev                             # the PostgreSQL adapter (libpq)
  postgresql                            # a private server for its tests (scripts/pg.sh)
  iproute2                              # ip netns / veth for the several-hosts test
  # ---- end PostgreSQL store ----
  # ---- agent steps (agent-step.md §7) ----
  bubblewrap                            # the local sandbox of agent steps (bwrap)
  # ---- end agent steps ----
  # ---- component runners (runners.md) ----
  wabt                                  # libwabt.a (the interpreter in the jail) and wat2wasm (test runners)
  lld                                   # wasm-ld: runners written in C (clang --target=wasm32)
  libseccomp-dev                        # the jail's seccomp filter
  # ---- end component runners ----
)

missing=()
for p in "${PACKAGES[@]}"; do
  [[ "$p" == \#* ]] && continue
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  echo "deps.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || true
  $cmd >&2
else
  echo "deps.sh: missing Debian packages: ${missing[*]}" >&2
  echo "deps.sh: run as root:  sudo apt-get update && sudo $cmd" >&2
  exit 1
fi
