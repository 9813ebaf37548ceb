# Every target sets up .venv itself, so a fresh clone needs nothing but python3 (and, for
# `make test` only, Chromium: the HTML report's tests open the report in a headless browser).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint setup clean chromium

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/python -m compileall -q kubesched  # as pip does for an installed package
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/kubesched simulate examples/quickstart/

# Installed with apt where we may (root on Debian or Ubuntu); anywhere else, say what to install.
chromium:
	@command -v chromium >/dev/null || { \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else \
	    echo "make test needs Chromium on the PATH as 'chromium' (tests/test_report.py opens the HTML report in it)." >&2; \
	    echo "Install it, e.g. 'sudo apt-get install chromium' (Debian, Ubuntu), 'sudo dnf install chromium' (Fedora)" >&2; \
	    echo "or 'brew install --cask chromium' (macOS), then run make test again. make demo does not need it." >&2; \
	    exit 1; \
	  fi; }

test: $(STAMP) chromium
	$(BIN)/ruff check kubesched tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -n auto --dist loadfile  # a file's tests share a worker, and their module's server

bench: $(STAMP)
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check kubesched tests bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
