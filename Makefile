# Each target sets itself up: a virtualenv in .venv with what it needs.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test,browser,bench]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m deepagent_magics.demo notebooks/01_quickstart.ipynb

test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval-lax notebooks tests

bench: $(STAMP)
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
