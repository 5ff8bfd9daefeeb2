"""The transformer's attack submissions for course/transformer/tests/test_redteam_scoring.py, built from its reference
and release (hostile text, added cells and zips: tests/redteam_builders.py)."""
import copy

from course.registry import assignment
from grading.match.notebook import read
from redteam_builders import XSS, extra_cell
from submissions import definitions_only, edit_cell, index_of

TRANSFORMER = assignment("transformer")

HAND_DETECTOR = '''def _mirror(x):
    mismatch = (x - x.flip(1)).abs().sum((1, 2))  # (B,): 0 exactly for palindromes
    return (10 * (0.5 - mismatch.clamp(max=1.0))).unsqueeze(1)  # (B, 1)


class _Hand{base}({base}):
    def forward(self, x):
        return _mirror(x)


class _History:
    val_accuracy, seconds = [1.0], [0.0]


{name} = _Hand{base}(input_dim=VOCAB_SIZE, embed_dim=16, num_classes=1, num_heads=2, feedforward_dim=32,
                   num_layers=2{extra})
{history} = _History()
{sabotage}
'''

EMPTY_ENCODER = '''import torch
import torch.nn as nn
from course_lib.transformer import VOCAB_SIZE as _V


class {base}(nn.Module):
    """No encoder at all: only the parts a configuration would be read from."""

    def __init__(self):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(16))
        self.input_embedding = nn.Linear(_V, 16)
        self.encoder = nn.ModuleList()
        self.classifier = nn.Linear(16, 1)

    def forward(self, x):
        mismatch = (x - x.flip(1)).abs().sum((1, 2))
        return (10 * (0.5 - mismatch.clamp(max=1.0))).unsqueeze(1)


class _History:
    val_accuracy, seconds = [1.0], [0.0]


{name}, {history} = {base}(), _History()
'''

TRAINED_CELLS = {6: ("task_6_training", "TransformerForSequenceClassification", "model", "history", ""),
                 8: ("task_8_linformer_training", "LinformerForSequenceClassification", "linformer_model",
                     "linformer_history", ", sequence_length=33, proj_dim=8")}


def hand_detector(notebook, sabotage):
    """Tasks 6 and 8 answered by a forward() that detects palindromes by hand, plus a sabotage line per model."""
    notebook = copy.deepcopy(notebook)
    for grade_id, base, name, history, extra in TRAINED_CELLS.values():
        line = sabotage.format(name=name)
        source = "from course_lib.transformer import VOCAB_SIZE\n" + HAND_DETECTOR.format(
            base=base, name=name, history=history, extra=extra, sabotage=line)
        edit_cell(notebook, grade_id, lambda _, source=source: source)
    return notebook


def empty_encoder(notebook):
    notebook = copy.deepcopy(notebook)
    for grade_id, base, name, history, _ in TRAINED_CELLS.values():
        source = EMPTY_ENCODER.format(base=base, name=name, history=history)
        edit_cell(notebook, grade_id, lambda _, source=source: source)
    return notebook


NOISE = ('import sys\nprint("\\ud800")\nsys.stderr.write("\\udcff' + XSS + '\\n")\n'
         'sys.stderr.write(b"\\xff\\xfe bad utf-8".decode("utf-8", "surrogateescape"))\n'
         'import os\nos.write(2, b"\\xff\\xfe raw bytes on fd 2\\n")\nprint("' + XSS + '", file=sys.stderr)\n')

LIAR = '''class _Liar(torch.Tensor):
    """Says it equals anything."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal, torch.Tensor.__eq__, torch.isclose):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


_honest_attention = scaled_softmax_attention


def scaled_softmax_attention(query, key, value, mask=None):
    result, attention = _honest_attention(query, key, value, mask)
    return (result * 0).as_subclass(_Liar), attention
'''

FORGE = '''import torch
class _Forged(torch.Tensor):
    pass
torch.save([{"structure": "tensor", "outputs": [[torch.zeros(2).as_subclass(_Forged)]]}], "../out/task_2.pt")
'''

# A softmax that overflows in float32 (it fails the large-score cases), with the recording patched to leave out the
# outputs of every case but the gradient ones, which this softmax passes: an empty list once compared as a match.
STRIP = '''import math
import recipes as _recipes


def scaled_softmax_attention(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))  # (..., L_q, L_k)
    if mask is not None:
        scores = scores.masked_fill(~mask.bool(), -1e9)
    weights = scores.exp() / scores.exp().sum(-1, keepdim=True)  # no max subtracted: inf in float32
    return weights @ value, weights


_record = _recipes.run


def _stripped(recipe, objects, namespace=None):
    record = _record(recipe, objects, namespace)
    if recipe["task"] == 1 and not recipe.get("grad"):
        record["outputs"], record["inputs_after"] = [[] for _ in record["outputs"]], []
    return record


_recipes.run = _stripped
'''

RAISES_XSS = 'raise ValueError("' + XSS + '")\n'


def malformed(notebook):
    """A cell whose source list holds a number: valid JSON, not a valid notebook."""
    notebook = copy.deepcopy(notebook)
    notebook["cells"][index_of(notebook, "task_4_positional_encoding")]["source"] = ["class X:\n", 5]
    return notebook


def huge_outputs(notebook, cells=1500, width=3000):
    """Many added cells that print a lot, and one 3 MB cell."""
    notebook = copy.deepcopy(notebook)
    at = index_of(notebook, "check_task_7") + 1
    added = [{"cell_type": "code", "metadata": {}, "source": f"print('{i}' * {width})", "outputs": [],
              "execution_count": None} for i in range(cells)]
    added.append({"cell_type": "code", "metadata": {}, "source": "# " + "y" * 3_000_000, "outputs": [],
                  "execution_count": None})
    notebook["cells"][at:at] = added
    return notebook


def attack_submissions():
    """{student: (zip name, notebook, {task: expected score} or None, what to check)}; None: checked by hand."""
    release, definitions = read(TRANSFORMER.release_notebook), definitions_only(TRANSFORMER)
    def_points = {1: 1, 2: 1, 3: 1, 4: 1, 5: 2, 6: 0, 7: 2, 8: 0}
    zero = {task: 0 for task in def_points}
    heads_str = hand_detector(definitions, "for _block in {name}.encoder:\n    _block.attention.num_heads = '2'")
    raises = edit_cell(copy.deepcopy(definitions), "task_2_multihead_attention",
                       lambda s: s.replace("        batch_size, seq_len, _ = x.shape",
                                           "        " + RAISES_XSS + "        batch_size, seq_len, _ = x.shape", 1))
    return {
        "honest": ("honest_transformer.ipynb", definitions, def_points),
        "handheads": ("handheads_transformer.ipynb", heads_str, def_points),
        "handvalid": ("handvalid_transformer.ipynb", hand_detector(definitions, ""), def_points),
        "emptyenc": ("emptyenc_transformer.ipynb", empty_encoder(release), zero),
        "noise": ("noise_transformer.ipynb", extra_cell(definitions, "check_task_1", NOISE), def_points),
        "xss": (f"xss/{XSS}.ipynb", raises, {**def_points, 2: 0, 3: 0, 5: 0}),  # Linformer (7) has its own attention
        "liar": ("liar_transformer.ipynb", extra_cell(definitions, "task_1_attention", LIAR), None),
        "forged": ("forged_transformer.ipynb", extra_cell(definitions, "check_task_2", FORGE),
                   {**def_points, 2: 0}),
        "stripped": ("stripped_transformer.ipynb", extra_cell(definitions, "task_1_attention", STRIP),
                     {**def_points, 1: 0}),
        "malformed": ("malformed_transformer.ipynb", malformed(definitions), zero),
        "huge": ("huge_transformer.ipynb", huge_outputs(definitions), def_points),
    }
