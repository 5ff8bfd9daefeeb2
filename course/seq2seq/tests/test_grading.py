"""The seq2seq assignment graded end to end: collect, then grade in the sandbox, on a few synthetic submissions.

One grading run (`python -m grading.grade --assignment seq2seq --jobs 2`, what `make grade ASSIGNMENT=seq2seq` runs)
on a scratch copy of the course scores: the reference notebook that trains (full marks), the untouched student
notebook (0), a planted Task 6 mistake that still trains (loses Task 6 only), and three attacks on Task 7 that keep
the reference answers of Tasks 1-6: a `decode` that reads the answer from `source`, a model that copies its memory
reversed by hand, and a training cell that monkeypatches the checks and whose check cell was edited (each scores 0
on Task 7 alone). Select it alone with `pytest -m grading course/seq2seq/tests/test_grading.py`.
"""
import copy
import re
from collections import Counter

import pytest

from checkers._core import slug_of
from course.seq2seq.mistakes import MUTANTS
from course.registry import assignment
from grading.match.notebook import read
from submissions import (class_report, collect_and_grade, edit_cell, hidden_lines_in_feedback, reference_answers,
                         report_sections, scratch_course, seconds_per_submission, visible_text, with_answers, without,
                         wrong_scores)

pytestmark = pytest.mark.full

SEQ2SEQ = assignment("seq2seq")
NAME = SEQ2SEQ.name
POINTS = SEQ2SEQ.points
NOTHING = without(POINTS, *POINTS)
BOS_KEPT = next(m for m in MUTANTS if m.task == 6 and m.name == "BOS kept")

# The training cell of each attack: no training, a model whose own forward reverses the source (or none of that,
# and the checks patched); the reference greedy_decode would score 100% on the first two.
SOURCE_READER = '''from course_lib.seq2seq import reversal_targets


class Reader(Seq2SeqTransformer):
    """Answers from `source`, which decode receives for the padding mask."""

    def decode(self, target_input, memory, source, attention=None):
        answer = reversal_targets(source)  # (B, S + 1)
        steps = torch.arange(target_input.size(1), device=source.device).clamp(max=answer.size(1) - 1)
        return nn.functional.one_hot(answer[:, steps], self.output.out_features).float() * 10  # (B, T, V)


model = Reader(**model_config)
'''
MEMORY_COPIER = '''class Copier(Seq2SeqTransformer):
    """Encodes the source one-hot and copies that memory back reversed, ignoring the decoder input."""

    def encode(self, source, attention=None):
        return nn.functional.one_hot(source, self.output.out_features).float()  # (B, S, V)

    def decode(self, target_input, memory, source, attention=None):
        lengths = (source != self.pad_id).sum(1, keepdim=True)  # (B, 1)
        index = lengths - 1 - torch.arange(target_input.size(1), device=source.device)  # (B, T)
        rows = memory.gather(1, index.clamp(min=0)[..., None].expand(-1, -1, memory.size(-1)))  # (B, T, V)
        eos = nn.functional.one_hot(torch.tensor(EOS_ID), memory.size(-1)).float()  # (V,)
        return torch.where((index < 0)[..., None], eos, rows) * 10  # (B, T, V)


model = Copier(**model_config)
'''
MONKEYPATCH = '''import checkers.seq2seq, checkers.seq2seq.trained
def _passed(*args, **kwargs):
    print("✓ Task 7 passed")
checkers.seq2seq.check_task_7 = checkers.seq2seq.trained.check_task_7 = _passed
checkers.seq2seq.trained.TARGET_ACCURACY = 0.0
check_task_7 = _passed
'''


def definitions():
    """The student notebook with the reference answers of Tasks 1-6 and no training."""
    answers = {key: value for key, value in reference_answers(SEQ2SEQ.source_notebook).items()
               if int(re.match(r"task_(\d)", key).group(1)) in SEQ2SEQ.definition_tasks}
    return with_answers(read(SEQ2SEQ.release_notebook), answers)


def attack(training_cell, check_cell=None):
    notebook = edit_cell(definitions(), "task_7_training", lambda source: training_cell)
    return notebook if check_cell is None else edit_cell(notebook, "check_task_7", lambda source: check_cell)


def submissions():
    """{student: (file name in the zip, notebook, {task: expected score})}."""
    reference = read(SEQ2SEQ.source_notebook)
    mistake = edit_cell(copy.deepcopy(reference), "task_6_greedy_decode", BOS_KEPT.apply)
    return {"full": ("full_seq2seq.ipynb", reference, dict(POINTS)),
            "bos6": ("bos6_seq2seq.ipynb", mistake, without(POINTS, 6)),
            "untouched": ("untouched_seq2seq.ipynb", read(SEQ2SEQ.release_notebook), NOTHING),
            "reader": ("reader_seq2seq.ipynb", attack(SOURCE_READER), without(POINTS, 7)),
            "copier": ("copier_seq2seq.ipynb", attack(MEMORY_COPIER), without(POINTS, 7)),
            "patched": ("patched_seq2seq.ipynb", attack(MONKEYPATCH + "model = Seq2SeqTransformer(**model_config)",
                                                        'print("✓ Task 7 passed")'), without(POINTS, 7))}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(course folder, seconds grading took, its output) after collect + grade --jobs 2 of the seq2seq submissions."""
    course = scratch_course(tmp_path_factory.mktemp("course"))
    seconds, output = collect_and_grade(course, NAME, submissions())
    return course, seconds, output


@pytest.mark.grading
def test_the_class_report_names_the_planted_mistake_for_its_student_alone(graded):
    """`make report` on this class: the BOS kept in Task 6 is named for its student in grades_by_task.csv and counted
    once in diagnoses.csv, which counts what grades_by_task.csv names."""
    counted, named = class_report(graded[0], NAME)
    planted = f"{NAME}.6.{slug_of(BOS_KEPT.diagnosis)}"
    assert named.get(("bos6", 6)) == planted, named
    assert counted.get(planted) == 1 and counted == dict(Counter(named.values())), (counted, named)


@pytest.mark.grading
def test_every_task_of_every_submission_gets_its_expected_score(graded):
    course, seconds, output = graded
    print(f"\ngrade --assignment {NAME} --jobs 2: {seconds:.0f} s; each: {seconds_per_submission(output)}")
    wrong = wrong_scores(course, NAME, submissions())
    assert not wrong, f"(student, task): (graded, expected) = {wrong}"


@pytest.mark.grading
def test_the_attacks_fail_task_7_on_accuracy_and_the_patch_is_reported(graded):
    """The report says why Task 7 failed (the reference architecture's accuracy with their weights), and flags the
    monkeypatched checks for a person."""
    course, _, _ = graded
    sections = report_sections((course / f"grading_report_{NAME}.md").read_text())
    for student in ("reader", "copier", "patched"):
        (page,) = (course / "feedback" / student / NAME).glob("*.html")
        assert "with your weights" in visible_text(page), student
    assert "tampering" in sections.get("patched", ""), sections.get("patched")
    assert "full" not in sections


@pytest.mark.grading
def test_feedback_holds_no_hidden_test_source(graded):
    """No line of the seq2seq cases package reaches a student's feedback page."""
    course, _, _ = graded
    assert hidden_lines_in_feedback(course, NAME, submissions()) == {}
