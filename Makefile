# Thin wrapper over CMake/CTest (D1). `make demo` and `make test` install
# missing Debian packages first (scripts/deps.sh <target>): the demo only
# what the binary and its examples need, the tests also PostgreSQL, clang,
# lld and the tools the suite drives.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DSPORE_WERROR=ON

.PHONY: all deps deps-demo configure configure-demo build test demo bench bench-compare crash-full clean

all: build

deps:
	@scripts/deps.sh test

deps-demo:
	@scripts/deps.sh demo

configure: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DSPORE_TESTS=ON >/dev/null

# A new build directory for the demo is configured without the test suite
# (its tools are not installed for the demo); an existing one keeps what it
# has, so `make test` then `make demo` rebuilds nothing.
configure-demo: deps-demo
	@if [ -f $(BUILD)/CMakeCache.txt ]; then \
	  cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null; \
	else \
	  cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DSPORE_TESTS=OFF >/dev/null; \
	fi

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# Only what the demo runs: spore, spore-step and the example runner.
demo: configure-demo
	@cmake --build $(BUILD) -j $(JOBS) --target spore_demo
	@scripts/demo.sh $(BUILD)/spore

bench: build
	@scripts/bench.sh $(BUILD)

# step-path.md §Evidence: raw commits, spore and Restate (and PostgreSQL when
# a server can be had) interleaved in one run, ratios within each repetition
# (docs/performance.md). Its own Release (-O3) build directory, so timings
# are never those of a debug or sanitizer build; only bench_compare is built.
# GCC 12 at -O3 reports a false "null destination pointer" format-truncation
# in src/runners/registry.c; the flag keeps that one warning from failing the
# -Werror build. Options: make bench-compare BENCH_ARGS="--quick" (or
# --reps R --steps N --json --no-pg --no-restate; scripts/bench-compare.sh).
BENCH_BUILD ?= build-bench
BENCH_ARGS ?=
bench-compare: deps
	@cmake -S . -B $(BENCH_BUILD) $(CMAKE_FLAGS) -DSPORE_TESTS=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BENCH_BUILD) -j $(JOBS) --target bench_compare
	@scripts/bench-compare.sh $(BENCH_BUILD) $(BENCH_ARGS)

# The whole crash matrix (docs/crash-suite.md): every core failpoint, stages
# 1..3, hit counts 1..40, and 40 SIGKILL points.
crash-full: build
	@bash tests/crash/crash_suite.sh $(BUILD)/spore . --full

clean:
	rm -rf $(BUILD)
