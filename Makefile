# Course workbook tasks. Every target sets up .venv first, so a fresh clone needs only `make lab` or `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ASSIGNMENT := transformer
export MPLBACKEND := Agg

.PHONY: lab test release fixtures assets bench collect grade clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) tools/timed.py "set-up: .venv with the pinned dependencies" -- sh -c '\
		$(PYTHON) -m venv $(VENV) && \
		$(BIN)/python -m pip install --quiet --upgrade pip && \
		$(BIN)/python -m pip install --quiet -r requirements.txt && \
		$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .'
	touch $(STAMP)

lab: $(STAMP)  ## open JupyterLab on the student notebooks
	MPLBACKEND= $(BIN)/jupyter lab notebooks/

test: $(STAMP)  ## all tests: unit tests, checkers, release, notebooks (reference executed end to end)
	$(BIN)/python tools/timed.py "unit tests and checkers" -- $(BIN)/pytest -q tests
	$(BIN)/python tools/timed.py "reference notebook (nbval)" -- \
		$(BIN)/pytest -q --nbval-lax -p no:cacheprovider solutions/$(ASSIGNMENT)/$(ASSIGNMENT).ipynb

release: $(STAMP)  ## regenerate the student notebook from the reference (nbgrader generate_assignment)
	$(BIN)/nbgrader generate_assignment $(ASSIGNMENT) --no-db --force --log-level=WARN

fixtures: $(STAMP)  ## recompute the checkers' expected values from the reference notebook
	$(BIN)/python tools/make_fixtures.py

assets: $(STAMP)  ## re-render the README's figures into assets/
	$(BIN)/python -m tools.make_assets

bench: $(STAMP)  ## measured performance: layers vs torch-native, time to 95%, attention scaling (results/)
	$(BIN)/python -m tools.bench

collect: $(STAMP)  ## unpack an LMS download: make collect ZIP=path/to/submissions.zip
	$(BIN)/python -m grading.collect "$(ZIP)"

grade: $(STAMP)  ## autograde everything under submitted/ in bubblewrap (JOBS=N at once; SANDBOX=none: unisolated)
	$(BIN)/python -m grading.grade --jobs "$(or $(JOBS),1)" --sandbox "$(or $(SANDBOX),auto)"

clean:
	rm -rf $(VENV) build *.egg-info gradebook.db
