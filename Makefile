# feltlab: `make demo` and `make test` work on a fresh machine with Python 3.11 and gcc.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.feltlab-installed
CC ?= gcc
NATIVE_SRC := $(wildcard native/src/*.c native/src/*.h native/include/*.h)
# The install is editable in setuptools' strict mode: a static tree of links under
# build/__editable__.*, which mypy, pyright and IDEs follow (docs/design.md, "Layout").  The tree
# links the files that existed at install time, so the install is redone whenever the list of
# package files changes (a module added, removed or renamed); edits to existing files need nothing.
PKG_FILES := $(sort $(shell find sdk plugins rig native -type f \( -name '*.py' -o -name '*.typed' \
	-o -name '*.dbc' -o -name '*.j2' -o -name '*.toml' -o -name '*.html' -o -name '*.js' \
	-o -name '*.css' -o -name '*.tmpl' \) -not -path '*/__pycache__/*' 2>/dev/null))
FILE_LIST := $(VENV)/.feltlab-files
# The package's bytecode written ahead (pip compiles the dependencies', not an editable tree's):
# where Python may not write it (PYTHONDONTWRITEBYTECODE=1, a sandbox's or CI's setting) every
# module of a command was compiled again at each start (about 0.2 s of the demo's CPU).  Up to
# date files are only looked at (a few ms); an edited one is compiled again here.
BYTECODE = for tree in build/__editable__.*; do if [ -d "$$tree" ]; then \
	$(PY) -m compileall -q "$$tree" > /dev/null || exit 1; fi; done
# FL_NO_FORCED_INLINE: sim.c's hot instances are not forced to inline their helpers under the
# sanitizers (the same code checked; 67 s of compile for sim.c alone otherwise).
SAN_FLAGS := -DFL_NO_FORCED_INLINE -std=c11 -O1 -g -Wall -Wextra -Wpedantic -Werror -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -pthread

.PHONY: setup demo test test-python test-native lint bench bench-smoke fuzz explore clean browser test-browser FORCE

setup: $(STAMP)

# Rewritten only when the list differs, so that an unchanged list leaves the stamp up to date.
$(FILE_LIST): FORCE
	@mkdir -p $(VENV)
	@printf '%s\n' $(PKG_FILES) > $@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi

$(STAMP): pyproject.toml setup.py native/build_core.py $(NATIVE_SRC) $(FILE_LIST)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,dist]' --config-settings editable_mode=strict
	$(PY) -m pip install --quiet -e examples/feltlab-sidebets
	$(BYTECODE)
	touch $(STAMP)

demo: $(STAMP)
	$(BYTECODE)
	rm -rf out/demo
	$(VENV)/bin/feltlab certify shuffler --seed 7 --out out/demo

# The core's sources are compiled under the sanitizers once, into objects that both test binaries
# link (and that a change to one source rebuilds alone), not once per binary.
SAN_OBJ_DIR := native/tests/build
SAN_OBJS := $(patsubst native/src/%.c,$(SAN_OBJ_DIR)/%.o,$(wildcard native/src/*.c))
NATIVE_HDR := $(wildcard native/src/*.h native/include/*.h)

$(SAN_OBJ_DIR)/%.o: native/src/%.c $(NATIVE_HDR)
	@mkdir -p $(SAN_OBJ_DIR)
	$(CC) $(SAN_FLAGS) -Inative/include -c $< -o $@

native/tests/test_core: native/tests/test_core.c native/tests/check.h $(SAN_OBJS)
	$(CC) $(SAN_FLAGS) -Inative/include $(SAN_OBJS) native/tests/test_core.c -o $@

native/tests/test_csm: native/tests/test_csm.c native/tests/check.h $(SAN_OBJS)
	$(CC) $(SAN_FLAGS) -Inative/include -Inative/src $(SAN_OBJS) native/tests/test_csm.c -o $@

test-native: native/tests/test_core native/tests/test_csm
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ./native/tests/test_core
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ./native/tests/test_csm

# pytest-xdist, one worker per core (TEST_WORKERS=0: one process).  Under --dist loadgroup,
# tests/conftest.py's scheduler keeps a module with a module-scoped fixture on one worker and hands
# the slow tests out first (xdist's reordering by group size would undo that).
TEST_WORKERS ?= auto
test-python: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

test: test-native test-python

lint: $(STAMP)
	$(PY) -m ruff check sdk plugins rig native tests benchmarks
	$(PY) -m ruff format --check sdk plugins rig native tests benchmarks
	$(PY) -m mypy

# deterministic simulation testing of the rig (docs/certification.md): exit 1 on a violation
EXPLORE_CAMPAIGNS ?= 500
EXPLORE_SEED ?= 1
explore: $(STAMP)
	$(VENV)/bin/feltlab certify explore --campaigns $(EXPLORE_CAMPAIGNS) --seed $(EXPLORE_SEED)

bench: $(STAMP)
	$(PY) -m pytest benchmarks --benchmark-only --benchmark-group-by=fullname --benchmark-columns=mean,stddev,rounds --benchmark-sort=name

bench-smoke: $(STAMP)
	$(PY) -m pytest benchmarks --benchmark-disable -q

fuzz: $(STAMP)
	$(PY) -m pip install --quiet atheris
	FELTLAB_FUZZ_SECONDS=$${FELTLAB_FUZZ_SECONDS:-60} $(PY) -m pytest tests/native/test_fuzz.py -m fuzz -v

FORCE:

# The browser tests (pytest -m browser: the live view in headless Chromium) need Debian's
# chromium and chromium-driver: installed here when missing (as root: CI; else with sudo -n).
# When they cannot be installed, the tests say so loudly and skip; this target never fails.
CHROMIUM ?= /usr/bin/chromium
CHROMEDRIVER ?= /usr/bin/chromedriver
browser:
	@if [ -x $(CHROMIUM) ] && [ -x $(CHROMEDRIVER) ]; then \
		echo "browser: $$($(CHROMIUM) --version 2>/dev/null || echo chromium) at $(CHROMIUM)"; \
	else \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO="sudo -n"; \
		mkdir -p out; \
		echo "browser: installing Debian's chromium and chromium-driver (log: out/browser-install.log)"; \
		if $$SUDO sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium chromium-driver' > out/browser-install.log 2>&1; then \
			echo "browser: installed $$($(CHROMIUM) --version 2>/dev/null)"; \
		else \
			echo "browser: WARNING: chromium could not be installed (see out/browser-install.log): the browser tests will be SKIPPED"; \
		fi; \
	fi

test-browser: $(STAMP) browser
	$(PY) -m pytest -m browser -v -s

clean:
	rm -rf $(VENV) build *.egg-info native/_core.c native/*.so native/tests/test_core native/tests/test_csm native/tests/build .pytest_cache .mypy_cache .ruff_cache
