# The course's two commands (README): `make lab` opens it, `make test` checks it.
# `make lab` creates .venv with Python ≥ 3.11 and installs course_lib with its runtime
# dependencies and JupyterLab (the `lab` extra); `make test` adds the test extras (pytest,
# nbval, transformers, playwright…) to the same .venv. Each step runs the first time and again whenever
# pyproject.toml or .ci/constraints.txt changes; every package is held at the version in
# .ci/constraints.txt.
PYTHON ?= python3
# Where torch comes from (docs/install.md). On Linux: PyTorch's CPU-only index, for torch alone
# (PyPI's Linux torch is the CUDA build, several GB); if that index does not answer within a few
# seconds, one line says so and torch comes from PyPI (.ci/torch_index.py). Elsewhere, and with
# TORCH_INDEX= (empty) or TORCH_INDEX=pypi: pip's usual configuration. TORCH_INDEX=<url>: that index.
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
TORCH_INDEX ?= $(if $(filter Linux,$(shell uname -s)),$(TORCH_CPU_INDEX))
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-runtime
TEST_STAMP := $(VENV)/.installed-test
# options for `jupyter lab`, e.g. make lab LAB_ARGS="--port 8899 --no-browser"
LAB_ARGS ?=
# The learner's own copy of every notebook (both editions, the solutions too), made on first use,
# ignored by git, never overwritten: `make lab` opens it, `make test` never reads it.
MY_COPY ?= my-notebooks
# the page JupyterLab opens (`make lab-zh`: the Chinese edition's);
# not in LAB_ARGS: a second --LabApp.default_url makes JupyterLab drop both and open plain /lab
LAB_URL ?= /lab/tree/$(MY_COPY)/01_tokenizer.ipynb
# verbosity_assertions=2: a differing output is shown as whole lines, so a ✓ line's figure id
# is on the line that differs (pytest otherwise cuts identical leading characters)
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with .ci/nbval_sanitize.cfg -o verbosity_assertions=2
# pytest-xdist: two workers. Unit tests go to whichever worker is free (worksteal); a notebook's
# cells stay together on one worker, in order (loadfile). `make test XDIST=` runs each stage
# in one process.
XDIST ?= -n 2
# -p tests._quick_start, loaded before pytest's plugins: no RFC 3987 grammar built at start-up
# in each pytest process (1-2 s each; tests/_quick_start.py says why nothing else changes)
QUICK := -p tests._quick_start
PYTEST := $(BIN)/python -m pytest -rs $(QUICK) $(XDIST) $(if $(XDIST),--dist worksteal)
# nbval's stages: each notebook's kernel forked from a Python that has imported torch (28 and
# 14 kernels that would each import it; tests/_kernel_zygote.py, docs/testing.md)
# (-p tests._xdist_order: the long notebooks first, so no worker runs one alone at the end)
# (-p no:hypothesispytest: no property tests here, and its end-of-run summary would import
# hypothesis, most of a second of CPU)
PYTEST_NB := $(BIN)/python -m pytest -rs $(QUICK) -p no:hypothesispytest -p tests._kernel_zygote $(XDIST) $(if $(XDIST),--dist loadfile -p tests._xdist_order)
# one process: for the short scalar-kernel unit run, starting workers costs more than it saves
PYTEST_ONE := $(BIN)/python -m pytest -rs $(QUICK)
# Two pytest workers on two cores, each with torch's default threads: an idle OpenMP thread
# spins, waiting for work, and takes the core from the other worker (the unit stage measured
# 162 s spinning, 130 s sleeping on 2 cores of an AMD EPYC). Passive threads sleep at once; which
# threads run a kernel, and so every value, stays the same. Only the test run sets it.
PASSIVE := OMP_WAIT_POLICY=PASSIVE
# JUnit XML and figure logs of the last run; .ci/summary.py prints the closing lines from them.
# Empty: artifacts/test-run, or, where the course folder is read-only (a shared install), a new
# folder under $TMPDIR (make test names it; the tests' own files go beside it: tests/_artifacts.py)
RUN ?=
# The stored notebook outputs were made without pretrained GPT-2: nbval runs with any local
# copy hidden (the unit tests do see it).
NO_WEIGHTS := env -u COURSE_GPT2_WEIGHTS HF_HUB_CACHE="$$(mktemp -d)"
# torch's scalar (non-vectorised) CPU kernels, one thread: the same digits must come out
SCALAR := ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
# The unit tests that check figures (or their margins); the scalar-kernel stage re-runs them
# without the slow weight re-derivations (stage 1 runs those). Left out: the tokenizer's and
# GPT-2's architecture tests (integers and shapes, compared with tiktoken / transformers) and
# the tests of the tests (mutations, browser), and the Chinese edition's tests (words, not numbers).
NOT_FIGURE_TESTS := tests/test_mutations.py tests/test_browser_panel.py tests/test_tokenizer.py tests/test_gpt2.py \
	tests/test_language.py tests/test_zh_edition.py
FIGURE_TESTS = $(filter-out $(NOT_FIGURE_TESTS),$(shell grep -l -E 'check_figure|margins' tests/test_*.py))
# The scalar-kernel nbval stage runs the English notebooks only: the Chinese twins (notebooks/zh/)
# run the same code cell for cell (tests/test_zh_edition.py proves it token by token, strings and
# comments aside) and differ only in the words around the numbers, which no CPU kernel changes;
# stage 2 runs both editions on the default kernels. A second scalar run would add ~30 s.
SCALAR_NB_SKIP := --ignore=notebooks/zh

.PHONY: setup setup-test lab lab-zh stop my-copy refresh-copy test test-matrix test-wheel test-binder

PIP_INSTALL = $(BIN)/python -m pip install -c .ci/constraints.txt
# pyproject.toml's requires-python, checked before any venv or pip (tests/test_environment.py)
# (no f-string: an old Python must get as far as the message)
PYTHON_CHECK = import sys; sys.exit(0 if sys.version_info >= (3, 11) else \
	"the course needs Python 3.11 or newer; $(PYTHON) is %d.%d.%d. " % sys.version_info[:3] + \
	"Name a newer one: make setup PYTHON=/path/to/python3.11")

# the runtime and JupyterLab: what a learner needs to read and run the notebooks. torch first, on
# its own, from TORCH_INDEX if it answers (--no-deps: its dependencies come with the rest, from PyPI); then
# everything else, torch already there. Again when the course's built JupyterLab extension changes:
# pip installs a copy of it (course_lib/ui/labextension_src/README.md).
$(STAMP): pyproject.toml .ci/constraints.txt $(wildcard course_lib/ui/labextension/package.json)
	@$(PYTHON) -c '$(PYTHON_CHECK)'
	$(PYTHON) -m venv $(VENV)
	@index=$$($(BIN)/python .ci/torch_index.py "$(TORCH_INDEX)"); \
	if [ -n "$$index" ]; then echo "torch from $$index"; \
		$(PIP_INSTALL) --no-deps --index-url "$$index" torch || exit 1; fi
	$(PIP_INSTALL) -e ".[lab]"
	touch $(STAMP)

# the test extras, added on top of the runtime
$(TEST_STAMP): $(STAMP)
	$(PIP_INSTALL) -e ".[test]"
	touch $(TEST_STAMP)

setup: $(STAMP)

setup-test: $(TEST_STAMP)

# Opens your copy of notebook 01 (made first if missing, see my-copy). Stop it with Ctrl-C in
# this terminal (twice, or once and answer y), or `make stop` from another.
lab: $(STAMP) my-copy
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) --ServerApp.root_dir="$(CURDIR)" \
		--LabApp.default_url=$(LAB_URL) $(LAB_ARGS)

# the same, opening the Chinese edition's notebook 01 (a variable set here holds for `lab` too)
lab-zh: LAB_URL = /lab/tree/$(MY_COPY)/zh/01_tokenizer.ipynb
lab-zh: lab

# Stop every JupyterLab that `make lab` started from this folder, whatever port it took
# (`jupyter lab stop` alone only looks at port 8888).
stop:
	@$(BIN)/python .ci/stop_lab.py "$(CURDIR)"

# Your own copy of every notebook (both editions, the solutions too) in $(MY_COPY)/, to work in:
# `make test` re-runs notebooks/ only and compares it with the stored outputs, so solved
# exercises saved there would fail it. A file already in $(MY_COPY)/ is never overwritten; a
# notebook new upstream is added. The copies are yours to write, even from a read-only checkout.
my-copy:
	@mkdir -p "$(MY_COPY)" 2>/dev/null && [ -w "$(MY_COPY)" ] || { \
		echo "cannot write $(MY_COPY)/ in $(CURDIR): your copy of the notebooks goes there (MY_COPY=... names another folder inside this one)"; exit 1; }
	@made=0; kept=0; \
	for f in $$(cd notebooks && find . -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' | sort); do \
		t="$(MY_COPY)/$${f#./}"; \
		if [ -e "$$t" ]; then kept=$$((kept + 1)); \
		else mkdir -p "$$(dirname "$$t")" && cp "notebooks/$${f#./}" "$$t" && chmod u+w "$$t" && made=$$((made + 1)) || exit 1; fi; \
	done; \
	echo "$(MY_COPY)/: $$made notebook(s) copied, $$kept already there kept as they are"

# A fresh copy from notebooks/, keeping yours under another name (nothing is deleted):
#   make refresh-copy                        the whole folder moves to $(MY_COPY).<date>-<time>/
#   make refresh-copy NOTEBOOK=03_attention  one notebook (or zh/03_attention, solutions/…): yours
#                                            becomes $(MY_COPY)/03_attention.<date>-<time>.ipynb
NOTEBOOK ?=
refresh-copy:
	@stamp=$$(date +%Y%m%d-%H%M%S); \
	if [ -z "$(NOTEBOOK)" ]; then \
		if [ -e "$(MY_COPY)" ]; then \
			old="$(MY_COPY).$$stamp"; n=1; while [ -e "$$old" ]; do n=$$((n + 1)); old="$(MY_COPY).$$stamp-$$n"; done; \
			mv "$(MY_COPY)" "$$old" && echo "your previous copy is now $$old/"; \
		fi; \
	else \
		f="$(NOTEBOOK)"; f="$${f%.ipynb}"; f="$${f#notebooks/}"; f="$${f#$(MY_COPY)/}"; \
		if [ ! -f "notebooks/$$f.ipynb" ]; then \
			echo "NOTEBOOK=$(NOTEBOOK): there is no notebooks/$$f.ipynb (name one as 03_attention, zh/03_attention or solutions/<name>)"; exit 2; fi; \
		if [ -e "$(MY_COPY)/$$f.ipynb" ]; then \
			old="$(MY_COPY)/$$f.$$stamp"; n=1; while [ -e "$$old.ipynb" ]; do n=$$((n + 1)); old="$(MY_COPY)/$$f.$$stamp-$$n"; done; \
			mv "$(MY_COPY)/$$f.ipynb" "$$old.ipynb" && echo "your previous $$f.ipynb is now $$old.ipynb"; \
		fi; \
	fi
	@$(MAKE) --no-print-directory my-copy MY_COPY="$(MY_COPY)"

# Four stages, all always run; any failing fails `make test`:
#   1. unit tests   2. every notebook under nbval (strict), both editions (notebooks/ and notebooks/zh/)
#   3+4. the figure-bearing unit tests and nbval again (English edition) on torch's scalar kernels, one thread
# Stage 1 runs alone (its browser tests and graders need the machine); then 2, 3 and 4 side by
# side (none of them is timed, and alone each leaves a core idle part of the time): 2's output
# as it runs, then 3's and 4's; then one closing line per stage and a total (.ci/summary.py).
test: $(TEST_STAMP)
	@# While 1/4 runs (its tests/conftest.py warms the cache too, before any kernel starts): warm
	@# matplotlib's font cache, so its first-run message cannot reach a notebook's output in 2/4
	@# and 4/4, and check torch's switch to its scalar kernels (3/4 and 4/4)
	@# Python's bytecode cache is written (__pycache__/, ignored by git) even where the environment
	@# sets PYTHONDONTWRITEBYTECODE (as some containers do): the run's Python processes then compile
	@# course_lib and rewrite the test modules once, not each anew (~10 CPU-seconds in all); in a
	@# read-only checkout nothing is written and only that time is lost
	@run="$(RUN)"; \
	if [ -z "$$run" ]; then \
		if mkdir -p artifacts 2>/dev/null && [ -w artifacts ]; then run=artifacts/test-run; \
		else base=$$(mktemp -d "$${TMPDIR:-/tmp}/course-test.XXXXXX") || exit 1; \
			run=$$base/artifacts/test-run; export COURSE_ARTIFACTS=$$base/artifacts; \
			echo "the course folder is read-only: this run's files go to $$base/artifacts"; fi; \
	fi; \
	rm -rf "$$run" && mkdir -p "$$run" && run=$$(cd "$$run" && pwd) || exit 1; \
	unset PYTHONDONTWRITEBYTECODE; \
	status=0; \
	$(BIN)/python -c "import matplotlib.font_manager" & warm=$$!; \
	$(SCALAR) $(BIN)/python -c 'import sys, torch; c = torch.backends.cpu.get_cpu_capability(); print("torch CPU capability:", c, "| threads:", torch.get_num_threads()); sys.exit(c != "DEFAULT" or torch.get_num_threads() != 1)' \
		>$$run/scalar-check.out 2>&1 & check=$$!; \
	echo "== 1/4 unit tests"; \
	$(PASSIVE) COURSE_FIGURE_LOG=$$run/figures-unit.log \
		$(PYTEST) --durations=15 -m "not install" --junitxml=$$run/unit.xml tests || status=1; \
	echo "== 2/4, 3/4 and 4/4 side by side: the notebooks, then the scalar kernels (their output follows 2/4's)"; \
	scalar=""; wait $$warm; \
	if wait $$check; then cat $$run/scalar-check.out; \
		$(SCALAR) COURSE_FIGURE_LOG=$$run/figures-scalar-unit.log \
			$(PYTEST_ONE) -m "not slow and not install" --junitxml=$$run/scalar-unit.xml $(FIGURE_TESTS) \
			>$$run/scalar-unit.out 2>&1 & unit=$$!; \
		$(NO_WEIGHTS) $(SCALAR) COURSE_FIGURE_LOG=$$run/figures-scalar-nbval.log \
			$(PYTEST_NB) $(NBVAL) --junitxml=$$run/scalar-nbval.xml $(SCALAR_NB_SKIP) notebooks >$$run/scalar-nbval.out 2>&1 & nb=$$!; \
		scalar="$$unit $$nb"; \
	else cat $$run/scalar-check.out; echo "torch did not switch to its scalar kernels"; status=1; fi; \
	trap 'kill $$scalar 2>/dev/null; exit 130' INT TERM; \
	echo "== 2/4 notebooks (nbval)"; \
	$(NO_WEIGHTS) $(PASSIVE) COURSE_FIGURE_LOG=$$run/figures-nbval.log \
		$(PYTEST_NB) $(NBVAL) --junitxml=$$run/nbval.xml notebooks || status=1; \
	if [ -n "$$scalar" ]; then \
		wait $$unit || status=1; wait $$nb || status=1; \
		echo "== 3/4 scalar kernels: figure-bearing unit tests"; cat $$run/scalar-unit.out; \
		echo "== 4/4 scalar kernels: notebooks (nbval)"; cat $$run/scalar-nbval.out; \
	fi; \
	trap - INT TERM; \
	echo "== summary"; \
	$(BIN)/python .ci/summary.py "$$run" || status=1; \
	exit $$status

# Checks that install environments of their own (minutes each, downloads from PyPI): not part
# of `make test`. docs/install.md, "The matrix".
#   test-matrix: the lock, the oldest supported set, the newest on PyPI, Python 3.12, 3.13 and 3.14
#     (Debian trixie and forky roots; needs root), Debian 12's own python3 through `make setup`,
#     a venv made by uv, a learner's existing torch 2.14.1 + numpy 2.3.5, and `make test` by an
#     unprivileged user in a read-only checkout, each running the unit tests and nbval
#     (.ci/matrix.sh; MATRIX_ENVS="lock debian12" runs some of them; at nice 19, so that other
#     work on the machine goes first)
#   test-wheel: the built wheel alone, in a fresh venv outside the checkout: every offline
#     figure, and nbval on every notebook
#   test-binder: repo2docker's locked base environment + environment.yml + postBuild, then
#     pip check, and JupyterLab in Chromium running notebook 01 of both editions
MATRIX_ENVS ?=
test-matrix:
	nice -n 19 .ci/matrix.sh $(MATRIX_ENVS)

test-wheel: $(TEST_STAMP)
	$(PYTEST_ONE) -m install tests/test_wheel_install.py

test-binder: $(TEST_STAMP)
	$(PYTEST_ONE) -m install tests/test_binder.py
