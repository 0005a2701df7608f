# natcoord -- two-command setup:  make demo  /  make test
#
# `make venv` (pulled in by demo/test/paper/data) builds .venv once: an editable
# install with the test extras plus, when it can be built, the optional CHOLMOD
# backend (scikit-sparse<0.5 against Debian's SuiteSparse 5 headers).  The
# install (which compiles the C core in place) is remembered by a stamp file named
# after a hash of setup.cfg, pyproject.toml, setup.py and the core's C sources, so
# repeated runs do not reinstall; editing any of them does. `make test` also adds
# the optional peers and robot models (`make extras`) the comparison tests use.

SHELL       := /bin/bash
.DEFAULT_GOAL := help

PYTHON      ?= python3
VENV        := .venv
BIN         := $(VENV)/bin
DEPS_HASH   := $(shell cat setup.cfg pyproject.toml setup.py natcoord/core/src/*.[ch] 2>/dev/null | sha1sum | cut -c1-12)
STAMP       := $(VENV)/.stamp-$(DEPS_HASH)
EXTRAS_STAMP := $(VENV)/.extras-$(DEPS_HASH)
SKSPARSE    := scikit-sparse<0.5
CHOLMOD_H   := /usr/include/suitesparse/cholmod.h

export MPLBACKEND      := Agg
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# One BLAS thread: natcoord's dense blocks are small, and threaded BLAS on a
# busy 2-core machine makes the reference backends up to 15x slower.
export OPENBLAS_NUM_THREADS := 1
export OMP_NUM_THREADS      := 1

.PHONY: help venv extras demo test paper data clean
.PHONY: dist docs

help:
	@echo "natcoord make targets:"
	@echo "  make demo   set up .venv (first run only) and simulate the six-bar; figure in out/six_bar.png"
	@echo "  make test   set up .venv (first run only) and run the test suite (pytest)"
	@echo "  make paper  regenerate paper/figures/ and tables from data/"
	@echo "  make data   rerun the benchmarks that write data/*.csv, then make paper (slow)"
	@echo "  make clean  remove .venv/, out/ and caches"
	@echo "  make docs   build the documentation (MkDocs, --strict) into site/"
	@echo "  make dist   build sdist + wheel, install each in a clean venv, smoke-test (slow)"
	@echo "  make venv   (internal) create/update .venv; used by the targets above"
	@echo "  make extras (internal) add the peers and robot models the comparison tests use"

venv: $(STAMP)
	@:

$(STAMP):
	@test -x $(BIN)/python || { echo "natcoord: creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "natcoord: installing natcoord[test] into $(VENV), compiling the C core (first run: about a minute)"
	$(BIN)/python -m pip install -q --upgrade pip
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/python -m pip install -q -e '.[test]'
	@# ---- optional CHOLMOD backend: never fails the build -------------------
	@# scikit-sparse 0.4.x ships only an sdist; pip builds it in an isolated env
	@# (Cython 3 and numpy>=2 fetched automatically; the numpy-2 build also runs
	@# under numpy 1.x) and its setup.py already searches /usr/include/suitesparse,
	@# where Debian's libsuitesparse-dev (SuiteSparse 5, libcholmod.so.3) puts
	@# cholmod.h.  SUITESPARSE_INCLUDE_DIR is only belt and braces.
	@reason=""; \
	if [ ! -f $(CHOLMOD_H) ]; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; \
	  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	  else sudo="none"; fi; \
	  if [ "$$sudo" != none ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "natcoord: installing libsuitesparse-dev with apt-get (for the CHOLMOD backend)"; \
	    $$sudo apt-get update -qq >$(VENV)/apt.log 2>&1 && \
	    $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsuitesparse-dev >>$(VENV)/apt.log 2>&1 \
	      || reason="apt-get update/install of libsuitesparse-dev failed, see $(VENV)/apt.log"; \
	  else \
	    reason="$(CHOLMOD_H) missing and apt-get not usable without a password; install libsuitesparse-dev"; \
	  fi; \
	fi; \
	if [ -z "$$reason" ] && [ ! -f $(CHOLMOD_H) ]; then reason="$(CHOLMOD_H) still missing"; fi; \
	if [ -z "$$reason" ]; then \
	  echo "natcoord: building $(SKSPARSE) (CHOLMOD backend)"; \
	  if SUITESPARSE_INCLUDE_DIR=/usr/include/suitesparse \
	     $(BIN)/python -m pip install -q '$(SKSPARSE)' >$(VENV)/sksparse.log 2>&1 \
	     && $(BIN)/python -c 'import sksparse.cholmod' >>$(VENV)/sksparse.log 2>&1; then \
	    echo "natcoord: CHOLMOD backend available (scikit-sparse $$($(BIN)/python -c 'import importlib.metadata as m; print(m.version("scikit-sparse"))'))"; \
	  else \
	    log=$(VENV)/sksparse.log; \
	    why=$$(grep -m 1 -E ':[0-9]+:([0-9]+:)? (fatal )?error:' $$log); \
	    [ -n "$$why" ] || why=$$(grep -E '^[[:space:]]*error: ' $$log | grep -vE 'subprocess-exited|failed-wheel-build' | head -n 1); \
	    [ -n "$$why" ] || why=$$(grep -E '^[[:space:]]*(ERROR: |[A-Za-z]*Error: )' $$log | grep -v 'Failed building wheel' | tail -n 1); \
	    [ -n "$$why" ] || why=$$(grep -v '^[[:space:]]*$$' $$log | tail -n 1); \
	    reason="$$(echo "$$why" | sed 's/^[[:space:]]*//' | cut -c1-200); full log in $$log"; \
	  fi; \
	fi; \
	if [ -n "$$reason" ]; then \
	  echo "natcoord: CHOLMOD backend unavailable (scikit-sparse could not be built: $$reason); tests for it will be skipped"; \
	fi
	@rm -f $(VENV)/.stamp-*
	@touch $@

# The peers (Pinocchio, MuJoCo, Exudyn) and robot models (example-robot-data,
# dm-control) of setup.cfg's `peers` and `models` extras, for the comparison and
# corpus tests and the peer benchmarks; installed as plain requirements so the C
# core is not rebuilt. Never fails: without them those tests skip, naming what
# is missing.
extras: $(EXTRAS_STAMP)
	@:

$(EXTRAS_STAMP): $(STAMP)
	@echo "natcoord: installing the optional peers and robot models (pin, mujoco, exudyn, example-robot-data, dm-control)"
	@reqs=$$($(BIN)/python -c 'import configparser; c = configparser.ConfigParser(); c.read("setup.cfg"); e = c["options.extras_require"]; print(" ".join((e["peers"] + e["models"]).split()))'); \
	if $(BIN)/python -m pip install -q $$reqs >$(VENV)/extras.log 2>&1; then touch $@; \
	else echo "natcoord: peers/robot models not installable (see $(VENV)/extras.log); their tests will be skipped"; fi

demo: venv
	@mkdir -p out
	$(BIN)/natcoord simulate six-bar --t-end 10 --out out/six_bar.npz --plot out/six_bar.png
	@echo "Figure written to out/six_bar.png"

test: venv extras
	$(BIN)/python -m pytest -q

paper: venv
	$(BIN)/python paper/figures.py

data: venv extras
	$(BIN)/python benchmarks/scaling.py
	$(BIN)/python benchmarks/tolerance.py
	$(BIN)/python benchmarks/hexapod_speed.py
	$(BIN)/python benchmarks/core_speed.py
	$(BIN)/python benchmarks/chain_simulation.py
	$(BIN)/python benchmarks/stiff.py
	$(BIN)/python benchmarks/sensitivity_cost.py
	$(BIN)/python benchmarks/peers.py
	$(BIN)/python benchmarks/robot_speed.py
	$(BIN)/python benchmarks/corpus_table.py
	$(BIN)/python paper/figures.py

clean:
	rm -rf $(VENV) out site dist .pytest_cache .hypothesis build *.egg-info
	rm -f natcoord/core/engine*.so
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# ---- distribution and documentation (issue 11) ------------------------------
dist: venv
	PYTHON=$(BIN)/python .ci/dist-check

docs: venv
	$(BIN)/python -m mkdocs build --strict --site-dir site
	@echo "Documentation written to site/index.html"
