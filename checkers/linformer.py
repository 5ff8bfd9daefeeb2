"""Task 7: Linformer attention, block and classifier."""
import torch
from functools import partial

from ._compare import expect_close, expect_tensor, signatures
from ._core import check_function, expect_module_class, load_fixture
from ._modules import build, expect_gradients_everywhere, expect_output, expect_unchanged, load
from ._weights import LINFORMER_PROJECTIONS, attention_slots, block_slots, classifier_slots
from .classifier import build_loaded, expect_classifier

ATOL, RTOL = 1e-6, 1e-6


def _forward(task, module, x, what, **kwargs):
    before = x.clone()
    result = task.call(what, module, x, **kwargs)
    expect_unchanged(task, before, x)
    return result


def _expect_layer(task, module, case, name):
    x = case["x"]
    outputs = expect_output(task, f"{name}(x)", _forward(task, module, x, f"{name}.forward"), x.shape, x.dtype)
    expect_close(task, f"{name} output", outputs, case["outputs"], ATOL, RTOL, signatures(case, "outputs"))
    result = _forward(task, module, x, f"{name}.forward", return_attention=True)
    _, attention = expect_output(task, name, result, x.shape, x.dtype, with_attention=True)
    expect_tensor(task, f"{name} attention (B, H, L, proj_dim)", attention, case["attention"].shape, x.dtype)
    expect_close(task, f"{name} attention", attention, case["attention"], ATOL, RTOL, signatures(case, "attention"))
    inputs = x.clone().requires_grad_(True)
    loss = _forward(task, module, inputs, f"{name}.forward").pow(2).sum()
    expect_gradients_everywhere(task, module, loss, inputs, name)


@check_function(7)
def check_task_7(task, LinformerAttention, LinformerBlock, LinformerForSequenceClassification):
    """Check the three Linformer classes against fixed weights (attention of shape (B, H, L, proj_dim))."""
    for cls, name in ((LinformerAttention, "LinformerAttention"), (LinformerBlock, "LinformerBlock"),
                      (LinformerForSequenceClassification, "LinformerForSequenceClassification")):
        expect_module_class(task, cls, name)
    fixture = load_fixture(7)
    slots = partial(attention_slots, projections=LINFORMER_PROJECTIONS)
    case = fixture["attention"]
    attention = load(task, build(task, LinformerAttention, "LinformerAttention", *case["args"]), slots,
                     case["weights"], "LinformerAttention")
    _expect_layer(task, attention, case, "LinformerAttention")
    single = build(task, LinformerAttention, "LinformerAttention", *case["args"], dtype=torch.float32)
    expect_output(task, "LinformerAttention on float32 input", _forward(task, single, case["x"].float(),
                  "LinformerAttention.forward"), case["x"].shape, torch.float32)
    case = fixture["block"]
    block = load(task, build(task, LinformerBlock, "LinformerBlock", *case["args"]),
                 partial(block_slots, projections=LINFORMER_PROJECTIONS), case["weights"], "LinformerBlock").eval()
    _expect_layer(task, block, case, "LinformerBlock")
    case, name = fixture["classifier"], "LinformerForSequenceClassification"
    model = build_loaded(task, LinformerForSequenceClassification, name, case["config"], case, None,
                         partial(classifier_slots, projections=LINFORMER_PROJECTIONS))
    expect_classifier(task, model, case, case["x"], name)
    task.passed("sequence-axis projections E and F, attention of shape (B, H, L, proj_dim), block and classifier are right.")
