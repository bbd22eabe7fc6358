# The course's two commands (README): `make lab` opens it, `make test` checks it.
# Both create .venv with Python ≥ 3.11 and install course_lib and its pinned dependencies
# the first time (and again whenever pyproject.toml or .ci/constraints.txt changes); every
# other package is held at the version in .ci/constraints.txt.

PYTHON ?= python3
# Optional: a pip index that serves CPU-only torch wheels, for a smaller download on Linux
# (see README). Empty: pip's usual configuration.
TORCH_INDEX ?=
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with .ci/nbval_sanitize.cfg

.PHONY: setup lab test

$(STAMP): pyproject.toml .ci/constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "the course needs Python 3.11 or newer (its pinned numpy, matplotlib and ipykernel do)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) -c .ci/constraints.txt -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) --ServerApp.root_dir="$(CURDIR)" \
		--LabApp.default_url=/lab/tree/notebooks/01_tokenizer.ipynb

test: $(STAMP)
	@# warm matplotlib's font cache so its first-run message cannot reach a notebook's output
	$(BIN)/python -c "import matplotlib.font_manager"
	@# unit tests, then every notebook under nbval; both always run, either failing fails.
	@# The stored notebook outputs were made without pretrained GPT-2: nbval runs with any
	@# local copy hidden (the unit tests above do see it).
	status=0; \
	$(BIN)/python -m pytest tests || status=1; \
	env -u COURSE_GPT2_WEIGHTS HF_HUB_CACHE="$$(mktemp -d)" $(BIN)/python -m pytest $(NBVAL) notebooks || status=1; \
	exit $$status
