#!/usr/bin/env bash
# deps.sh - install the Debian 12 packages spore needs, for one target.
#
#   scripts/deps.sh demo     build the binary and run `make demo`
#   scripts/deps.sh test     also what the test suite needs (PostgreSQL,
#                            clang and lld for the sanitizer build, the fuzz
#                            targets and the C runners, wat2wasm's users, ...)
#   scripts/deps.sh          the same as `test` (CI, and a developer's machine)
#   scripts/deps.sh --list demo|test   print the packages of a target, install nothing
#
# The only place that installs anything. As root it runs apt-get; otherwise
# it prints the exact command to run and exits 1. Nothing is downloaded at
# build time and nothing is vendored (D3).
set -euo pipefail

# What the binary and `make demo` need: compiler and build tools, the
# libraries spore links (wabt's libwabt.a carries the WebAssembly
# interpreter the `spore` binary embeds), and the programs the demo's
# workflows run (jq in their shell steps, bwrap for the agent step).
DEMO_PACKAGES=(
  build-essential cmake pkg-config      # compiler, CMake >= 3.25, CTest
  libjansson-dev                        # JSON parsing (D4)
  libsqlite3-dev                        # embedded store (D6)
  libssl-dev                            # SHA-256 and HMAC (D5)
  libpq-dev                             # the PostgreSQL adapter (libpq)
  libseccomp-dev                        # the WebAssembly jail's seccomp filter
  libcurl4-openssl-dev                  # HTTP of agent steps: spore-step's providers, the model gateway
  libgraphviz-dev                       # spore graph: libgvc/libcgraph (libgvc6 brings the layout and
                                        # render plugins and their config; never the `dot` program)
  fonts-dejavu-core                     # the font spore graph's pictures are measured and drawn with
  libmicrohttpd-dev                     # spore ui: the local web view's HTTP server (docs/ui.md)
  libjemalloc-dev                       # the programs' allocator (CMakeLists.txt: SPORE_JEMALLOC)
  wabt                                  # libwabt.a: the interpreter inside `spore` (runners.md)
  bubblewrap                            # the local sandbox of agent steps (bwrap)
  jq                                    # JSON in the example workflows' shell steps
  procps                                # ps/pkill in the example scripts
)

# What `make test` adds.
TEST_PACKAGES=(
  clang libclang-rt-14-dev              # sanitizer build and libFuzzer targets
  lld                                   # wasm-ld: runners written in C (clang --target=wasm32)
  psmisc util-linux                     # fuser, setsid, mount used by the tests
  sqlite3                               # the CLI tests read the database (audit, receipts)
  postgresql                            # a private server for its tests (scripts/pg.sh)
  iproute2                              # ip netns / veth for the several-hosts test
  git                                   # the fresh-clone test clones the repository
  curl                                  # cli.test_ui speaks HTTP to spore ui
  chromium                              # ui.test_ui_browser_*: headless Chromium drives the web view
  python3                               # the DevTools protocol client of ui.test_ui_browser_*, the
                                        # OTLP/HTTP receiver of cli.test_otel and the COMMIT-cutting
                                        # proxy of pg.test_pg_commit_lost (standard library only)
)

usage() {
  echo "usage: scripts/deps.sh [--list] [demo|test]" >&2
  exit 2
}

list_only=false
if [ "${1:-}" = "--list" ]; then
  list_only=true
  shift
fi
target=${1:-test}
[ $# -le 1 ] || usage
case "$target" in
  demo) packages=("${DEMO_PACKAGES[@]}") ;;
  test) packages=("${DEMO_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
  *) usage ;;
esac

if $list_only; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  echo "deps.sh: installing for '$target': ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || true
  $cmd >&2
else
  echo "deps.sh: missing Debian packages for '$target': ${missing[*]}" >&2
  echo "deps.sh: run as root:  sudo apt-get update && sudo $cmd" >&2
  exit 1
fi
