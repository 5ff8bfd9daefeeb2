"""The gpt assignment graded end to end: collect, then grade in the sandbox, on a few synthetic submissions.

One grading run (`python -m grading.grade --assignment gpt --jobs 2`, what `make grade ASSIGNMENT=gpt` runs) on a
scratch copy of the course scores: the reference notebook that trains (full marks), the untouched student notebook
(0), a planted Task 8 mistake beside an untrained model (loses Task 8 and the training task; the attacks below keep
Task 8 with such models, so it is the mistake that costs it), and attacks that keep the reference answers of
Tasks 1-6 and 8 but train nothing: a GPT whose forward adds the operands by arithmetic, one that holds the answers of
the check's own problems in an extra table, an untied head, a `generate` that writes the true sum instead of
sampling, a `sample_next_token` that seeds and uses the global random generator instead of its `generator`, and a
training cell that monkeypatches the checks and whose check cell was edited. Select it alone with
`pytest -m grading course/gpt/tests/test_grading.py`.
"""
import re

import pytest

from course.registry import assignment
from grading.match.notebook import read
from submissions import (collect_and_grade, edit_cell, hidden_lines_in_feedback, reference_answers, report_sections,
                         scratch_course, seconds_per_submission, visible_text, with_answers, without, wrong_scores)

pytestmark = pytest.mark.full

GPT = assignment("gpt")
NAME = GPT.name
POINTS = GPT.points
NOTHING = without(POINTS, *POINTS)

# The training cell of each attack: no training, a model whose own forward answers by arithmetic, from a table, or
# an untied head; or none of that, and the checks patched.
CALCULATOR = '''from course_lib.gpt import NUM_DIGITS, PROMPT_LEN


class Calculator(GPT):
    """Adds the operands written in the prompt (causal: only answer positions use it), whatever its weights."""

    def forward(self, tokens, cache=None):
        logits, new_cache = super().forward(tokens, cache)
        digits = tokens[:, :PROMPT_LEN].clamp(max=9)
        powers = 10 ** torch.arange(NUM_DIGITS)
        second = digits[:, NUM_DIGITS + 1:2 * NUM_DIGITS + 1]  # the second number's digits
        total = (digits[:, :NUM_DIGITS] * powers).sum(1) + (second * powers).sum(1)
        answer = total[:, None] // 10 ** torch.arange(NUM_DIGITS + 1) % 10
        target = torch.zeros(tokens.shape, dtype=torch.long)
        width = max(0, min(tokens.size(1) - PROMPT_LEN + 1, NUM_DIGITS + 1))
        target[:, PROMPT_LEN - 1:PROMPT_LEN - 1 + width] = answer[:, :width]
        return logits * 0 + nn.functional.one_hot(target, logits.size(-1)).float() * 30, new_cache


model = Calculator(**model_config)
'''
MEMORISER = '''from checkers.gpt.trained import CHECK_SEED, CHECK_SIZE
from course_lib.gpt import addition_sequences


class Memoriser(GPT):
    """Knows the answers of the check's own problems (its seed is public), from a table in an extra buffer."""

    def __init__(self, **config):
        super().__init__(**config)
        known = addition_sequences(CHECK_SIZE, torch.Generator().manual_seed(CHECK_SEED))
        self.register_buffer("known", known)

    def forward(self, tokens, cache=None):
        logits, new_cache = super().forward(tokens, cache)
        match = (tokens[:, None, :PROMPT_LEN] == self.known[None, :, :PROMPT_LEN]).all(-1).float()
        answers = match @ nn.functional.one_hot(self.known[:, 1:tokens.size(1) + 1], logits.size(-1)).float().flatten(1)
        answers = answers.view_as(logits)
        answers[:, :PROMPT_LEN - 1] = 0
        return logits * 0 + answers * 30, new_cache


model = Memoriser(**model_config)
'''
UNTIED = '''model = GPT(**model_config)
model.lm_head.weight = nn.Parameter(model.token_embedding.weight.detach().clone())
'''
MONKEYPATCH = '''import checkers.gpt, checkers.gpt.trained
def _passed(*args, **kwargs):
    print("✓ Task 7 passed")
checkers.gpt.check_task_7 = checkers.gpt.trained.check_task_7 = _passed
checkers.gpt.trained.TARGET_ACCURACY = 0.0
check_task_7 = _passed
model = GPT(**model_config)
'''
# Task 8's answer replaced: the prompt's true sum written out, no model and no sampling.
SUM_WRITER = '''@torch.no_grad()
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True, generator=None):
    from course_lib.gpt import NUM_DIGITS
    digits = prompt.clamp(max=9)
    powers = 10 ** torch.arange(NUM_DIGITS)
    total = (digits[:, :NUM_DIGITS] * powers).sum(1) + (digits[:, NUM_DIGITS + 1:2 * NUM_DIGITS + 1] * powers).sum(1)
    answer = total[:, None] // 10 ** torch.arange(max_new_tokens) % 10
    return torch.cat([prompt, answer], dim=1)
'''
# Task 6's answer replaced: the global generator, seeded so that a check that seeds its own generator the same way
# might see the same draws.
GLOBAL_RNG = '''def sample_next_token(logits, temperature=1.0, top_k=None, generator=None):
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)
    logits = logits / temperature
    if top_k is not None and top_k < logits.size(-1):
        kth_largest = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth_largest, float("-inf"))
    if generator is not None:
        torch.manual_seed(generator.initial_seed())
    return torch.multinomial(torch.softmax(logits, dim=-1), 1)
'''
MODE_NOT_RESTORED = ("model.train(mode_before)", "pass")


def definitions():
    """The student notebook with the reference answers of every task but training, and no training."""
    answers = {key: value for key, value in reference_answers(GPT.source_notebook).items()
               if int(re.match(r"task_(\d)", key).group(1)) in GPT.definition_tasks}
    return with_answers(read(GPT.release_notebook), answers)


def attack(training_cell, check_cell=None, **answers):
    """definitions() with its training cell (and optionally its Task 7 check cell or other answers) replaced."""
    notebook = edit_cell(definitions(), "task_7_training", lambda source: training_cell)
    for grade_id, source in answers.items():
        notebook = edit_cell(notebook, grade_id, lambda _, new=source: new)
    return notebook if check_cell is None else edit_cell(notebook, "check_task_7", lambda source: check_cell)


def submissions():
    """{student: (file name in the zip, notebook, {task: expected score})}."""
    untrained = "model = GPT(**model_config)\n"
    mistake = edit_cell(attack(untrained), "task_8_generate", lambda source: source.replace(*MODE_NOT_RESTORED))
    return {"full": ("full_gpt.ipynb", read(GPT.source_notebook), dict(POINTS)),  # the one that trains
            "mode8": ("mode8_gpt.ipynb", mistake, without(POINTS, 7, 8)),
            "untouched": ("untouched_gpt.ipynb", read(GPT.release_notebook), NOTHING),
            "calculator": ("calculator_gpt.ipynb", attack(CALCULATOR), without(POINTS, 7)),
            "memoriser": ("memoriser_gpt.ipynb", attack(MEMORISER), without(POINTS, 7)),
            "untied": ("untied_gpt.ipynb", attack(UNTIED), without(POINTS, 7)),
            "sums": ("sums_gpt.ipynb", attack(untrained, task_8_generate=SUM_WRITER), without(POINTS, 7, 8)),
            "globalrng": ("globalrng_gpt.ipynb", attack(untrained, task_6_sample_next_token=GLOBAL_RNG),
                          without(POINTS, 6, 7, 8)),
            "patched": ("patched_gpt.ipynb", attack(MONKEYPATCH, 'print("✓ Task 7 passed")'), without(POINTS, 7))}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(course folder, seconds grading took, its output) after collect + grade --jobs 2 of the gpt submissions."""
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
def test_the_attacks_fail_task_7_on_the_reference_and_the_patch_is_reported(graded):
    """The feedback says why Task 7 failed (the reference GPT with their weights, or an untied head that cannot be
    judged), and the report flags the monkeypatched checks for a person."""
    course, _, _ = graded
    sections = report_sections((course / f"grading_report_{NAME}.md").read_text())
    for student in ("calculator", "memoriser", "untied", "patched"):
        (page,) = (course / "feedback" / student / NAME).glob("*.html")
        assert "with your weights" in visible_text(page), student
    (page,) = (course / "feedback" / "untied" / NAME).glob("*.html")
    assert "the head is untied" in visible_text(page)
    assert "tampering" in sections.get("patched", ""), sections.get("patched")
    assert "full" not in sections


@pytest.mark.grading
def test_feedback_holds_no_hidden_test_source(graded):
    """No line of the gpt cases package reaches a student's feedback page."""
    course, _, _ = graded
    assert hidden_lines_in_feedback(course, NAME, submissions()) == {}
