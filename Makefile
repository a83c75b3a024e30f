# Thin wrapper over CMake/CTest (D1). `make demo` and `make test` install
# missing Debian packages first (scripts/deps.sh).
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DSPORE_WERROR=ON

.PHONY: all deps configure build test demo bench crash-full clean

all: build

deps:
	@scripts/deps.sh

configure: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)/spore

bench: build
	@scripts/bench.sh $(BUILD)

# The whole crash matrix (docs/crash-suite.md): every core failpoint, stages
# 1..3, hit counts 1..40, and 40 SIGKILL points.
crash-full: build
	@bash tests/crash/crash_suite.sh $(BUILD)/spore . --full

clean:
	rm -rf $(BUILD)
