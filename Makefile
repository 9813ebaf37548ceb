# Every target sets up .venv itself, so a fresh clone needs nothing but python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint setup clean

$(STAMP): pyproject.toml
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/python -m compileall -q kubesched  # as pip does for an installed package
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/kubesched simulate examples/quickstart/

test: $(STAMP)
	$(BIN)/ruff check kubesched tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check kubesched tests bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
