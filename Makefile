# Every target sets up what it needs: `make test` and `make demo` work on a fresh clone.
# The virtualenv is rebuilt when pyproject.toml changes.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help venv system-deps test test-unit test-integration test-browser screenshots demo demo-file bench-fingerprint calibrate warm-up clean clean-cache

help:
	@echo "make demo   - run the main job (see README)"
	@echo "make test   - run the whole test suite"
	@echo "make screenshots - regenerate the web inspector's screenshots in docs/screenshots"
	@echo "make bench-fingerprint - fingerprint benchmark against rensa and datasketch"
	@echo "make calibrate - refit the LD calibration constants on Reuters (streamdedup bench estimates --fit)"
	@echo "make warm-up - compile the Numba kernels ahead of the first run"

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "streamdedup needs Python 3.11, got " + sys.version'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
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

test: $(STAMP) system-deps
	$(BIN)/python -m pytest tests streamdedup

test-unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit streamdedup

# The real Kafka broker of scripts/kafka-local; a broker that cannot start fails the tests.
test-integration: $(STAMP) system-deps
	$(BIN)/python -m pytest tests/integration

# The web inspector in Debian's chromium (file-mode pages; the Kafka one is in test-integration).
test-browser: $(STAMP) system-deps
	$(BIN)/python -m pytest tests/browser

# Regenerates docs/screenshots/*.png (the README shows them) from a file-mode run of Reuters news.
screenshots: $(STAMP) system-deps
	$(BIN)/python scripts/ui_screenshots.py docs/screenshots

# The main job: a real local Kafka broker, the topics, a news feed, the processor until idle.
# KEEP=1 leaves the broker running for `streamdedup inspect` / `ui` on the demo's topics;
# KAFKA_PORT picks the broker's port; DEMO_ARGS adds options (e.g. --stories 500).
demo: $(STAMP) system-deps
	@BOOT=$$(scripts/kafka-local start | tail -n 1) && \
	  $(BIN)/streamdedup demo --mode kafka --bootstrap-servers $$BOOT $(if $(KEEP),--broker-kept) $(DEMO_ARGS); rc=$$?; \
	  $(if $(KEEP),echo "broker left running at $$BOOT; stop it with:"; echo "  KAFKA_PORT=$${BOOT##*:} $(CURDIR)/scripts/kafka-local stop",scripts/kafka-local stop); exit $$rc

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
	find streamdedup -name '*.nbi' -delete -o -name '*.nbc' -delete

clean: clean-cache
	rm -rf $(VENV) build *.egg-info
