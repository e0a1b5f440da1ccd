# gaudi-tui — `make help` lists the targets.
PYTHON3 ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help install system run demo test typecheck lint format screenshots bench demo-model clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  make %-12s %s\n",$$1,$$2}'

$(STAMP): pyproject.toml scripts/install.sh
	bash scripts/install.sh "$(PYTHON3)" "$(VENV)"
	@touch $@

install: $(STAMP) ## create .venv and install gaudi-tui (keeps an existing torch)

run: $(STAMP) ## open the panel (demo model, no network needed)
	$(VENV)/bin/gaudi-tui

demo: $(STAMP) ## open the panel on a recorded 8-card Gaudi 2 host (real hl-smi recordings, no card needed)
	$(VENV)/bin/gaudi-tui --replay gaudi2

# Checks `make test` runs before the suite; append a target name here to add one.
TEST_CHECKS := lint typecheck

test: $(STAMP) system $(TEST_CHECKS) ## install what tests need, lint, type-check, then the whole suite (unit, Pilot, snapshots, end-to-end)
	$(PY) -m compileall -q -j 0 gaudi_tui tests >/dev/null  # the suite's hundreds of child processes start from these
	$(PY) -m pytest -q -rs --durations=20 -p no:cacheprovider -n 3 --dist loadgroup

system: ## install tmux, prometheus, Slurm and munge for the tests where possible (root or password-less sudo)
	@bash scripts/install-system.sh

typecheck: $(STAMP) ## mypy over gaudi_tui/ (settings in pyproject.toml [tool.mypy])
	$(PY) -m mypy

lint: $(STAMP) ## ruff check and format check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP) ## ruff format and fix
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

screenshots: $(STAMP) ## write the README's SVG screenshots into screenshots/
	$(PY) scripts/screenshots.py

# Every bench runs even when one could not measure (the list is named at the end, and make fails).
bench: $(STAMP) ## run every benchmark under bench/ (each prints its figures, ratios, load average and run time)
	@failed=""; all=$$(date +%s); \
	for script in bench/*.py; do \
		echo "== $$script"; began=$$(date +%s); \
		$(PY) $$script || failed="$$failed $$script"; \
		echo "== $$script took $$(( $$(date +%s) - began )) s"; \
	done; \
	echo "== make bench took $$(( $$(date +%s) - all )) s"; \
	if [ -n "$$failed" ]; then echo "could not measure:$$failed"; exit 1; fi

demo-model: $(STAMP) ## retrain the embedded demo model from the shipped corpus
	$(PY) -m gaudi_tui.core.demo.build

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
