# Two entry points (see README "Quick start"): `make lab` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIGURED := $(VENV)/.configured

.PHONY: lab test test-gpu setup lint regenerate slides site student-edition instructor-pack collect grade present benchmark clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# JupyterLab settings of the course environment (inside .venv only). A separate step that depends on this
# Makefile, so an existing .venv gets new settings on the next `make lab` without reinstalling anything.
$(CONFIGURED): $(STAMP) Makefile
	@# nbgrader is for `make student-edition` and `make grade` only: keep its menus out of the students' JupyterLab
	$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null
	$(BIN)/jupyter server extension disable --sys-prefix nbgrader.server_extensions.formgrader \
		nbgrader.server_extensions.assignment_list nbgrader.server_extensions.course_list \
		nbgrader.server_extensions.validate_assignment >/dev/null
	@# No "Would you like to get notified about official Jupyter news?" pop-up over the first notebook, and no
	@# news or update look-ups on the internet: switch off JupyterLab's announcements plugin
	$(BIN)/jupyter labextension disable --level=sys_prefix @jupyterlab/apputils-extension:announcements >/dev/null
	touch $(CONFIGURED)

setup: $(CONFIGURED)

## Set up (first time only) and open the course in JupyterLab.
lab: $(CONFIGURED)
	$(BIN)/jupyter lab notebooks/

## Set up (first time only) and run every test: unit tests + strict nbval over every notebook + ruff.
test: $(CONFIGURED)
	$(BIN)/ruff check .
	COURSE_NUM_THREADS=1 $(BIN)/python -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --durations=15 tests notebooks

lint: $(CONFIGURED)
	$(BIN)/ruff check .

## Re-execute every notebook top to bottom in a fresh kernel and store its outputs.
regenerate: $(CONFIGURED)
	$(BIN)/python -m scripts.regenerate_notebooks notebooks/*.ipynb

## Build reveal.js slides for every notebook into build/slides/ (work offline: reveal.js and MathJax are copied there),
## re-cut so that every slide fits a 1920 x 1080 or 1280 x 720 screen (scripts/build_slides.py).
slides: $(CONFIGURED)
	$(BIN)/python -m scripts.build_slides notebooks/*.ipynb

## Build the course website into build/site/ from the committed notebooks (no execution, no network).
site: $(CONFIGURED)
	$(BIN)/python -m scripts.build_site

## Student edition of every notebook into build/student_edition/: solutions removed, exercises graded by hidden tests.
student-edition: $(CONFIGURED)
	$(BIN)/python -m scripts.student_edition notebooks/*.ipynb

## The instructor's pack into build/instructor/: a six-week course plan and the answer key (never hand it out).
instructor-pack: $(CONFIGURED)
	$(BIN)/python -m scripts.instructor_pack

## Sort handed-in notebooks (a .zip export or a folder) into submissions/<student>/ with a manifest.csv:
## make collect FROM=export.zip [ROSTER=roster.csv] [FORMAT=moodle|canvas|folders] [PATTERN='regex']
ROSTER ?=
FORMAT ?= auto
PATTERN ?=
collect: $(CONFIGURED)
	@test -n "$(FROM)" || { echo "usage: make collect FROM=export.zip [ROSTER=roster.csv] [FORMAT=auto]"; exit 2; }
	$(BIN)/python -m scripts.collect "$(FROM)" --format "$(FORMAT)" $(if $(ROSTER),--roster "$(ROSTER)",) \
		$(if $(PATTERN),--pattern '$(PATTERN)',)

## Grade submitted notebooks in sandboxes, only new or changed ones unless STUDENTS is given:
## make grade SUBMISSIONS=submissions [JOBS=2] [STUDENTS="alice bob"] -> build/grading/ (gradebook kept)
JOBS ?= 2
STUDENTS ?=
GRADE_FLAGS ?=
grade: $(CONFIGURED)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=folder [JOBS=2] [STUDENTS=\"a b\"]"; exit 2; }
	$(BIN)/python -m scripts.grade "$(SUBMISSIONS)" -j $(JOBS) $(if $(STUDENTS),--students $(STUDENTS),) $(GRADE_FLAGS)

## Present a notebook live with running code (RISE): make present NB=notebooks/04_attention.ipynb
## Extra server options: make present PRESENT_FLAGS="--no-browser --port 8890". As root (a container or a
## cloud VM) the server refuses to start unless allowed to: that flag is added automatically.
## Lecture-hall set-up: RISE's settings (scripts/slides_template/rise/overrides.json: white theme, the slide
## fills the window, a slide taller than the screen scrolls) go into the JupyterLab settings of .venv (a file of
## their own in overrides.d/, which JupyterLab reads too); notebooks/rise.css, which RISE loads next to the
## notebook, makes text and code 28.8 px on a 1920 x 1080 screen.
NB ?= notebooks/00_welcome.ipynb
PRESENT_FLAGS ?=
ROOT_FLAG := $(if $(filter 0,$(shell id -u 2>/dev/null)),--ServerApp.allow_root=True,)
RISE_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.d/course-rise.json
$(RISE_SETTINGS): scripts/slides_template/rise/overrides.json | $(STAMP)
	mkdir -p $(dir $@)
	cp scripts/slides_template/rise/overrides.json $@
present: $(CONFIGURED) $(RISE_SETTINGS)
	$(BIN)/python -m jupyterlab_rise "$(NB)" $(ROOT_FLAG) $(PRESENT_FLAGS)

benchmark: $(CONFIGURED)
	$(BIN)/python -m benchmarks.throughput

## On a machine with a CUDA GPU: the unit tests and every notebook executed on the GPU (scripts/test_gpu.py);
## writes benchmarks/results/gpu_tests.json and README's GPU column. Stops, saying so, when there is no GPU.
test-gpu: $(CONFIGURED)
	$(BIN)/python -m scripts.test_gpu

clean:
	rm -rf build .pytest_cache .ruff_cache
