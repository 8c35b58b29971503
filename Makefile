# Every target sets up what it needs: `make test` and `make demo` work on a fresh clone.
# The virtualenv is rebuilt when pyproject.toml changes.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help venv test test-unit test-integration demo bench bench-fingerprint calibrate clean

help:
	@echo "make demo   - run the main job (see README)"
	@echo "make test   - run the whole test suite"
	@echo "make bench-fingerprint - fingerprint benchmark against rensa and datasketch"

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "streamdedup needs Python 3.11, got " + sys.version'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade "pip>=25.1"
	$(BIN)/python -m pip install -q -e ".[kafka,tools,bench]" --group dev
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest tests streamdedup

test-unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit streamdedup

demo: $(STAMP)
	$(BIN)/streamdedup demo

bench-fingerprint: $(STAMP)
	$(BIN)/streamdedup bench fingerprint

calibrate: $(STAMP)
	$(BIN)/python benchmarks/calibrate_ld.py

clean:
	rm -rf $(VENV) build *.egg-info
