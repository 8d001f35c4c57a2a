# Two entry points (see README "Quick start"): `make lab` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: lab test setup lint regenerate slides site benchmark clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

setup: $(STAMP)

## Set up (first time only) and open the course in JupyterLab.
lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

## Set up (first time only) and run every test: unit tests + strict nbval over every notebook + ruff.
test: $(STAMP)
	$(BIN)/ruff check .
	COURSE_NUM_THREADS=1 $(BIN)/python -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --durations=15 tests notebooks

lint: $(STAMP)
	$(BIN)/ruff check .

## Re-execute every notebook top to bottom in a fresh kernel and store its outputs.
regenerate: $(STAMP)
	$(BIN)/python scripts/regenerate_notebooks.py notebooks/*.ipynb

## Build reveal.js slides for every notebook into build/slides/.
slides: $(STAMP)
	$(BIN)/python scripts/build_slides.py notebooks/*.ipynb

## Build the course website into build/site/ from the committed notebooks (no execution, no network).
site: $(STAMP)
	$(BIN)/python scripts/build_site.py

benchmark: $(STAMP)
	$(BIN)/python benchmarks/throughput.py

clean:
	rm -rf build .pytest_cache .ruff_cache
