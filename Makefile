# The two set-up commands: `make demo` and `make test`. Each creates .venv
# and installs what it needs on a fresh machine with Python 3.11 and pip.
PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed
# The oldest supported TensorFlow and Keras (constraints-oldest.txt).
OLDEST_VENV := .venv-oldest
OLDEST_STAMP := $(OLDEST_VENV)/.installed
# The documentation site's tools alone (requirements-docs.txt).
DOCS_VENV := .venv-docs
DOCS_STAMP := $(DOCS_VENV)/.installed
# Keras on JAX, and on PyTorch, without TensorFlow (requirements-jax.txt,
# requirements-torch.txt).
JAX_VENV := .venv-jax
TORCH_VENV := .venv-torch
# What `make test-jax` and `make test-torch` run: the tests written for
# every Keras backend (tests/every_backend.py), the callbacks, the
# in-memory datasets, examples/train.py, the CapsNet and matrix-capsule
# scripts and the GPU session's jobs at their tiny size (on JAX). Left out: the TensorFlow fast paths'
# dispatch (tests/ops/test_fast_paths.py), the generative decoder
# (TensorFlow Probability) and the XLA gradient checks of tf.function.
EVERY_BACKEND_TESTS := \
	$(filter-out tests/ops/test_fast_paths.py,$(wildcard tests/ops/test_*.py)) \
	tests/losses tests/metrics \
	$(filter-out tests/layers/test_generative_capsule_decoder.py \
		tests/layers/test_xla_gradients.py,$(wildcard tests/layers/test_*.py)) \
	tests/models/test_capsnet.py tests/models/test_capsule_classifier.py \
	tests/models/test_heinsen.py tests/models/test_matrix_capsnet.py \
	tests/models/test_paper_backbones.py tests/models/test_efficient_capsnet.py \
	tests/test_conformance.py tests/test_imports.py \
	tests/callbacks \
	tests/datasets/test_array_epochs.py tests/datasets/test_array_shifts.py \
	tests/datasets/test_image_arrays.py \
	tests/examples/test_train_every_backend.py \
	tests/examples/test_paper_scripts_every_backend.py \
	tests/examples/test_gpu_session.py tests/bench/test_bare_step_bench.py
# What `make test-oldest` runs: every op, layer and bad-input test, the
# TensorFlow fast paths, the conformance checks (.keras, SavedModel, XLA,
# mixed precision), the training step that replaces Keras's training
# function (batch parts) and the workarounds on private APIs.
SMOKE_TESTS := tests/ops tests/backend tests/layers tests/bad_inputs \
	tests/test_conformance.py \
	tests/recipes/test_batch_parts.py tests/test_private_apis.py
export TFDS_DATA_DIR ?= $(abspath ../shared/tfds)
export TF_CPP_MIN_LOG_LEVEL ?= 2
# The suite runs in one pytest worker per core (-n 2 on CI's 2 cores):
# one TensorFlow thread per worker, not one per core in each (20% less
# wall time for the same tests on 2 cores). A worker that runs out of
# tests takes some of the other's (worksteal), so that both end together.
TEST_THREADS := TF_NUM_INTRAOP_THREADS=1
WORKERS := -n 2 --dist worksteal

.PHONY: demo test test-oldest test-jax test-torch test-across-backends test-all docs lint bench bench-backends clean

$(STAMP): requirements.txt requirements-dev.txt setup.py
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
	$(VENV)/bin/pip install --quiet --no-deps -e .
	touch $(STAMP)

$(OLDEST_STAMP): requirements.txt requirements-dev.txt constraints-oldest.txt setup.py
	$(PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/pip install --quiet --upgrade pip
	$(OLDEST_VENV)/bin/pip install --quiet -r requirements-dev.txt \
		-c constraints-oldest.txt
	$(OLDEST_VENV)/bin/pip install --quiet --no-deps -e .
	touch $(OLDEST_STAMP)

$(DOCS_STAMP): requirements-docs.txt
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/pip install --quiet --upgrade pip
	$(DOCS_VENV)/bin/pip install --quiet -r requirements-docs.txt
	touch $(DOCS_STAMP)

# The environment of one backend without TensorFlow: its requirements, and
# this package without its own (which name TensorFlow).
$(JAX_VENV)/.installed $(TORCH_VENV)/.installed: %/.installed: setup.py
	$(PYTHON) -m venv $*
	$*/bin/pip install --quiet --upgrade pip
	$*/bin/pip install --quiet -r requirements$(subst .venv,,$*).txt
	$*/bin/pip install --quiet --no-deps -e .
	touch $@

$(JAX_VENV)/.installed: requirements-jax.txt
$(TORCH_VENV)/.installed: requirements-torch.txt

demo: $(STAMP)
	$(VENV)/bin/python -m examples.quiet_start examples.demo --model_dir=demo_output

test: $(STAMP)
	$(TEST_THREADS) $(VENV)/bin/python -m pytest $(WORKERS) -q tests

test-oldest: $(OLDEST_STAMP)
	$(TEST_THREADS) $(OLDEST_VENV)/bin/python -m pytest $(WORKERS) -q $(SMOKE_TESTS)

# JAX keeps what it compiles in .jax-cache, so that both workers (and
# the next run) reuse it: JAX compiles every op it runs eagerly.
test-jax: $(JAX_VENV)/.installed
	KERAS_BACKEND=jax JAX_COMPILATION_CACHE_DIR=$(abspath .jax-cache) \
		JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 \
		JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0 \
		$(JAX_VENV)/bin/python -m pytest $(WORKERS) -q $(EVERY_BACKEND_TESTS)

test-torch: $(TORCH_VENV)/.installed
	KERAS_BACKEND=torch $(TORCH_VENV)/bin/python -m pytest $(WORKERS) -q \
		$(EVERY_BACKEND_TESTS)

# A .keras file saved on each backend, loaded and run on each other one.
test-across-backends: $(STAMP) $(JAX_VENV)/.installed $(TORCH_VENV)/.installed
	KERAS_CAPSULES_BACKEND_PYTHONS="tensorflow=$(abspath $(VENV))/bin/python \
		jax=$(abspath $(JAX_VENV))/bin/python \
		torch=$(abspath $(TORCH_VENV))/bin/python" \
		JAX_COMPILATION_CACHE_DIR=$(abspath .jax-cache) \
		$(VENV)/bin/python -m pytest -q tests/across_backends

test-all: $(STAMP)
	$(TEST_THREADS) $(VENV)/bin/python -m pytest $(WORKERS) -q -m "slow or not slow" tests

# The documentation site in site/; --strict: a broken link, reference or
# docstring fails the build.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict --site-dir site

lint: $(STAMP)
	$(VENV)/bin/ruff check keras_capsules tests examples bench research
	$(VENV)/bin/ruff format --check keras_capsules tests examples bench research

# Every routing layer's training step on TensorFlow, JAX and PyTorch.
bench-backends: $(STAMP) $(JAX_VENV)/.installed $(TORCH_VENV)/.installed
	$(VENV)/bin/python -m bench.backends \
		--pythons=tensorflow=$(VENV)/bin/python,jax=$(JAX_VENV)/bin/python,torch=$(TORCH_VENV)/bin/python

bench: $(STAMP)
	$(VENV)/bin/python -m bench.capsule_regression
	$(VENV)/bin/python -m bench.interpolating_coefficient
	$(VENV)/bin/python -m bench.dynamic_routing
	$(VENV)/bin/python -m bench.heinsen_routing
	$(VENV)/bin/python -m bench.em_routing
	$(VENV)/bin/python -m bench.generative_capsules

clean:
	rm -rf $(VENV) $(OLDEST_VENV) $(DOCS_VENV) $(JAX_VENV) $(TORCH_VENV) .jax-cache demo_output site
