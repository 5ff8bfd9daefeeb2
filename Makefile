# Course workbook tasks. Every target sets up .venv first, so a fresh clone needs only `make lab` or `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
COMPILED := $(VENV)/.compiled
# ASSIGNMENT=name does one assignment of course.toml; empty: every registered assignment, in release order.
ASSIGNMENT ?=
# In a recipe: `$(EACH_ASSIGNMENT) command $$name || exit 1; done` (a registry that does not load stops it).
EACH_ASSIGNMENT = names="$(or $(ASSIGNMENT),$$($(BIN)/python -m course.registry names))" && for name in $$names; do
export MPLBACKEND := Agg

.PHONY: lab test test-all test-slurm test-hub release student-dist fixtures assets bench collect grade grade-slurm grade-k8s hub-release hub-collect hub-feedback report \
	similarity clean

# pip compiles every installed module to bytecode on one core (22 of the install's 35 s, docs/bench.md): it installs
# without. What the grading sandbox imports must be compiled before it runs (its site-packages are read-only, so it
# could not cache them): $(COMPILED), which compileall makes on every core, skipping the packages' own test suites,
# before `make test-all` and the grading targets. `make test` needs no sandbox: its processes compile what they import
# and cache it. compileall fails on a file of torch's written for Python 3.12 (pip ignores that too), hence `|| true`.
$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) tools/timed.py "set-up: .venv with the pinned dependencies" -- sh -c '\
		$(PYTHON) -m venv $(VENV) && \
		$(BIN)/python -m pip install --quiet --upgrade pip && \
		$(BIN)/python -m pip install --quiet --no-compile -r requirements.txt && \
		$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .'
	touch $(STAMP)

$(COMPILED): $(STAMP)
	$(PYTHON) tools/timed.py "set-up: the packages compiled to bytecode, for the grading sandbox" -- sh -c '\
		{ $(BIN)/python -m compileall -qq -j 0 -x "/tests/" \
			"$$($(BIN)/python -c "import sysconfig; print(sysconfig.get_path(\"purelib\"))")" || true; }'
	touch $(COMPILED)

lab: $(STAMP)  ## open JupyterLab on the student notebooks
	MPLBACKEND= $(BIN)/jupyter lab notebooks/

# The tests come in two tiers (docs/maintainers.md, "Running the tests"), by marker: `make test`, the fast one (-m fast),
# after every change; `make test-all`, every test, before stopping and in CI (.ci/run). Both collect the same paths.
# WORKERS=N runs the tests in N processes (pytest-xdist); each test file stays on one, with its fixtures.
# Every process they start (workers, notebook kernels, graders) runs torch on one thread: with N workers on N cores,
# torch's default of one thread per core oversubscribes them, and its OpenMP threads then spin instead of working
# (measured: 3.5 times the CPU time for one test file beside two busy processes, docs/bench.md).
WORKERS ?= 2
TEST_THREADS ?= 1
# PYTHONDONTWRITEBYTECODE is left out: with it every worker, kernel and subprocess compiles the project and the tests
# (pytest rewrites their asserts) anew, about 3 s of each process's start (docs/bench.md).
PYTEST = env -u PYTHONDONTWRITEBYTECODE OMP_NUM_THREADS=$(TEST_THREADS) MKL_NUM_THREADS=$(TEST_THREADS) \
	$(BIN)/python tools/timed.py
# ASSIGNMENT=name: that assignment's own tests (course/<name>/) and notebook, without the course-wide tests/.
TEST_PATHS = -n $(WORKERS) --dist loadfile --no-loadscope-reorder $(or $(addprefix course/,$(ASSIGNMENT)),tests course) \
	--nbval-lax $$(for name in $$names; do echo solutions/$$name/$$name.ipynb; done)
test: $(STAMP)  ## the fast tier: lint, unit tests, every check both ways, agreement, notebooks' text, release, docs
	$(BIN)/python tools/timed.py "lint (ruff)" -- $(BIN)/ruff check .
	names="$(or $(ASSIGNMENT),$$($(BIN)/python -m course.registry names))" && \
	$(PYTEST) "the fast tier (pytest -m fast), $(WORKERS) workers" -- $(BIN)/pytest -q -m fast $(TEST_PATHS)

test-all: $(COMPILED)  ## every test: the fast tier, end-to-end grading and red team, nbval, real trainings, Slurm, Chromium
	$(BIN)/python tools/timed.py "lint (ruff)" -- $(BIN)/ruff check .
	names="$(or $(ASSIGNMENT),$$($(BIN)/python -m course.registry names))" && \
	$(PYTEST) "every test: both tiers, reference notebooks (nbval), $(WORKERS) workers" -- \
		$(BIN)/pytest -q $(TEST_PATHS)

# make test-slurm: only the test that grades through a single-node Slurm it starts (tests/test_slurm.py, marker cluster;
# root and Slurm's Debian packages, or skipped saying why); make test-all runs it too.
test-slurm: $(COMPILED)  ## grading through a real Slurm cluster, end to end (root; Debian's slurmctld, slurmd, munge)
	$(BIN)/python tools/timed.py "Slurm, end to end" -- $(BIN)/pytest -q -m cluster tests/test_slurm.py

# make test-hub: only the test that runs the course on a JupyterHub it starts (tests/test_hub.py, marker hub; root,
# Debian's chromium and bubblewrap, npm's configurable-http-proxy, or skipped saying why); make test-all runs it too.
test-hub: $(COMPILED)  ## the course on a real JupyterHub through nbgrader's exchange, end to end (root)
	$(BIN)/python tools/timed.py "JupyterHub, end to end" -- $(BIN)/pytest -q -m hub tests/test_hub.py

release: $(STAMP)  ## regenerate the student notebooks from the references (nbgrader generate_assignment)
	$(EACH_ASSIGNMENT) \
		$(BIN)/nbgrader generate_assignment $$name --no-db --force --log-level=WARN || exit 1; \
	done

student-dist: release  ## what students receive, checked for leaks: make student-dist [DEST=build/student] [THROUGH=name]
	$(BIN)/python -m tools.student_dist --dest "$(or $(DEST),build/student)" $(if $(THROUGH),--through "$(THROUGH)")

fixtures: $(STAMP)  ## recompute the checkers' expected values from the reference notebooks
	$(EACH_ASSIGNMENT) $(BIN)/python tools/make_fixtures.py --assignment $$name || exit 1; done

assets: $(STAMP)  ## re-render the figures of docs/students.md into assets/
	$(BIN)/python -m tools.make_assets

bench: $(STAMP)  ## measured performance of each assignment: layers vs torch-native, time to target (results/<name>/)
	$(EACH_ASSIGNMENT) $(BIN)/python -m tools.bench --assignment $$name || exit 1; done

collect: $(STAMP)  ## unpack one assignment's LMS download: make collect ZIP=path/to/submissions.zip [ASSIGNMENT=name]
	$(BIN)/python -m grading.collect "$(ZIP)" $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)")

# make grade: STUDENT=id regrades that one submission (the others' results stay); JOBS=N grades N at once;
# SANDBOX=none runs student code unisolated; EXPORTS=canvas,moodle (default) names the LMS layouts in exports/.
EXPORTS ?= canvas,moodle
grade: $(COMPILED)  ## autograde submitted/ in bubblewrap: every assignment with submissions (ASSIGNMENT=, STUDENT=, JOBS=, EXPORTS=)
	$(BIN)/python -m grading.grade $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)") --jobs "$(or $(JOBS),1)" \
		--sandbox "$(or $(SANDBOX),auto)" --exports "$(EXPORTS)" $(if $(STUDENT),--student "$(STUDENT)")

# make grade-slurm SHARDS=N: grade as a Slurm job array of N shards and a merge job after it (docs/instructors.md);
# the course folder must be on a file system every node mounts. ASSIGNMENT= one assignment (default: every one).
grade-slurm: $(COMPILED)  ## grade in a Slurm job array: make grade-slurm SHARDS=N [ASSIGNMENT=] [PARTITION=] [JOBS=]
	$(BIN)/python -m grading.cluster.slurm --shards "$(SHARDS)" $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)") \
		$(if $(PARTITION),--partition "$(PARTITION)") --jobs "$(or $(JOBS),1)" --sandbox "$(or $(SANDBOX),auto)"

# make grade-k8s SHARDS=N IMAGE=…: write a Kubernetes Indexed Job of N shards, a merge Job and submit.sh, which
# applies them in turn (docs/instructors.md); the course folder is the claim CLAIM, mounted at /course in every pod.
grade-k8s: $(COMPILED)  ## write Kubernetes Jobs: make grade-k8s SHARDS=N IMAGE=… [ASSIGNMENT=] [CLAIM=] [JOBS=] [RERUN=I]
	$(BIN)/python -m grading.cluster.k8s --shards "$(SHARDS)" --image "$(IMAGE)" \
		$(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)") $(if $(CLAIM),--claim "$(CLAIM)") \
		$(if $(RERUN),--rerun "$(RERUN)") --jobs "$(or $(JOBS),1)" --sandbox "$(or $(SANDBOX),auto)"

# On a JupyterHub (docs/instructors.md, "On a JupyterHub"): nbgrader's exchange, EXCHANGE=/srv/nbgrader/exchange unless
# given. hub-release puts notebooks/<a>/ in the students' Assignment Lists; after the deadline hub-collect fills
# submitted/ (then make grade), and hub-feedback hands each student their own feedback page.
EXCHANGE ?= /srv/nbgrader/exchange
hub-release hub-collect hub-feedback: $(STAMP)  ## nbgrader's exchange on a hub: make hub-release|hub-collect|hub-feedback ASSIGNMENT=name
	$(BIN)/python -m grading.exchange $(patsubst hub-%,%,$@) --assignment "$(ASSIGNMENT)" --exchange "$(EXCHANGE)"

# make report ASSIGNMENT=A: what the class got wrong, from the last grading's record (reports/<a>/graded.json):
# reports/<a>/class_report.html (one file, opens offline) and diagnoses.csv (student data: git-ignored).
report: $(STAMP)  ## the class report: scores, pass rates, named mistakes, tasks failed together: make report ASSIGNMENT=name
	$(BIN)/python -m grading.classreport $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)")

# make similarity ASSIGNMENT=A: rank the pairs of students whose answer cells look alike (copydetect), the release's
# own code left out: reports/<a>/similarity.html and similarity.csv (student data: git-ignored).
similarity: $(STAMP)  ## pairs of students whose answers look alike: make similarity ASSIGNMENT=name
	$(BIN)/python -m grading.similarity $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)")

clean:
	rm -rf $(VENV) build *.egg-info gradebook.db
