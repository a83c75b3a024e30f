# Thin wrapper over CMake/CTest (D1). `make demo` and `make test` install
# missing Debian packages first (scripts/deps.sh).
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DSPORE_WERROR=ON

.PHONY: all deps configure build test demo bench clean

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

clean:
	rm -rf $(BUILD)
