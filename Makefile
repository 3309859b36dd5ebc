# The two commands of the README:
#   make run    builds scanfuse and runs the main job (MoE routing example, CPU, checked)
#   make test   builds and runs every test: a -Werror release build and an
#               AddressSanitizer + UndefinedBehaviorSanitizer build, each under CTest
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
MAIN_EXAMPLE ?= examples/moe_slots.sf

.PHONY: all deps build run test test-release test-sanitize clean

all: build

# Installs the build tools from Debian's packages when they are missing.
deps:
	@command -v cmake >/dev/null && command -v cc >/dev/null || \
	  (apt-get update && apt-get install -y --no-install-recommends cmake gcc make)

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSCANFUSE_WERROR=ON >/dev/null
	cmake --build build -j $(JOBS)

run: build
	./build/scanfuse run $(MAIN_EXAMPLE) --check --segments

test-release: build
	cd build && ctest --output-on-failure -j $(JOBS)

test-sanitize: deps
	cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCANFUSE_WERROR=ON \
	  -DSCANFUSE_SANITIZE=ON >/dev/null
	cmake --build build-sanitize -j $(JOBS)
	cd build-sanitize && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS)

test: test-release test-sanitize

clean:
	rm -rf build build-sanitize
