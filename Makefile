# The two commands of the README:
#   make run    builds scanfuse and runs the main job (MoE routing example, CPU, checked)
#   make test   builds and runs every test: a -Werror release build and an
#               AddressSanitizer + UndefinedBehaviorSanitizer build, each under CTest
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
MAIN_EXAMPLE ?= examples/moe_routing.sf

.PHONY: all deps build run test test-release test-sanitize test-python clean

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

# The Python package (pip install . into a virtualenv under build-python/) and its
# pytest suite.  Falls back to a --user install when no virtualenv can be made.
PYVENV ?= build-python/venv
test-python: deps
	@set -e; \
	if [ -x $(PYVENV)/bin/python ] && $(PYVENV)/bin/python -m pip --version >/dev/null 2>&1 \
	   || { rm -rf $(PYVENV); python3 -m venv $(PYVENV) >/dev/null 2>&1; }; then \
	  PY=$(PYVENV)/bin/python; USER_FLAG=; \
	else \
	  rm -rf $(PYVENV); echo "test-python: no virtualenv (python3-venv missing?); using pip --user"; \
	  PY=python3; USER_FLAG="--user"; \
	  if python3 -m pip install --help 2>/dev/null | grep -q break-system-packages; then \
	    USER_FLAG="--user --break-system-packages"; fi; \
	fi; \
	$$PY -m pip install -q --disable-pip-version-check $$USER_FLAG ./ pytest numpy; \
	$$PY -m pytest -q -p no:cacheprovider python/tests

test: test-release test-sanitize test-python

clean:
	rm -rf build build-sanitize
