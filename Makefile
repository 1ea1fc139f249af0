# The two set-up commands: `make demo` and `make test`. Each creates .venv
# and installs what it needs on a fresh machine with Python 3.11 and pip.
PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed
export TFDS_DATA_DIR ?= $(abspath ../shared/tfds)
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test test-all lint bench clean

$(STAMP): requirements.txt requirements-dev.txt setup.py
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
	$(VENV)/bin/pip install --quiet --no-deps -e .
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python -m examples.quiet_start examples.demo --model_dir=demo_output

test: $(STAMP)
	$(VENV)/bin/python -m pytest -n 2 -q tests

test-all: $(STAMP)
	$(VENV)/bin/python -m pytest -n 2 -q -m "slow or not slow" tests

lint: $(STAMP)
	$(VENV)/bin/ruff check keras_capsules tests examples bench
	$(VENV)/bin/ruff format --check keras_capsules tests examples bench

bench: $(STAMP)
	$(VENV)/bin/python -m bench.capsule_regression
	$(VENV)/bin/python -m bench.interpolating_coefficient
	$(VENV)/bin/python -m bench.dynamic_routing
	$(VENV)/bin/python -m bench.heinsen_routing
	$(VENV)/bin/python -m bench.em_routing
	$(VENV)/bin/python -m bench.generative_capsules

clean:
	rm -rf $(VENV) demo_output
