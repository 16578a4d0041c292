# Two commands a newcomer needs: `make run` and `make test`.
# `make check` is the loop to run after every edit: lint (ruff, mypy) and the fast tests
# (pytest -m "not slow": no wheel installs, cold compiles, soaks, fuzzing, whole games or browser).
# `make test` is lint and the whole suite, the slow tier included; CI runs it.
# Both spread the tests over one worker more than there are cores with pytest-xdist: many tests
# wait on sockets, subprocesses, a browser or a real clock, and the extra worker fills those
# waits (on two cores the whole suite took 7.3 minutes with three workers, 7.9 with two).
# XDIST= runs them in one process.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
BEAT   := $(PYTHON) tools/heartbeat.py
# loadgroup: the tests marked xdist_group (one Dask cluster, one browser per module) share a worker.
WORKERS := $(shell $(PYTHON) -c "import os; print((os.cpu_count() or 1) + 1)")
XDIST  ?= -n $(WORKERS) --dist loadgroup

.PHONY: setup run check test lint bench clean

setup: $(STAMP)

# Reinstall only when the project metadata changes; the install is editable so code edits need nothing.
# The kernels compile (one core, about 2 minutes into an empty cache) while pip installs the dev
# tools on the other: the project and what it runs on first, then both at once. The dev tools come
# from pyproject's list (a second `pip install -e '.[dev]'` would rebuild the project under the
# compiling process).
# Each quiet step says every 10 s that it is still working (tools/heartbeat.py), and the
# kernels' compile reports its groups as it goes: nothing is silent for minutes.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(BEAT) "setup: upgrading pip" -- $(PY) -m pip install --quiet --upgrade pip
	$(BEAT) "setup: installing the project and what it runs on" -- $(PY) -m pip install --quiet -e .
	$(PY) -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['dev'], sep='\n')" > $(VENV)/dev-requirements.txt
	$(VENV)/bin/othello-engine --precompile & compiling=$$!; \
	$(BEAT) "setup: installing the dev tools (beside the compile)" -- $(PY) -m pip install --quiet -r $(VENV)/dev-requirements.txt; installed=$$?; \
	wait $$compiling && test $$installed = 0
	touch $(STAMP)

run: setup
	$(VENV)/bin/othello-engine $(ARGS)

check: setup lint
	$(PY) -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS)

test: setup lint
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# Style and import order everywhere; types on the packages listed under [tool.mypy].
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: setup
	$(VENV)/bin/othello-bench perft 10
	$(VENV)/bin/othello-bench playouts
	$(VENV)/bin/othello-bench search --agent uct --seconds 2
	$(VENV)/bin/othello-bench timing --move-time 4.8 --moves 20

clean:
	rm -rf $(VENV) build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
