# Each target sets itself up: a virtualenv in .venv with what it needs, then runs.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PIP     := $(BIN)/python -m pip install -q --disable-pip-version-check

.PHONY: demo test bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

# One stamp per set of extras; each also installs the kernel spec the notebooks and sub-agents use.
$(VENV)/.installed-%: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[$(subst +,$(comma),$*)]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

comma := ,

demo: $(VENV)/.installed-test
	$(BIN)/python -m deepagent_magics.demos.quickstart notebooks/01_quickstart.ipynb

test: $(VENV)/.installed-test+browser+optimize
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval-lax notebooks tests

bench: $(VENV)/.installed-test+bench
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
