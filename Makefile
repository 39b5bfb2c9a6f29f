# faircl: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.faircl-installed

.PHONY: install demo lint test test-e2e test-fast test-long docs bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# One pip command with the constraints: installing torch separately lets pip swap it later.
	$(PIP) install -c constraints.txt -e '.[test,text,docs]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m faircl.demo

# The linter (ruff, from the test extra; its rules are in pyproject.toml's [tool.ruff]).
lint: $(STAMP)
	$(VENV)/bin/ruff check faircl

# faircl's bytecode first: where PYTHONDONTWRITEBYTECODE is set, every process the tests start (console commands,
# DDP ranks, the run pool's server) would otherwise compile faircl again.
# make test: everything but the end-to-end runs (marked e2e: console commands over the public data, several
# processes, whole benchmark and sweep runs, the SLURM cluster tests), which make test-e2e runs, naming each that
# passed and why each skip was skipped; CI runs both, plain `pytest` runs all.
test: $(STAMP)
	$(PY) -m compileall -q faircl > /dev/null
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -rs -m "not e2e" --durations=30

test-e2e: $(STAMP)
	$(PY) -m compileall -q faircl > /dev/null
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -rsp -m e2e --durations=15

test-long: $(STAMP)
	FAIRCL_LONG_TESTS=1 HF_HUB_OFFLINE=1 $(PY) -m pytest -q -rs --durations=15

test-fast: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -m "not slow"

# The documentation site, built offline into site/; --strict: a broken reference or a docstring that does not render
# fails the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf runs lightning_logs .pytest_cache site
