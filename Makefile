# feltlab: `make demo` and `make test` work on a fresh machine with Python 3.11 and gcc.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.feltlab-installed
CC ?= gcc
NATIVE_SRC := $(wildcard native/src/*.c native/src/*.h native/include/*.h)
SAN_FLAGS := -std=c11 -O1 -g -Wall -Wextra -Wpedantic -Werror -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

.PHONY: setup demo test test-python test-native lint bench bench-smoke fuzz explore clean

setup: $(STAMP)

$(STAMP): pyproject.toml setup.py native/build_core.py $(NATIVE_SRC)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,dist]'
	$(PY) -m pip install --quiet -e examples/feltlab-sidebets
	touch $(STAMP)

demo: $(STAMP)
	rm -rf out/demo
	$(VENV)/bin/feltlab certify shuffler --seed 7 --out out/demo

native/tests/test_core: native/tests/test_core.c $(NATIVE_SRC)
	$(CC) $(SAN_FLAGS) -Inative/include native/src/*.c native/tests/test_core.c -o $@

test-native: native/tests/test_core
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ./native/tests/test_core

test-python: $(STAMP)
	$(PY) -m pytest

test: test-native test-python

lint: $(STAMP)
	$(PY) -m ruff check sdk plugins rig native tests benchmarks tools
	$(PY) -m ruff format --check sdk plugins rig native tests benchmarks tools
	$(PY) tools/typecheck.py

# deterministic simulation testing of the rig (docs/certification.md): exit 1 on a violation
EXPLORE_CAMPAIGNS ?= 500
EXPLORE_SEED ?= 1
explore: $(STAMP)
	$(VENV)/bin/feltlab certify explore --campaigns $(EXPLORE_CAMPAIGNS) --seed $(EXPLORE_SEED)

bench: $(STAMP)
	$(PY) -m pytest benchmarks --benchmark-only --benchmark-columns=mean,stddev,ops,rounds --benchmark-sort=name

bench-smoke: $(STAMP)
	$(PY) -m pytest benchmarks --benchmark-disable -q

fuzz: $(STAMP)
	$(PY) -m pip install --quiet atheris
	FELTLAB_FUZZ_SECONDS=$${FELTLAB_FUZZ_SECONDS:-60} $(PY) -m pytest tests/native/test_fuzz.py -m fuzz -v

clean:
	rm -rf $(VENV) build *.egg-info native/_core.c native/*.so native/tests/test_core .pytest_cache .mypy_cache .ruff_cache
