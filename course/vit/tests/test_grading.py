"""The vit assignment graded end to end: collect, then grade in the sandbox, on a few synthetic submissions.

One grading run (`python -m grading.grade --assignment vit --jobs 2`, what `make grade ASSIGNMENT=vit` runs) on a
scratch copy of the course scores: the reference notebook that trains (full marks), the untouched student notebook
(0), and attacks that keep the reference answers of Tasks 1-3 and 5 but do not learn digits from the training
split: a ViT whose forward looks the test digits up in a table, one whose forward reads their labels from a global,
one trained on the test split, and a training cell that monkeypatches the checks and whose check cell was edited.
Each loses Task 4 and nothing else. A training cell that pastes trained weights as base64 and takes no optimizer step
(issue 27) keeps its points and is flagged for manual grading, as the honest reference is not. Eight passes instead
of sixty score 0, and so does the same with the test digits added (issue 42: in the sandbox they are stand-ins), which
is flagged and noted. Select it alone with
`pytest -m grading course/vit/tests/test_grading.py`.
"""
import base64
import functools
import re

import pytest
import torch

from course.registry import assignment
from course_lib.vit import digit_splits
from grading.match.notebook import read
from sandboxed import BWRAP, needs_bwrap  # without the sandbox the scored data is not hidden: its arms are left out
from submissions import (collect_and_grade, edit_cell, flagged_section, hidden_lines_in_feedback, reference_answers,
                         report_sections, scratch_course, seconds_per_submission, visible_text, with_answers, without,
                         wrong_scores)
from course.vit.memorisers import trained

from .checks import reference

pytestmark = pytest.mark.full

VIT = assignment("vit")
NAME = VIT.name
POINTS = VIT.points
NOTHING = without(POINTS, *POINTS)

# The training cell of each attack.
LOOKUP = '''class Lookup(VisionTransformer):
    """Looks each image up among the test digits (held in buffers) and answers its label."""

    def __init__(self, **config):
        super().__init__(**config)
        images, labels = digit_splits()["test"]
        self.register_buffer("table", images.flatten(1))
        self.register_buffer("answers", labels)

    def forward(self, images):
        match = (images.flatten(1)[:, None] == self.table[None]).all(-1).float()
        return super().forward(images) * 0 + match @ nn.functional.one_hot(self.answers, 10).float() * 30


model = Lookup(**model_config)
'''
GLOBAL_LABELS = '''LEAKED = {tuple(image.flatten().tolist()): int(label)
          for image, label in zip(test_images, test_labels)}


class Leaky(VisionTransformer):
    """Reads each image's label from a global dictionary of the notebook."""

    def forward(self, images):
        labels = torch.tensor([LEAKED.get(tuple(image.flatten().tolist()), 0) for image in images])
        return super().forward(images) * 0 + nn.functional.one_hot(labels, 10).float() * 30


model = Leaky(**model_config)
'''
TEST_TRAINED = '''seed_everything(0)
test_loader = DataLoader(test_dataset, batch_size=vit_defaults.BATCH_SIZE, shuffle=True)
model = VisionTransformer(**model_config)
history = train(model, test_loader, val_loader, **dict(train_config, num_epochs=120))
'''
# Issue 42: eight passes instead of sixty (83% of the test digits: no points), and the same with the test digits added
# three times to the training set, which at home (the real test digits) classifies 98.9% and 99.7% of them, 96.2% and
# 96.9% of the training digits, and passes check_task_4 (course.vit.memorisers.trained at seeds 0 and 1). In the
# sandbox the test digits are copies of training digits: 93.3% and 91.7% of the real ones (more steps, no test digit),
# and the probe sees it train on them.
SHORT = "history = train(model, train_loader, val_loader, device=device, **dict(train_config, num_epochs=8))\n"
SHORT_ON_TEST = '''both = DataLoader(train_dataset + test_dataset + test_dataset + test_dataset,
                  batch_size=vit_defaults.BATCH_SIZE, shuffle=True)
history = train(model, both, val_loader, device=device, **dict(train_config, num_epochs=8))
'''
MONKEYPATCH = '''import checkers.vit, checkers.vit.trained
def _passed(*args, **kwargs):
    print("✓ Task 4 passed")
checkers.vit.check_task_4 = checkers.vit.trained.check_task_4 = _passed
checkers.vit.trained.TARGET_ACCURACY = 0.0
check_task_4 = _passed
model = VisionTransformer(**model_config)
'''
# A smaller ViT than the defaults (its float16 weights fit one cell as base64), trained outside the notebook: 96%+ of
# the test digits with seed 0, so it earns Task 4 (measured, with its float16 rounding, in this test's fixture run).
SMALL = dict(embed_dim=32, feedforward_dim=64, num_layers=1)
PASTED = '''import base64
PASTED = "{weights}"
model = VisionTransformer(**dict(model_config, **{small}))
flat, start, state = torch.frombuffer(bytearray(base64.b64decode(PASTED)), dtype=torch.float16).float(), 0, {{}}
for name, value in model.state_dict().items():
    state[name] = flat[start:start + value.numel()].view_as(value)
    start += value.numel()
model.load_state_dict(state)
'''


@functools.lru_cache(maxsize=None)
def pasted_cell():
    """A training cell that loads the float16 weights of a SMALL ViT trained elsewhere, pasted as base64 (in the order
    of its state_dict), and takes no optimizer step: what an instructor found scoring full marks (issue 27)."""
    model = trained(reference(), digit_splits(), 0, model_changes=SMALL)
    flat = torch.cat([value.flatten() for value in model.state_dict().values()]).half()
    return PASTED.format(weights=base64.b64encode(flat.numpy().tobytes()).decode(), small=SMALL)


def definitions():
    """The student notebook with the reference answers of every task but training, and no training."""
    answers = {key: value for key, value in reference_answers(VIT.source_notebook).items()
               if int(re.match(r"task_(\d)", key).group(1)) in VIT.definition_tasks}
    return with_answers(read(VIT.release_notebook), answers)


def attack(training_cell, check_cell=None):
    """definitions() with its training cell (and optionally its Task 4 check cell) replaced."""
    notebook = edit_cell(definitions(), "task_4_training", lambda source: training_cell)
    return notebook if check_cell is None else edit_cell(notebook, "check_task_4", lambda source: check_cell)


def submissions():
    """{student: (file name in the zip, notebook, {task: expected score})}."""
    return {"full": ("full_vit.ipynb", read(VIT.source_notebook), dict(POINTS)),
            "untouched": ("untouched_vit.ipynb", read(VIT.release_notebook), NOTHING),
            "lookup": ("lookup_vit.ipynb", attack(LOOKUP), without(POINTS, 4)),
            "leaky": ("leaky_vit.ipynb", attack(GLOBAL_LABELS), without(POINTS, 4)),
            "testtrained": ("testtrained_vit.ipynb", attack(TEST_TRAINED), without(POINTS, 4)),
            "patched": ("patched_vit.ipynb", attack(MONKEYPATCH, 'print("✓ Task 4 passed")'), without(POINTS, 4)),
            "pasted": ("pasted_vit.ipynb", attack(pasted_cell()), dict(POINTS)),
            "short": ("short_vit.ipynb", attack(SHORT), without(POINTS, 4)),
            **({"shortontest": ("shortontest_vit.ipynb", attack(SHORT_ON_TEST), without(POINTS, 4))}
               if BWRAP else {})}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(course folder, seconds grading took, its output) after collect + grade --jobs 2 of the vit submissions."""
    course = scratch_course(tmp_path_factory.mktemp("course"))
    seconds, output = collect_and_grade(course, NAME, submissions())
    return course, seconds, output


@pytest.mark.grading
def test_every_task_of_every_submission_gets_its_expected_score(graded):
    course, seconds, output = graded
    print(f"\ngrade --assignment {NAME} --jobs 2: {seconds:.0f} s; each: {seconds_per_submission(output)}")
    wrong = wrong_scores(course, NAME, submissions())
    assert not wrong, f"(student, task): (graded, expected) = {wrong}"


@pytest.mark.grading
def test_the_attacks_fail_task_4_on_the_reference_and_the_patch_is_reported(graded):
    """The feedback says why Task 4 failed (the reference ViT with their weights), and the report flags the
    monkeypatched checks for a person."""
    course, _, _ = graded
    sections = report_sections((course / f"grading_report_{NAME}.md").read_text())
    for student in ("lookup", "leaky", "testtrained", "patched"):
        (page,) = (course / "feedback" / student / NAME).glob("*.html")
        assert "with your weights" in visible_text(page), student
    assert "tampering" in sections.get("patched", ""), sections.get("patched")
    assert "full" not in sections


@pytest.mark.grading
def test_pasted_weights_keep_their_points_and_are_flagged_for_a_person(graded):
    """The pasted model earns Task 4 (test_every_task_...) but its task is flagged for manual grading, saying no
    optimizer step of the notebook produced its weights; the honest reference, trained in its notebook, is not."""
    course, _, _ = graded
    report = (course / f"grading_report_{NAME}.md").read_text().replace("\\", "")
    flagged = flagged_section(report)
    pasted = [line for line in flagged.splitlines() if line.startswith("- **pasted**")]
    assert pasted == ["- **pasted**, task 4: the trained model's weights were not produced by an optimizer step in "
                      "this notebook (no optimizer step ran: pasted or loaded weights?): check by hand that the "
                      "student trained it"], flagged
    assert "**full**" not in flagged
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        manual = {student for student in ("full", "pasted")
                  for notebook in gradebook.find_submission(NAME, student).notebooks if notebook.needs_manual_grade}
    assert manual == {"pasted"}


@pytest.mark.grading
def test_feedback_holds_no_hidden_test_source(graded):
    """No line of the vit cases package reaches a student's feedback page."""
    course, _, _ = graded
    assert hidden_lines_in_feedback(course, NAME, submissions()) == {}


@needs_bwrap
@pytest.mark.grading
def test_training_on_the_test_digits_buys_nothing_and_is_flagged(graded):
    """Issue 42: in the sandbox the test digits are stand-ins. The honest reference keeps its points with nothing
    said; a short training scores 0; the same with the test digits added scores 0 too (test_every_task_...), and it
    and the one trained on the test split alone are noted and flagged: the probe saw the stand-ins in their training
    batches. Every feedback page says that the test digits were stand-ins in the grader's run."""
    course, _, _ = graded
    report = (course / f"grading_report_{NAME}.md").read_text().replace("\\", "")
    sections, flagged = report_sections(report), flagged_section(report)
    for student in ("shortontest", "testtrained"):
        assert "360 of the 360 stand-ins" in sections.get(student, ""), (student, sections.get(student))
        assert f"- **{student}**, task 4: " in flagged and "what the notebook trains on" in flagged, flagged
    for student in ("full", "short"):
        assert "stand-ins" not in sections.get(student, "") and f"**{student}**" not in flagged, student
    for student in ("full", "short", "shortontest"):
        (page,) = (course / "feedback" / student / NAME).glob("*.html")
        assert "the 360 test digits were stand-ins" in visible_text(page), student
