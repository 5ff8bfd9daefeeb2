"""The llm assignment graded end to end: collect, then grade in the sandbox, on a few synthetic submissions.

One grading run (`python -m grading.grade --assignment llm --jobs 2`) on a scratch copy of the course scores: the
reference notebook that trains (full marks), the untouched student notebook (0), a planted Task 6 mistake beside an
untrained model (loses Task 6 and the training task), and attacks that keep the reference answers of Tasks 1-6 and 8
but train nothing: the given Llama left untrained (its weights re-drawn by its initialisation), a model of another
class, forged merges, a Llama whose own forward reads the next token, and a training cell that monkeypatches the
checks and whose check cell was edited. 250 steps instead of 1,100 score 0 on Task 7, and so does the same with the
scored held-out part added (issue 42: in the sandbox the held-out topics are stand-ins), which is flagged and noted.
Select it alone with
`pytest -m grading course/llm/tests/test_grading.py`.
"""
import re

import pytest

from course.llm.mistakes import MUTANTS
from course.registry import assignment
from grading.match.notebook import read
from sandboxed import BWRAP, needs_bwrap  # without the sandbox the scored data is not hidden: its arms are left out
from submissions import (collect_and_grade, edit_cell, flagged_section, hidden_lines_in_feedback, reference_answers,
                         report_sections,
                         scratch_course, seconds_per_submission, visible_text, with_answers, without, wrong_scores)

pytestmark = pytest.mark.full

LLM = assignment("llm")
NAME = LLM.name
POINTS = LLM.points
NOTHING = without(POINTS, *POINTS)

# The training cell of each attack (the given cell before it built `model`, an untrained Llama)
UNTRAINED = "history = None  # no training: the Llama keeps the weights its initialisation drew\n"
OTHER_CLASS = '''class Lookup(nn.Module):
    """A table of next-token logits per token: no Llama."""

    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(llm_defaults.VOCAB_SIZE, llm_defaults.VOCAB_SIZE)

    def forward(self, tokens, cache=None):
        return self.table(tokens), cache


model = Lookup()
'''
FORGED_MERGES = "merges = [(300, 301), (97, 98)]  # ids no merge made yet\n"
FUTURE_READER = '''class Peek(Llama):
    """Puts its logits on the token that comes next: it reads the future."""

    def forward(self, tokens, cache=None):
        logits, new_cache = super().forward(tokens, cache)
        following = torch.cat([tokens[:, 1:], tokens[:, -1:]], dim=1)
        return logits * 0 + nn.functional.one_hot(following, logits.size(-1)).float() * 30, new_cache


model = Peek(**model_config)
'''
MONKEYPATCH = '''import checkers.llm, checkers.llm.trained
def _passed(*args, **kwargs):
    print("✓ Task 7 passed")
checkers.llm.check_task_7 = checkers.llm.trained.check_task_7 = _passed
checkers.llm.trained.TARGET_BPB = 100.0
check_task_7 = _passed
'''
# Issue 42: 250 steps instead of 1,100 (about 2.55 bits per byte: no points), and the same with the held-out part the
# check scores added a hundred times to the training ids, which at home needs 1.756 and passes check_task_7 (course.llm.
# stand_ins_study's training at seed 0). In the sandbox the held-out topics are stand-ins (docstrings): it needs 2.776
# on the real ones, and fits the stand-ins far better than their unseen twin (79% of block pairs).
SHORT = '''short_loader = DataLoader(TextWindows(train_ids, max_len, 250 * llm_defaults.BATCH_SIZE),
                          batch_size=llm_defaults.BATCH_SIZE)
history = train(model, short_loader, None, device=device, **dict(train_config, warmup_steps=25),
                batch_loss=next_token_loss, evaluate_fn=evaluate_held_out)
'''
SHORT_ON_HELD_OUT = SHORT.replace("TextWindows(train_ids,", "TextWindows(train_ids + eval_ids * 100,")
NOT_SCALED = next(mutant for mutant in MUTANTS if mutant.task == 6 and mutant.name == "not scaled")


def definitions(course):
    """The student notebook with the reference answers of every task but training."""
    answers = {key: value for key, value in reference_answers(LLM.source_notebook).items()
               if int(re.match(r"task_(\d)", key).group(1)) in LLM.definition_tasks}
    return with_answers(read(LLM.release_notebook), answers)


def attack(course, training_cell, check_cell=None):
    """definitions() with its training cell (and optionally its Task 7 check cell) replaced."""
    notebook = edit_cell(definitions(course), "task_7_training", lambda source: training_cell)
    return notebook if check_cell is None else edit_cell(notebook, "check_task_7", lambda source: check_cell)


def planted(notebook, mutant):
    """notebook with the mutant's edits applied to its task's answer cell."""
    def edit(source):
        for old, new in mutant.edits:
            source = source.replace(old, new)
        return source
    cell = next(key for key in reference_answers(LLM.source_notebook)
                if key.startswith(f"task_{mutant.task}_"))
    return edit_cell(notebook, cell, edit)


def submissions(course):
    """{student: (file name in the zip, notebook, {task: expected score})}."""
    return {"full": ("full_llm.ipynb", read(LLM.source_notebook), dict(POINTS)),  # the one that trains
            "untouched": ("untouched_llm.ipynb", read(LLM.release_notebook), NOTHING),
            "tiled6": ("tiled6_llm.ipynb", planted(attack(course, UNTRAINED), NOT_SCALED), without(POINTS, 6, 7)),
            "untrained": ("untrained_llm.ipynb", attack(course, UNTRAINED), without(POINTS, 7)),
            "otherclass": ("otherclass_llm.ipynb", attack(course, OTHER_CLASS), without(POINTS, 7)),
            "forged": ("forged_llm.ipynb", attack(course, FORGED_MERGES), without(POINTS, 7)),
            "peek": ("peek_llm.ipynb", attack(course, FUTURE_READER), without(POINTS, 7)),
            "patched": ("patched_llm.ipynb", attack(course, MONKEYPATCH, 'print("✓ Task 7 passed")'),
                        without(POINTS, 7)),
            "short": ("short_llm.ipynb", attack(course, SHORT), without(POINTS, 7)),
            **({"shortonheldout": ("shortonheldout_llm.ipynb", attack(course, SHORT_ON_HELD_OUT), without(POINTS, 7))}
               if BWRAP else {})}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(course folder, seconds grading took, its output, the submissions) after collect + grade --jobs 2."""
    course = scratch_course(tmp_path_factory.mktemp("course"))
    students = submissions(course)
    seconds, output = collect_and_grade(course, NAME, students)
    return course, seconds, output, students


@pytest.mark.grading
def test_every_task_of_every_submission_gets_its_expected_score(graded):
    course, seconds, output, students = graded
    print(f"\ngrade --assignment {NAME} --jobs 2: {seconds:.0f} s; each: {seconds_per_submission(output)}")
    wrong = wrong_scores(course, NAME, students)
    assert not wrong, f"(student, task): (graded, expected) = {wrong}"


@pytest.mark.grading
def test_the_attacks_say_why_task_7_failed_and_the_patch_is_reported(graded):
    """The feedback says why Task 7 failed (bits per byte of the reference Llama with their weights, another class,
    merges that are not valid), and the report flags the monkeypatched checks for a person."""
    course, _, _, _ = graded
    page = lambda student: visible_text(next((course / "feedback" / student / NAME).glob("*.html")))
    for student in ("untrained", "peek", "patched"):
        assert "bits per byte" in page(student) and "with your weights" in page(student), student
    assert "is not a Llama" in page("otherclass")
    assert "merge 0 of the notebook's `merges` is not a pair of ids below 256" in page("forged")
    sections = report_sections((course / f"grading_report_{NAME}.md").read_text())
    assert "tampering" in sections.get("patched", ""), sections.get("patched")
    assert "full" not in sections


@pytest.mark.grading
def test_feedback_holds_no_hidden_test_source(graded):
    """No line of the llm cases package reaches a student's feedback page."""
    course, _, _, students = graded
    assert hidden_lines_in_feedback(course, NAME, students) == {}


@needs_bwrap
@pytest.mark.grading
def test_training_on_the_held_out_text_buys_nothing_and_is_flagged(graded):
    """Issue 42: in the sandbox the held-out topics are stand-ins. The honest reference keeps its points with nothing
    said; a short training scores 0; the same with the scored held-out part added scores 0 too (test_every_task_...),
    and is noted and flagged: its weights fit the stand-ins far better than their twin. Every feedback page says that
    the held-out topics were stand-ins in the grader's run."""
    course, _, _, _ = graded
    report = (course / f"grading_report_{NAME}.md").read_text().replace("\\", "")
    sections, flagged = report_sections(report), flagged_section(report)
    assert "far better than their unseen twin" in sections.get("shortonheldout", ""), sections.get("shortonheldout")
    assert "- **shortonheldout**, task 7: " in flagged and "what the notebook trains on" in flagged, flagged
    for student in ("full", "short"):
        assert "stand-ins" not in sections.get(student, "") and f"**{student}**" not in flagged, student
    for student in ("full", "short", "shortonheldout"):
        page = visible_text(next((course / "feedback" / student / NAME).glob("*.html")))
        assert "the held-out help topics were stand-ins" in page, student
