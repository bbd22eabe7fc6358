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
# `make test` and `make test-all`: their stages, one pytest run each, are in .ci/test_stages.py.
# WORKERS: pytest-xdist workers per stage (WORKERS=1: one process). RUN: the folder for the run's
# JUnit files and figure logs (default artifacts/test-run; a new folder under $TMPDIR where the
# checkout is read-only).
WORKERS ?= 2
RUN ?=
STAGES = $(BIN)/python .ci/test_stages.py --workers $(WORKERS)$(if $(RUN), --run "$(RUN)")
PYTEST_ONE := $(BIN)/python -m pytest -rs

.PHONY: setup setup-test lab lab-zh stop my-copy refresh-copy test test-all test-matrix test-wheel test-binder

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

# JupyterLab's defaults for this venv (a learner's own settings still win): it does not ask at
# the first start whether to fetch Jupyter's news, and fetches neither news nor update checks
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
$(LAB_OVERRIDES):
	@mkdir -p $(dir $@)
	@printf '%s\n' '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' > $@

# Opens your copy of notebook 01 (made first if missing, see my-copy). Stop it with Ctrl-C in
# this terminal (twice, or once and answer y), or `make stop` from another.
lab: $(STAMP) my-copy $(LAB_OVERRIDES)
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

# What a learner or an instructor runs to know the course holds on this machine: the unit tests
# that need no browser, no sandbox and no planted bug, then nbval on every notebook, both editions.
test: $(TEST_STAMP)
	@$(STAGES) test

# Everything: make test's stages, then the figure-bearing unit tests and the English notebooks on
# torch's scalar CPU kernels, the browser tests (the website's among them: site-setup installs its
# builder), the grader's sandbox tests, the planted-bug suites.
test-all: $(TEST_STAMP) site-setup
	@$(STAGES) test-all

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

# The course as a website (docs/site.md): both editions, every chapter and its solutions, from
# the notebooks' stored outputs; nothing runs and nothing is fetched at build or view time.
#   site-setup: Sphinx, myst-nb and sphinx-book-theme into .venv (the `site` extra), and MathJax
#     from npm (docs/site/package-lock.json) into artifacts/site-vendor/
#   site: builds artifacts/site/ (open artifacts/site/index.html)
#   test-site: builds it again in a temporary folder and reads every page in Chromium
SITE_STAMP := $(VENV)/.installed-site
SITE_VENDOR := artifacts/site-vendor
.PHONY: site-setup site test-site
$(SITE_STAMP): $(STAMP) docs/site/package.json docs/site/package-lock.json
	$(PIP_INSTALL) -e ".[site]"
	mkdir -p $(SITE_VENDOR) && cp docs/site/package.json docs/site/package-lock.json $(SITE_VENDOR)/
	cd $(SITE_VENDOR) && npm ci --no-audit --no-fund
	touch $(SITE_STAMP)

site-setup: $(SITE_STAMP)

site: $(SITE_STAMP)
	$(BIN)/python docs/site/build_site.py

test-site: $(SITE_STAMP) $(TEST_STAMP)
	$(PYTEST_ONE) tests/test_browser_site.py
