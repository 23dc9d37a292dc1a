# The two commands of README.md: `make demo` and `make test`.
# PYTHON picks the interpreter (default python3); VENV the test environment (make test, lint,
# bench); DEMO_VENV the demo's own, smaller one.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# -Werror here, not in pyproject.toml: our builds must be warning-free, a user's need not fail.
WERROR ?= -Werror
# What pytest runs; TESTS=tests/lines runs one folder.
TESTS ?= tests
# Parallel pytest workers (pytest-xdist): most tests wait on the processes they start, so the
# suite runs in about half the time on 2 cores; PYTEST_WORKERS=0 runs it in one process. A file's
# tests stay on one worker (--dist loadfile): its module-scoped fixtures are made once.
PYTEST_WORKERS ?= 2
# Editable by default; the sanitizer build installs a copy, so its .so never replaces the
# in-place one that an editable .venv of the same Python loads.
INSTALL_MODE ?= -e
C_SOURCES := $(shell find src/lineprofiler -name '*.[ch]')
# The demo installs a copy of the package (not editable), so it watches the Python files too.
PACKAGE_SOURCES := $(shell find src/lineprofiler -name '*.py' -o -name '*.pyi' -o -name '*.[ch]')
DEMO_VENV ?= .venv-demo
# What the demo's learner trains with beyond the package: numpy (examples/rl_pipeline/model.py
# falls back to pure Python without it). DEMO_PACKAGES=torch trains its torch model instead.
DEMO_PACKAGES ?= numpy
# The versions of pyproject.toml's extras `ray` and `viztracer`, and Ray's `tune` extra (Ray
# Train's dependencies too) for tests/ray/test_ray_tune.py; after plain Ray, so that a Python
# where Tune's dependencies do not install still gets Ray. Then the metric exporters' packages
# (extras `tensorboard`, `wandb`, `mlflow`, and tensorboard to read the event files back), whose
# dependencies (grpcio, pyarrow) publish wheels for some Pythons only.
RAY_PEERS := 'ray>=2.40' 'ray[tune]>=2.40'
EXPORTER_PEERS := 'tensorboardX>=2.6' 'tensorboard>=2.15' 'wandb>=0.16' 'mlflow>=2.10'
# PEERS=0: the metric exporters' packages are not installed, 0.10.0's sdist is not fetched, and
# the tests marked `peers` are deselected; RAY=0 (the default under PEERS=0) does the same for Ray
# and the tests marked `ray`. They run the same Python code of ours on every Python and are about
# 30 % of a suite's time: CI runs each on one Python, the rest of the suite on all.
PEERS ?= 1
RAY ?= $(PEERS)
OPTIONAL_PEERS := $(if $(filter 1,$(RAY)),$(RAY_PEERS)) 'viztracer>=0.16' $(if $(filter 1,$(PEERS)),$(EXPORTER_PEERS))
LEFT_OUT := $(strip $(if $(filter 1,$(PEERS)),,peers) $(if $(filter 1,$(RAY)),,ray))
space := $(subst ,, )
PEERS_SELECTION := $(if $(LEFT_OUT),-m 'not $(subst $(space), and not ,$(LEFT_OUT))')

# 0.10.0's sdist, whose own test suite tests/compat/test_0_10_0_suite.py runs against this
# package: fetched once into a cache every venv shares. Without a network that test skips; in CI
# a failed download fails the build, as a peer's install does.
COMPAT_SDIST_DIR := .cache/sdists
COMPAT_SDIST := $(COMPAT_SDIST_DIR)/with_line_profiler-0.10.0.tar.gz

.PHONY: demo test test-asan lint bench clean

$(VENV)/.installed: pyproject.toml setup.py $(C_SOURCES)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip 'setuptools>=77' wheel
	# A development build: the extensions get the test and benchmark seams (see setup.py).
	LINEPROFILER_DEV_BUILD=1 CFLAGS="$(WERROR) $(EXTRA_CFLAGS)" LDFLAGS="$(EXTRA_LDFLAGS)" \
		$(PY) -m pip install -q --no-build-isolation $(INSTALL_MODE) '.[resources,gpu,dev]'
	# Peers that publish no build for every Python (3.15 has no Ray and no VizTracer yet): one by
	# one, so a Python without one still gets the rest, and their tests skip naming the version.
	# On 3.11-3.13 each has a wheel, and in CI a failed install there fails the build.
	for peer in $(OPTIONAL_PEERS); do \
		$(PY) -m pip install -q "$$peer" && continue; \
		if [ -n "$$CI" ] && $(PY) -c 'import sys; sys.exit(sys.version_info >= (3, 14))'; then exit 1; fi; \
		echo "$$peer: no build for $$($(PY) -c 'import platform; print(platform.python_version())'): its tests will skip"; \
	done
	# torch's CPU wheel lies on this machine's disk for 3.11 only; elsewhere the torch tests skip.
	# In CI (CI set) a failed torch install fails the build: its tests must not skip silently there.
	if $(PY) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then \
		$(PY) -m pip install -q torch==2.13.0 || { [ -n "$$CI" ] && exit 1; echo "torch not installed: its tests will skip"; }; fi
	touch $@

$(COMPAT_SDIST): | $(VENV)/.installed
	$(PY) -m pip download -q --no-deps --no-binary :all: --retries 1 --timeout 30 -d $(COMPAT_SDIST_DIR) \
		'with-line-profiler==0.10.0' || { [ -n "$$CI" ] && exit 1; \
		echo "with-line-profiler 0.10.0's sdist not downloaded: tests/compat/test_0_10_0_suite.py will skip"; }

# The package (a built copy, without the test seams, and without -Werror: a user's compiler may
# warn where ours does not) and what the examples import, nothing of the test environment. Built
# from a copy of the tree: an in-tree build shares build/ with make test-asan's, and a
# non-editable build reuses any .so it finds there newer than the sources, whatever flags made it.
$(DEMO_VENV)/.installed: pyproject.toml setup.py $(PACKAGE_SOURCES)
	rm -rf $(DEMO_VENV)
	$(PYTHON) -m venv $(DEMO_VENV)
	# As a user gets it: no test seams, whatever this shell's environment says.
	tree=$$(mktemp -d) && cp -r pyproject.toml setup.py README.md LICENSE src "$$tree" && \
		LINEPROFILER_DEV_BUILD= $(DEMO_VENV)/bin/python -m pip install -q "$$tree"; rc=$$?; rm -rf "$$tree"; exit $$rc
	$(DEMO_VENV)/bin/python -m pip install -q $(DEMO_PACKAGES) || \
		echo "$(DEMO_PACKAGES) not installed: the demo's learner falls back to pure Python"
	touch $@

demo: $(DEMO_VENV)/.installed
	$(DEMO_VENV)/bin/python examples/demo.py

test: $(VENV)/.installed $(if $(filter 1,$(PEERS)),$(COMPAT_SDIST))
	# pytest exits 5 when it collected nothing; that is a failure of the suite here.
	$(RUN_ENV) $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PEERS_SELECTION) $(PYTEST_ARGS) $(TESTS); rc=$$?; \
		if [ $$rc -eq 5 ]; then echo "no tests ran"; exit 1; fi; exit $$rc

# The C under AddressSanitizer and UBSan: its own environment, Python itself uninstrumented.
test-asan:
	# A non-editable build reuses any object in build/ newer than its source, whatever flags
	# made it: without this an earlier plain build would stand in for the instrumented one.
	rm -rf build
	$(MAKE) test VENV=.venv-asan WERROR=-Werror INSTALL_MODE= \
		EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -O1 -g" \
		EXTRA_LDFLAGS="-fsanitize=address,undefined" \
		PYTEST_ARGS="$(PYTEST_ARGS)" TESTS="$(TESTS)" \
		RUN_ENV="LD_PRELOAD=$$(gcc -print-file-name=libasan.so):$$(gcc -print-file-name=libubsan.so) ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 LP_ASAN=1"

# Seconds, not minutes: ruff (pyflakes, pycodestyle, bugbear, import order), mypy on src/, and
# clang-format on every C file, all configured in pyproject.toml and .clang-format.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check setup.py src tests benchmarks examples
	$(VENV)/bin/mypy
	clang-format --dry-run -Werror $$(find src tests -name '*.[ch]')

bench: $(VENV)/.installed
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf build .venv .venv-* src/*.egg-info profile
	find src -name '*.so' -delete
