# Every target sets up what it needs: `make test` and `make demo` work on a fresh clone.
# The virtualenv is rebuilt when pyproject.toml or the interpreter's version changes (the stamp
# names the version).
#
# streamdedup supports Python 3.11-3.13. PYTHON defaults to the newest of them that runs here
# (a pyenv shim exists for every installed version but fails for one pyenv does not select),
# else python3, which the venv rule then checks.
SUPPORTED := 3.13 3.12 3.11
OLDEST := $(lastword $(SUPPORTED))
# python3.X: the one on PATH if it runs, else pyenv's newest 3.X.* (its shim fails for a version
# pyenv does not select, while the interpreter itself is installed)
PYENV_VERSIONS := $(shell pyenv root 2>/dev/null)/versions
find_python = $(firstword $(foreach c,python$(1) $(lastword $(sort $(wildcard $(PYENV_VERSIONS)/$(1).*/bin/python$(1)))),$(shell $(c) -c pass >/dev/null 2>&1 && echo $(c))))
ifeq ($(origin PYTHON),undefined)
PYTHON := $(firstword $(foreach v,$(SUPPORTED),$(call find_python,$(v))) python3)
endif
pyver = $(shell $(1) -c 'import sys; print(*sys.version_info[:2], sep=".")' 2>/dev/null)
PYVER := $(call pyver,$(PYTHON))
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(PYVER)
# `make test` also runs the unit tier on every other supported version found here, each in its
# own venv (.venv-3.X), as version=interpreter pairs.
OTHER_PYTHONS := $(foreach v,$(filter-out $(PYVER),$(SUPPORTED)),$(if $(call find_python,$(v)),$(v)=$(call find_python,$(v))))
# The release tier installs the built wheel into a clean venv of the oldest version found (the
# main one if no other) and tests the installed package; the other versions run the unit tier
# from the source tree.
WHEEL_PAIR := $(or $(lastword $(OTHER_PYTHONS)),$(PYVER)=$(PYTHON))
SOURCE_PYTHONS := $(filter-out $(WHEEL_PAIR),$(OTHER_PYTHONS))
WHEEL_VENV := .venv-wheel

.PHONY: help venv system-deps dist test test-unit test-wheel test-integration test-browser screenshots docs reference demo demo-file bench-fingerprint calibrate warm-up clean clean-cache

help:
	@echo "make demo   - run the main job (see README)"
	@echo "make test   - run the whole test suite, the built wheel's tier, and the unit tier on every other Python $(SUPPORTED) found"
	@echo "make dist   - build the wheel and the sdist into dist/"
	@echo "make docs   - serve the documentation site on http://127.0.0.1:8000 (make test builds it strictly)"
	@echo "make reference - regenerate docs/reference/ from the config model and the commands"
	@echo "make screenshots - regenerate the web inspector's screenshots in docs/screenshots"
	@echo "make bench-fingerprint - fingerprint benchmark against rensa and datasketch"
	@echo "make calibrate - refit the LD calibration constants on Reuters (streamdedup bench estimates --fit)"
	@echo "make warm-up - compile the Numba kernels ahead of the first run"

$(STAMP): pyproject.toml
	@test -n "$(filter $(PYVER),$(SUPPORTED))" || { echo "streamdedup needs Python 3.11-3.13: PYTHON=$(PYTHON) is $(or $(PYVER),not a working Python 3) (try make PYTHON=/path/to/python3.13)" >&2; exit 1; }
	test "$$($(BIN)/python -c 'import sys; print(*sys.version_info[:2], sep=".")' 2>/dev/null)" = "$(PYVER)" || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install -q --upgrade "pip>=25.1"
	$(BIN)/python -m pip install -q -e ".[tools,bench,ui,faust]" --group dev
	touch $(STAMP)

venv: $(STAMP)

# The integration tests and the demo need a JDK and Maven (the broker is assembled from Maven
# Central by scripts/kafka-local) and Debian's kcat (an external client in the tests); the
# browser tests Debian's chromium (Playwright drives it; no browser is ever downloaded).
system-deps:
	@command -v java >/dev/null || { echo "java 17+ is needed (Debian: apt-get install openjdk-17-jre-headless)"; exit 1; }
	@command -v mvn >/dev/null || { echo "Maven is needed (Debian: apt-get install maven)"; exit 1; }
	@command -v kcat >/dev/null || { apt-get update -qq && apt-get install -y -qq kcat >/dev/null; }
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

# Every tier runs whatever an earlier one did; the failed ones are named at the end.
test: $(STAMP) system-deps
	@failed=""; \
	$(BIN)/python -m pytest tests streamdedup || failed="$$failed python$(PYVER)"; \
	$(MAKE) --no-print-directory test-wheel || failed="$$failed wheel-python$(firstword $(subst =, ,$(WHEEL_PAIR)))"; \
	for pair in $(SOURCE_PYTHONS); do \
	  v=$${pair%%=*}; \
	  $(MAKE) --no-print-directory test-unit PYTHON=$${pair#*=} VENV=.venv-$$v UNIT_ARGS='-m "not cold_cache"' || failed="$$failed unit-tier-python$$v"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed" >&2; exit 1; fi

# The wheel and the sdist, built in an isolated environment as a user's pip would.
dist: $(STAMP)
	@rm -rf dist; log=$$(mktemp); \
	$(BIN)/python -m build --outdir dist . >"$$log" 2>&1 || { cat "$$log" >&2; rm -f "$$log"; exit 1; }; \
	rm -f "$$log"; echo "built:" dist/*

# The release as a user installs it: the wheel (with its extras) in a clean venv, then
# `streamdedup --version`, the file-mode demo and the unit tier run against the installed
# package. PYTHONSAFEPATH keeps the current directory off sys.path; the tests run from a directory
# that links tests/ only, so `import streamdedup` finds the installed package, not the source.
test-wheel: dist
	@set -e; py=$(lastword $(subst =, ,$(WHEEL_PAIR))); \
	rm -rf $(WHEEL_VENV) && $$py -m venv $(WHEEL_VENV); \
	$(WHEEL_VENV)/bin/python -m pip install -q --upgrade "pip>=25.1"; \
	whl=$$(ls dist/streamdedup-*.whl); \
	$(WHEEL_VENV)/bin/python -m pip install -q "$$whl[tools,bench,ui,faust]" --group dev; \
	run=$$(mktemp -d) && trap 'rm -rf "$$run"' EXIT && ln -s $(CURDIR)/tests "$$run/tests"; \
	cd "$$run" && export PYTHONSAFEPATH=1; \
	pkg=$$($(CURDIR)/$(WHEEL_VENV)/bin/python -c 'import os, streamdedup; print(os.path.dirname(streamdedup.__file__))'); \
	case "$$pkg" in $(CURDIR)/$(WHEEL_VENV)/*) echo "testing the installed package at $$pkg";; \
	  *) echo "make test-wheel: streamdedup imports from $$pkg, not the installed wheel" >&2; exit 1;; esac; \
	$(CURDIR)/$(WHEEL_VENV)/bin/streamdedup --version; \
	$(CURDIR)/$(WHEEL_VENV)/bin/streamdedup demo --mode file --stories 300 --output-dir "$$run/demo" >/dev/null; \
	echo "the file-mode demo ran from the installed package"; \
	$(CURDIR)/$(WHEEL_VENV)/bin/python -m pytest -c $(CURDIR)/pyproject.toml --rootdir "$$run" tests/unit "$$pkg" -m "not cold_cache"

# UNIT_ARGS: the oldest version's pass leaves out the cold-cache tests (the kernel cache's
# machinery, ~2.5 min there; the main pass runs them)
test-unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit streamdedup $(UNIT_ARGS)

# The real Kafka broker of scripts/kafka-local; a broker that cannot start fails the tests.
test-integration: $(STAMP) system-deps
	$(BIN)/python -m pytest tests/integration

# The web inspector in Debian's chromium (file-mode pages; the Kafka one is in test-integration).
test-browser: $(STAMP) system-deps
	$(BIN)/python -m pytest tests/browser

# The documentation site (mkdocs.yml, docs/), live-reloading; tests/unit/test_docs.py builds it
# strictly in `make test`.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

# docs/reference/configuration.md and cli.md from the code (a test fails while they are stale).
reference: $(STAMP)
	$(BIN)/python scripts/gen_reference.py

# Regenerates docs/screenshots/*.png (the docs show them) from a file-mode run of Reuters news.
screenshots: $(STAMP) system-deps
	$(BIN)/python scripts/ui_screenshots.py docs/screenshots

# The main job: a real local Kafka broker, the topics, a news feed, the processor until idle.
# KEEP=1 leaves the broker running for `streamdedup inspect` / `ui` on the demo's topics;
# KAFKA_PORT picks the broker's port; DEMO_ARGS adds options (e.g. --stories 500).
# A broker that was already running on that port (another demo's, a test run's) is used and left
# running; one that cannot start stops the demo with kafka-local's reason.
demo: $(STAMP) system-deps
	@LOG=$$(mktemp) && trap 'rm -f "$$LOG"' EXIT && \
	  BOOT=$$(scripts/kafka-local start 2>"$$LOG" | tail -n 1); cat "$$LOG" >&2; \
	  case "$$BOOT" in *:[0-9]*) ;; *) echo "make demo: the demo's Kafka broker did not start (above); KAFKA_PORT and KAFKA_CONTROLLER_PORT pick other ports" >&2; exit 1;; esac; \
	  $(BIN)/streamdedup demo --mode kafka --bootstrap-servers $$BOOT $(if $(KEEP),--broker-kept) $(DEMO_ARGS); rc=$$?; \
	  if grep -q "broker already running" "$$LOG"; then echo "the broker at $$BOOT was already running: left as it was"; \
	  $(if $(KEEP),else echo "broker left running at $$BOOT; stop it with:"; echo "  KAFKA_PORT=$${BOOT##*:} $(CURDIR)/scripts/kafka-local stop";,else scripts/kafka-local stop;) fi; exit $$rc

demo-file: $(STAMP)
	$(BIN)/streamdedup demo --mode file

bench-fingerprint: $(STAMP)
	$(BIN)/streamdedup bench fingerprint

# Fits the constants of streamdedup/calibration.py on one half of Reuters and reports the
# errors on the other; the constants are copied into the module by hand.
calibrate: $(STAMP)
	$(BIN)/streamdedup bench estimates --fit

warm-up: $(STAMP)
	$(BIN)/streamdedup warm-up

# Numba caches are keyed by each kernel's own file: after editing a kernel that others inline,
# remove them (a fresh clone or install has none).
clean-cache:
	find streamdedup -name '*.nbi' -delete -o -name '*.nbc' -delete -o -name 'unicode-tables-*.npz' -delete

clean: clean-cache
	rm -rf $(VENV) $(foreach v,$(SUPPORTED),.venv-$(v)) build *.egg-info
