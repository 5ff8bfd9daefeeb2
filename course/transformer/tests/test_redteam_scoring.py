"""Red team, the transformer's attacks: submissions that try to get points for nothing or stop the run.

Fast tests attack the pieces directly (the trained-model judge with hand-built models, the records of its tasks).
The slow ones (marker `grading`) collect and grade a class of attack submissions end to end beside honest ones that
must keep every point of their answers (none trains: the full solution is graded, trained, by
tests/test_redteam_containment.py, this assignment being the course's vehicle), and check
grades.csv, grades_by_task.csv and the gradebook agree. The attacks are built in course/transformer/tests/
redteam_attacks.py; the attacks on shared pieces (collect on hostile zips, the renderer, the
escaping) are tested in tests/test_redteam_collect.py.
"""
import json
import subprocess
import sys
import time
import zipfile

import pytest
import torch
import torch.nn as nn

from checkers._core import Task
from course.registry import assignment
from course.transformer.cases.trained_model import predict
from course_lib import transformer as defaults
from course_lib.transformer import VOCAB_SIZE
from course_paths import ROOT
from grading.cases import build_cases
from grading.judge.expected import expected_records, reference_namespace
from grading.judge.score import score_submission
from grading.judge.trained_models import reference_model, trained_problem
from grading.match.notebook import check_cells, read, release_layout
from grading.recipes import run
from course.transformer.tests.palindrome_models import mirror_logits
from redteam_builders import patch_central
from submissions import (GRADING_RUNAWAY, csv_rows, definitions_only, report_sections, scratch_course,
                         seconds_per_submission, visible_text)

from .redteam_attacks import attack_submissions

TRANSFORMER = assignment("transformer")
NAME, RELEASE = TRANSFORMER.name, TRANSFORMER.release_notebook


@pytest.fixture(scope="module")
def judged():
    """(cases, expected, reference) as the grader builds them."""
    reference = reference_namespace(TRANSFORMER)
    checks = check_cells(release_layout(read(RELEASE)))
    cases = build_cases(reference, TRANSFORMER)
    return cases, expected_records(cases, reference, {t: c.names for t, c in checks.items()}), reference


def trained_verdict(task, model, judged, class_name=None):
    cases, expected, reference = judged
    name = class_name or type(model).__mro__[1].__name__
    record = run(cases[task][0], [model], {name: reference.get(name) if class_name else type(model).__mro__[1]})
    return trained_problem(task, record, expected[task][0], reference)[0], record


def detector(reference, name, **config):
    """The reference class with a forward() that detects palindromes by hand (no training at all)."""
    return type("Hand", (reference[name],), {"forward": lambda self, x: mirror_logits(x)})(**config)


# ----- Trained tasks: judged from weights, in the reference architecture, on the grader's data --------------------

SABOTAGE = {
    "num_heads='2'": lambda m: [setattr(b.attention, "num_heads", "2") for b in m.encoder],
    "num_heads=True": lambda m: [setattr(b.attention, "num_heads", True) for b in m.encoder],
    "num_heads=3 (does not divide 16)": lambda m: [setattr(b.attention, "num_heads", 3) for b in m.encoder],
    "num_heads=2.0": lambda m: [setattr(b.attention, "num_heads", 2.0) for b in m.encoder],
    "heads differ per block": lambda m: setattr(m.encoder[1].attention, "num_heads", 4),
    "encoder = nn.ModuleList()": lambda m: setattr(m, "encoder", nn.ModuleList()),
    "activation removed": lambda m: [setattr(b, "feedforward", nn.Sequential(b.feedforward[0], b.feedforward[-1]))
                                     for b in m.encoder],
    "no cls_token": lambda m: delattr(m, "cls_token"),
    "NaN weight": lambda m: m.classifier.weight.data.fill_(float("nan")),
    "a wider classifier": lambda m: setattr(m, "classifier", nn.Linear(16, 7)),
}


@pytest.mark.fast
@pytest.mark.parametrize("sabotage", SABOTAGE, ids=list(SABOTAGE))
def test_hand_detector_with_unusable_config_scores_zero_with_reason(sabotage, judged):
    """The attack of issue 10: a hand-written forward plus one line that breaks the configuration."""
    model = detector(judged[2], "TransformerForSequenceClassification", **defaults.CLASSIFIER)
    SABOTAGE[sabotage](model)
    problem, _ = trained_verdict(6, model, judged)
    assert problem, f"{sabotage}: passed"
    assert "cannot be judged" in problem or "accuracy" in problem, problem


@pytest.mark.fast
@pytest.mark.parametrize("task, name, config", [(6, "TransformerForSequenceClassification", defaults.CLASSIFIER),
                                                (8, "LinformerForSequenceClassification", defaults.LINFORMER)])
def test_hand_detector_with_valid_config_scores_zero(task, name, config, judged):
    """Valid settings, untrained weights: the reference architecture with them is at chance."""
    problem, _ = trained_verdict(task, detector(judged[2], name, **config), judged)
    assert problem and problem.startswith("accuracy 5") and "with your weights" in problem


HONEST_CONFIGS = [
    (6, "TransformerForSequenceClassification", defaults.CLASSIFIER),
    (6, "TransformerForSequenceClassification", dict(defaults.CLASSIFIER, num_heads=4, activation=nn.GELU)),
    (6, "TransformerForSequenceClassification", dict(defaults.CLASSIFIER, num_heads=1, num_layers=3,
                                                     num_classes=2, activation=nn.SiLU)),
    (8, "LinformerForSequenceClassification", defaults.LINFORMER),
    (8, "LinformerForSequenceClassification", dict(defaults.LINFORMER, num_heads=4, proj_dim=5, num_layers=1)),
]


@pytest.mark.fast
@pytest.mark.parametrize("task, name, config", HONEST_CONFIGS)
def test_honest_models_of_any_valid_config_load_exactly(task, name, config, judged):
    """The grader's rebuilt reference computes the very logits the student's (reference-class) model does."""
    torch.manual_seed(7)
    model = judged[2][name](**config)
    cases, _, reference = judged
    record = run(cases[task][0], [model], {name: judged[2][name]})
    rebuilt = reference_model(task, reference, record, judged[1][task][0])
    tokens = torch.randint(VOCAB_SIZE, (64, defaults.SEQ_LEN))
    mine = predict(Task(task), model, tokens, VOCAB_SIZE)
    theirs = predict(Task(task), rebuilt, tokens, VOCAB_SIZE)
    assert torch.allclose(mine, theirs, atol=1e-5), (mine - theirs).abs().max()


FORGED_RECORDS = {
    "weights as lists": ({"cls_token": [0.0] * 16}, {"num_heads": [2], "activation": ["ReLU"]}, "not a plain tensor"),
    "a huge model": ({"input_embedding.weight": torch.zeros(4096, VOCAB_SIZE),
                      "classifier.weight": torch.zeros(1, 4096),
                      "encoder.0.feedforward.in.weight": torch.zeros(8, 4096)},
                     {"num_heads": [1], "activation": ["ReLU"]}, "embed_dim = 4096 is above 64"),
    "an empty feedforward": ({"input_embedding.weight": torch.zeros(16, VOCAB_SIZE), "classifier.weight":
                              torch.zeros(1, 16), "encoder.0.feedforward.in.weight": torch.zeros(0, 16)},
                             {"num_heads": [2], "activation": ["ReLU"]}, "feedforward_dim = 0 is not a size"),
    "an unknown activation": ({"input_embedding.weight": torch.zeros(16, VOCAB_SIZE), "classifier.weight":
                               torch.zeros(1, 16), "encoder.0.feedforward.in.weight": torch.zeros(8, 16)},
                              {"num_heads": [2], "activation": ["Identity"]}, "is not valid"),
    "settings for fewer blocks": ({"input_embedding.weight": torch.zeros(16, VOCAB_SIZE), "classifier.weight":
                                   torch.zeros(1, 16), "encoder.0.feedforward.in.weight": torch.zeros(8, 16),
                                   "encoder.1.feedforward.in.weight": torch.zeros(8, 16)},
                                  {"num_heads": [2], "activation": ["ReLU"]}, "every encoder block"),
    "a layout error": ({"cls_token": torch.zeros(16)}, {"error": "`encoder` should be an nn.Module"}, "pinned layout"),
}


@pytest.mark.fast
@pytest.mark.parametrize("forgery", FORGED_RECORDS, ids=list(FORGED_RECORDS))
def test_forged_trained_records_score_zero_with_reason(forgery, judged):
    """Records the probe could be made to write: validated as data before anything is built from them."""
    weights, settings, words = FORGED_RECORDS[forgery]
    record = {"facts": {"module": True, "instance": True}, "weights": weights, "config": settings}
    problem = trained_problem(6, record, judged[1][6][0], judged[2])[0]
    assert problem and words in problem, problem


@pytest.mark.fast
def test_a_model_of_another_class_scores_zero(judged):
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2), 1)
    problem, _ = trained_verdict(6, model, judged, "TransformerForSequenceClassification")
    assert problem == "the trained model is not a TransformerForSequenceClassification"


@pytest.mark.fast
def test_trained_case_sends_no_data_to_the_probe(judged):
    cases, expected, _ = judged
    assert "tokens" not in cases[6][0]["trained"] and "tokens" in expected[6][0]


# ----- Records: tensor subclasses, forged records --------------------------------------------------------------------

class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.Tensor.clone, torch.clone, torch.Tensor.detach):
            return torch.full((2, 3), 7.0)
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.mark.fast
def test_lying_tensor_subclass_scores_zero_and_is_flagged(judged):
    cases, expected, reference = judged
    honest = reference["scaled_softmax_attention"]

    def liar(*args, **kwargs):
        result, attention = honest(*args, **kwargs)
        return result.as_subclass(Liar), attention

    records = {1: [run(recipe, [liar]) for recipe in cases[1]]}
    verdict = score_submission({1: cases[1]}, expected, records, {1: 1}, reference)[1]
    assert verdict.score == 0 and "tensor subclass (Liar)" in verdict.message and verdict.flag


@pytest.mark.fast
def test_malformed_record_scores_zero_and_is_flagged(judged):
    cases, expected, reference = judged
    records = {1: [{"structure": expected[1][0]["structure"], "outputs": 5}] * len(cases[1])}
    verdict = score_submission({1: cases[1]}, expected, records, {1: 1}, reference)[1]
    assert verdict.score == 0 and verdict.flag


def overflowing_attention(query, key, value, mask=None):
    """Softmax without the max subtracted: inf in float32 on large scores, right on every gradient case."""
    scores = query @ key.transpose(-2, -1) / query.size(-1) ** 0.5  # (..., L_q, L_k)
    if mask is not None:
        scores = scores.masked_fill(~mask.bool(), -1e9)
    weights = scores.exp() / scores.exp().sum(-1, keepdim=True)  # (..., L_q, L_k)
    return weights @ value, weights


@pytest.mark.fast
def test_records_that_leave_out_outputs_score_zero_and_are_flagged(judged):
    """A record whose outputs were emptied by the notebook (recipes.run patched) once matched by comparing nothing."""
    cases, expected, reference = judged
    records = [run(recipe, [overflowing_attention]) for recipe in cases[1]]
    assert score_submission({1: cases[1]}, expected, {1: records}, {1: 1}, reference)[1].score == 0
    stripped = [record if recipe.get("grad") else dict(record, outputs=[[] for _ in record["outputs"]], inputs_after=[])
                for recipe, record in zip(cases[1], records)]
    verdict = score_submission({1: cases[1]}, expected, {1: stripped}, {1: 1}, reference)[1]
    assert verdict.score == 0 and "malformed" in verdict.message and verdict.flag


# ----- End to end: a class of attacks, collected and graded beside honest submissions ------------------------------

def class_submissions():
    """{student: (zip name, notebook, {task: score} or None)}: the attacks, and honest ones that keep full marks."""
    found = {student: (name, notebook, points) for student, (name, notebook, points) in attack_submissions().items()}
    definitions = definitions_only(TRANSFORMER)
    points = found["honest"][2]
    found["张伟"] = ("张伟_transformer.ipynb", definitions, points)
    found["Αλέξανδρος"] = ("Αλέξανδρος/Copy of transformer.ipynb", definitions, points)
    found["month0"] = ("month0/transformer.ipynb", definitions, points)  # its zip date has month 0 (patched below)
    found["bomb"] = ("bomb/transformer.ipynb", definitions, {task: 0 for task in points})  # declared 2 GiB
    # Nothing here trains: that an honest trained model earns the trained tasks (the control for the zeros the
    # hand-written models get) is graded by tests/test_redteam_containment.py, the same grader with the same options
    # (beside the attackers), on the full solution.
    return found


HONEST = ("honest", "张伟", "Αλέξανδρος", "month0")


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """(course, seconds, output of grade) after collect + grade --jobs 2 of the attack class on a scratch course."""
    course = scratch_course(tmp_path_factory.mktemp("redteam"))
    with zipfile.ZipFile(course / "download.zip", "w") as archive:
        for name, notebook, _ in class_submissions().values():
            archive.writestr(name, notebook if isinstance(notebook, bytes) else json.dumps(notebook))
    patch_central(course / "download.zip", "month0/transformer.ipynb", month0=True)
    patch_central(course / "download.zip", "bomb/transformer.ipynb", declared_size=2 << 30)
    collect_run = subprocess.run([sys.executable, "-m", "grading.collect", str(course / "download.zip"), "--course",
                                  str(course), "--assignment", NAME], cwd=ROOT, capture_output=True, text=True)
    assert collect_run.returncode == 0, collect_run.stdout + collect_run.stderr
    started = time.monotonic()
    grade_run = subprocess.run([sys.executable, "-m", "grading.grade", "--jobs", "2", "--course", str(course),
                                "--assignment", NAME],
                               cwd=ROOT, capture_output=True, text=True, timeout=GRADING_RUNAWAY)
    assert grade_run.returncode == 0, grade_run.stdout[-3000:] + grade_run.stderr[-3000:]
    return course, time.monotonic() - started, grade_run.stdout


def gradebook_grades(course):
    """{(student, task): (score, needs_manual_grade)} from nbgrader's gradebook."""
    from nbgrader.api import Gradebook
    found = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in class_submissions():
            notebook = gradebook.find_submission_notebook(NAME, NAME, student)
            for grade in notebook.grades:
                found[(student, int(grade.name.rsplit("_", 1)[1]))] = (grade.score, grade.needs_manual_grade)
    return found


@pytest.mark.full
@pytest.mark.grading
def test_attacks_score_what_they_earn_and_honest_work_keeps_full_marks(attacked):
    course, _, _ = attacked
    got = {(row["student_id"], int(row["task"])): float(row["score"])
           for row in csv_rows(course / "grades_by_task.csv")}
    wrong = {(student, task): (got.get((student, task)), score)
             for student, (_, _, points) in class_submissions().items() if points
             for task, score in points.items() if got.get((student, task)) != score}
    assert not wrong, f"(student, task): (graded, expected) = {wrong}"
    assert got[("liar", 1)] == 0 and got[("liar", 4)] == 1


@pytest.mark.full
@pytest.mark.grading
def test_grades_csv_task_scores_and_gradebook_agree_for_everyone(attacked):
    course, _, _ = attacked
    totals = {row["student_id"]: float(row["score"]) for row in csv_rows(course / "grades.csv")}
    assert set(totals) == set(class_submissions())  # no one lost, no one merged
    by_task = {}
    for row in csv_rows(course / "grades_by_task.csv"):
        by_task[row["student_id"]] = by_task.get(row["student_id"], 0) + float(row["score"])
    book = gradebook_grades(course)
    from_book = {}
    for (student, _), (score, _) in book.items():
        from_book[student] = from_book.get(student, 0) + score
    assert totals == by_task == from_book


@pytest.mark.full
@pytest.mark.grading
def test_what_could_not_be_judged_is_flagged_for_manual_grading(attacked):
    course, _, _ = attacked
    book = gradebook_grades(course)
    flagged = {key for key, (_, manual) in book.items() if manual}
    assert ("liar", 1) in flagged and ("forged", 2) in flagged and ("stripped", 1) in flagged
    assert all(("malformed", task) in flagged and ("bomb", task) in flagged for task in range(1, 9))
    assert not [key for key in flagged if key[0] in HONEST + ("handheads", "handvalid", "emptyenc", "noise", "xss")]
    report = (course / f"grading_report_{NAME}.md").read_text()
    plain = report.replace("\\", "")
    assert "## Flagged for manual grading" in report and "GRADER ERROR" in plain
    assert "tensor subclass" in plain and "records of its tests could not be read" in plain
    assert "too large" in report_sections(plain)["bomb"] and "could not be unpacked" in report_sections(plain)["bomb"]


@pytest.mark.full
@pytest.mark.grading
def test_trained_attacks_say_why_they_scored_zero(attacked):
    course, _, _ = attacked
    plain = (course / f"grading_report_{NAME}.md").read_text().replace("\\", "")
    lines = {student: next(line for line in plain.splitlines() if line.startswith(f"- **{student}**"))
             for student in ("handheads", "handvalid")}
    assert "`num_heads` = '2' is not valid" in lines["handheads"].replace("&#x27;", "'")
    assert "accuracy 5" in lines["handvalid"] and "with your weights" in lines["handvalid"]
    assert "not cross-checked" not in plain and "borderline" not in plain
    # The notebook's own checks of Tasks 6 and 8 run Tasks 5 and 7 on the model's classes, so a hand-written forward
    # is sent back there by the check too: check and grader agree, and nothing needs an instructor's attention.
    sections = report_sections(plain)
    assert not [student for student in ("handheads", "handvalid", "emptyenc") if student in sections]
    for student in ("handheads", "handvalid", "emptyenc"):
        page = visible_text(course / "feedback" / student / NAME / f"{NAME}.html")
        assert "The check in your notebook said: the model's class does not pass check_task_5: fix Task 5 first" \
               in page, student
    page = visible_text(course / "feedback" / "emptyenc" / NAME / f"{NAME}.html")
    assert "Task 6: the trained model's classes do not pass Task 5, so its weights were trained for another function " \
           "than the one graded (the reference classes): fix Task 5 first, then train again." in page


@pytest.mark.full
@pytest.mark.grading
def test_no_student_text_is_shown_unescaped(attacked):
    """<img onerror> from stderr, an exception and a file name: escaped in feedback, the stored notebook, the report."""
    course, _, _ = attacked
    pages = list((course / "feedback").glob(f"*/{NAME}/{NAME}.html"))
    assert len(pages) == len(class_submissions())
    assert not [page for page in pages if "<img src=x" in page.read_text(errors="replace")]
    stored = list((course / "autograded").glob(f"*/{NAME}/{NAME}.ipynb"))
    for path in stored:
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                assert "<img" not in "".join(cell["source"]), path
    report = (course / f"grading_report_{NAME}.md").read_text()
    assert "<img" not in report and "&lt;img src=x onerror=alert(1)&gt;" in report
    xss_page = (course / "feedback" / "xss" / NAME / f"{NAME}.html").read_text()
    assert "&lt;img src=x onerror=alert(1)&gt;" in xss_page


@pytest.mark.full
@pytest.mark.grading
def test_huge_outputs_are_cut_and_odd_text_does_not_stop_the_run(attacked):
    course, seconds, output = attacked
    huge = course / "feedback" / "huge" / NAME / f"{NAME}.html"
    assert huge.stat().st_size < 6_000_000  # cut before grading (grading/match/bound.py); render's budget comes second
    notes = report_sections((course / f"grading_report_{NAME}.md").read_text().replace("\\", ""))["huge"]
    assert "the notebook holds more than an honest one" in notes and "of its 1,556 cells were left out" in notes
    noise = (course / "feedback" / "noise" / NAME / f"{NAME}.html").read_text()
    assert "\ufffd" in noise or "&#65533;" in noise  # the lone surrogates, replaced
    per_submission = seconds_per_submission(output)
    print(f"\nred team, grade --jobs 2: {seconds:.0f} s for {len(per_submission)} submissions; each: {per_submission}")
