"""The transformer assignment's bench (`make bench ASSIGNMENT=transformer`; interface: tools/bench/runner.py).

Four sections, on the device in use (CUDA if available, else CPU):
  layers          forward + backward time of the reference layers against torch-native ones holding the same
                  weights (outputs and input gradients checked equal first);
  training step   one AdamW step of the classifier, reference against nn.TransformerEncoderLayer;
  training        training time until the checker's own data (tasks 6 and 8) is classified >= 95% right;
  scaling         peak memory and time of full against Linformer attention as the sequence grows.
Each goal is one row of the table; figures() writes the scaling plots.
The torch-native equivalents live here, not in course_lib: they restate answers of the workbook.
"""
import copy

import matplotlib

matplotlib.use("Agg")  # the bench writes PNGs; it never opens a window

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from checkers.transformer.trained import CHECK_SEED, CHECK_SIZE, TARGET_ACCURACY
from course_lib import transformer as defaults
from course_lib.transformer import PalindromeDataset, VOCAB_SIZE
from course_lib.metrics import classification_loss
from course_lib.plotting import plot_scaling
from tools.bench import scaling as bench_scaling, timing as bench_timing, training as bench_training
from tools.bench.figures import saved
from tools.bench.native import encoder_layer, load_attention
from tools.bench.goals import Goal, ms

STEP_RATIO_GOAL = 1.3  # reference training step / torch-native step
TRAINING_SECONDS_GOAL = 60.0  # training seconds to 95% on the checker's data, per task
MEMORY_RATIO_GOAL = 2.5  # measured peak within this factor of the analytic attention tensors
SLOPE_TOLERANCE = 0.15  # fitted log-log slope within this of the ideal (2 full, 1 Linformer)
LINFORMER_SAVING_GOAL = 100.0  # full / Linformer (k = 8) peak memory at the longest length

COURSE = dict(batch_size=defaults.BATCH_SIZE, seq_len=defaults.SEQ_LEN + 1, embed_dim=defaults.CLASSIFIER["embed_dim"],
              num_heads=defaults.CLASSIFIER["num_heads"], feedforward_dim=defaults.CLASSIFIER["feedforward_dim"])
SETTINGS = {
    "full": dict(layer_sizes={"course": COURSE, "large": dict(batch_size=32, seq_len=256, embed_dim=64, num_heads=4,
                                                              feedforward_dim=256)},
                 rounds=15, step_rounds=30, seeds=(0, 1, 2), train_size=defaults.TRAIN_SIZE, max_seconds=150.0,
                 seq_lens=[2**p for p in range(6, 13)], scaling_repeats=3, fit_from=256, proj_dims=(8, 64)),
    "quick": dict(layer_sizes={"course": COURSE, "large": dict(batch_size=8, seq_len=64, embed_dim=32, num_heads=4,
                                                               feedforward_dim=64)},
                  rounds=3, step_rounds=5, seeds=(0,), train_size=2_000, max_seconds=0.5,
                  seq_lens=[64, 128, 256], scaling_repeats=1, fit_from=64, proj_dims=(8, 64)),
}
SCALING_BATCH, SCALING_WIDTH = 32, 8  # one head of width 8, as in the notebook's scaling cell
LONG_CALL_SECONDS = 1.0  # scaling points expected to take longer are timed once


# ----------------------------------------------------------------------------- torch-native equivalents


class NativeSelfAttention(nn.Module):
    """nn.MultiheadAttention used as self-attention, with the weights of a reference MultiheadAttention.

    Args:
        reference: the reference layer (q_proj, k_proj, v_proj, o_proj, embed_dim, num_heads).
    """

    def __init__(self, reference):
        super().__init__()
        self.attention = nn.MultiheadAttention(reference.embed_dim, reference.num_heads, batch_first=True)
        load_attention(self.attention, reference)

    def forward(self, x):
        """x (B, L, D) -> (B, L, D); need_weights=False as nn.TransformerEncoderLayer calls it."""
        return self.attention(x, x, x, need_weights=False)[0]


class SDPASelfAttention(nn.Module):
    """The reference's own projections around F.scaled_dot_product_attention (PyTorch's fused kernel).

    Args:
        reference: the reference MultiheadAttention; its Linear layers are shared, so are its weights.
    """

    def __init__(self, reference):
        super().__init__()
        self.reference = reference

    def forward(self, x):
        """x (B, L, D) -> (B, L, D)."""
        ref, (batch_size, seq_len, embed_dim) = self.reference, x.shape

        def heads(projection):  # (B, L, D) -> (B, H, L, head_dim)
            return projection(x).view(batch_size, seq_len, ref.num_heads, ref.head_dim).transpose(1, 2)

        merged = F.scaled_dot_product_attention(heads(ref.q_proj), heads(ref.k_proj), heads(ref.v_proj))
        return ref.o_proj(merged.transpose(1, 2).reshape(batch_size, seq_len, embed_dim))


class NativeClassifier(nn.Module):
    """The [CLS] classifier assembled from nn.TransformerEncoderLayer, with a reference model's weights.

    Args:
        reference: a reference TransformerForSequenceClassification.
        num_heads, feedforward_dim, activation: what it was built with.
    """

    def __init__(self, reference, num_heads, feedforward_dim, activation):
        super().__init__()
        self.cls_token = nn.Parameter(reference.cls_token.detach().clone())
        self.input_embedding = copy.deepcopy(reference.input_embedding)
        self.register_buffer("pe", reference.positional_encoding.pe.detach().clone(), persistent=False)
        self.encoder = nn.ModuleList(
            [encoder_layer(block, num_heads, feedforward_dim, activation()) for block in reference.encoder])
        self.classifier = copy.deepcopy(reference.classifier)

    def forward(self, x):
        """x (B, L, input_dim) -> logits (B, num_classes), read at [CLS]."""
        tokens = self.input_embedding(x)  # (B, L, D)
        cls = self.cls_token.expand(x.size(0), 1, -1)  # (B, 1, D)
        hidden = torch.cat([cls, tokens], dim=1) + self.pe[:, : x.size(1) + 1]  # (B, L + 1, D)
        for layer in self.encoder:
            hidden = layer(hidden)
        return self.classifier(hidden[:, 0])


# ----------------------------------------------------------------------------- layers and training step

ACTIVATION = defaults.CLASSIFIER["activation"]


def classifier_config(size):
    """Keyword arguments of TransformerForSequenceClassification at one layer size (defaults otherwise)."""
    return dict(defaults.CLASSIFIER, embed_dim=size["embed_dim"], num_heads=size["num_heads"],
                feedforward_dim=size["feedforward_dim"])


def random_one_hot(batch_size, seq_len):
    """Random one-hot tokens (B, L, VOCAB_SIZE), as the classifier reads them."""
    return F.one_hot(torch.randint(VOCAB_SIZE, (batch_size, seq_len)), VOCAB_SIZE).float()


def layer_pairs(ref, size, device):
    """The reference layers next to torch-native ones with the same weights, and their inputs, at one size.

    Args:
        ref: namespace of the reference answers (course.reference.reference_of("transformer")).
        size: dict with batch_size, seq_len (positions, [CLS] included), embed_dim, num_heads, feedforward_dim.
        device: where to put modules and inputs.

    Returns:
        List of (layer name, native name, reference module, native module, inputs).
    """
    torch.manual_seed(0)
    dim, heads, hidden = size["embed_dim"], size["num_heads"], size["feedforward_dim"]
    attention = ref["MultiheadAttention"](dim, heads)
    block = ref["EncoderBlock"](dim, heads, hidden, ACTIVATION)
    model = ref["TransformerForSequenceClassification"](**classifier_config(size))
    x = torch.randn(size["batch_size"], size["seq_len"], dim)  # (B, L, D)
    tokens = random_one_hot(size["batch_size"], size["seq_len"] - 1)  # [CLS] makes it seq_len positions
    pairs = [("MultiheadAttention", "nn.MultiheadAttention", attention, NativeSelfAttention(attention), x),
             ("MultiheadAttention", "F.scaled_dot_product_attention", attention, SDPASelfAttention(attention), x),
             ("EncoderBlock", "nn.TransformerEncoderLayer", block,
              encoder_layer(block, heads, hidden, ACTIVATION()), x),
             ("classifier", "nn.TransformerEncoderLayer", model, NativeClassifier(model, heads, hidden, ACTIVATION),
              tokens)]
    return [(name, other, ours.to(device), theirs.to(device), inputs.to(device))
            for name, other, ours, theirs, inputs in pairs]


def layers_section(ref, settings, device):
    """Outputs checked equal, then forward + backward time in alternation, for every pair at every size.

    Returns:
        dict size name -> {"size": ..., "comparisons": [dict(layer, native, match, max_abs_diff,
        grad_max_abs_diff, reference_seconds, other_seconds, ratio, rounds), ...]}.
    """
    results = {}
    for size_name, size in settings["layer_sizes"].items():
        rows = []
        for name, other_name, ours, theirs, inputs in layer_pairs(ref, size, device):
            check = bench_timing.output_difference(ours, theirs, inputs)
            speed = bench_timing.compare_speed(bench_timing.forward_backward(ours, inputs),
                                               bench_timing.forward_backward(theirs, inputs), device,
                                               settings["rounds"])
            rows.append(dict(layer=name, native=other_name, **check, **speed))
        results[size_name] = dict(size=size, comparisons=rows)
    return results


def training_step_section(ref, settings, device):
    """One AdamW step of the course's classifier: reference against the nn.TransformerEncoderLayer version.

    Returns:
        dict with the output check, the alternating timing (ratio = reference / native) and, per model,
        profile_ops's count of tensor ops and their share of the step's time.
    """
    torch.manual_seed(0)
    model = ref["TransformerForSequenceClassification"](**defaults.CLASSIFIER).to(device)
    native = NativeClassifier(model, COURSE["num_heads"], COURSE["feedforward_dim"], ACTIVATION).to(device)
    inputs = random_one_hot(defaults.BATCH_SIZE, defaults.SEQ_LEN).to(device)
    labels = (torch.arange(defaults.BATCH_SIZE) % 2).float().to(device)
    check = bench_timing.output_difference(model, native, inputs)  # before any step changes the weights
    steps = bench_timing.optimizer_step(model, inputs, labels), bench_timing.optimizer_step(native, inputs, labels)
    speed = bench_timing.compare_speed(*steps, device, settings["step_rounds"])
    profiles = {"reference": bench_timing.profile_ops(steps[0]), "native": bench_timing.profile_ops(steps[1])}
    return dict(size=COURSE, **check, **speed, profile=profiles)


# ----------------------------------------------------------------------------- training to 95%


def notebook_loaders(train_size):
    """Training and validation loaders as the notebook's data cell builds them (seeds 1 and 2)."""
    train_data = PalindromeDataset(train_size, defaults.SEQ_LEN, seed=1)
    val_data = PalindromeDataset(defaults.VAL_SIZE, defaults.SEQ_LEN, seed=2)
    return (DataLoader(train_data, batch_size=defaults.BATCH_SIZE, shuffle=True, drop_last=True),
            DataLoader(val_data, batch_size=500))


def thread_setup(ref, train_size):
    """The notebook's training on the CPU, as tools/measure_threads.py times it (data cell and training cells).

    Returns:
        dict: model, optimizer, batches (an endless iterator of (inputs, labels)), val_loader, loss (loss_fn of
        train()), about (one line describing the model and the batch).
    """
    torch.manual_seed(0)
    model = ref["TransformerForSequenceClassification"](**defaults.CLASSIFIER)
    optimizer = torch.optim.AdamW(model.parameters(), lr=defaults.TRAINING["lr"], betas=(0.9, 0.98))
    train_loader, val_loader = notebook_loaders(train_size)
    about = (f"model {defaults.CLASSIFIER['embed_dim']}-dim, batch {defaults.BATCH_SIZE} x {defaults.SEQ_LEN + 1} "
             "tokens")
    return dict(model=model, optimizer=optimizer, batches=_forever(train_loader), val_loader=val_loader,
                loss=classification_loss, about=about)


def _forever(loader):
    while True:
        yield from loader


def checker_data(seq_len):
    """What check_task_6 / check_task_8 grade on: CHECK_SIZE sequences drawn with CHECK_SEED, one-hot.

    Returns:
        inputs (CHECK_SIZE, seq_len, VOCAB_SIZE) float, labels (CHECK_SIZE,) float.
    """
    data = PalindromeDataset(CHECK_SIZE, seq_len, seed=CHECK_SEED)
    return F.one_hot(data.tokens, data.vocab_size).float(), data.labels


def training_section(ref, settings, device):
    """Training time of tasks 6 and 8 until >= 95% on the checker's data, one run per seed.

    Returns:
        dict task -> {"model": config, "runs": [...], median_seconds, worst_seconds, ...} (summarize_runs).
    """
    loaders, held_out = notebook_loaders(settings["train_size"]), checker_data(defaults.SEQ_LEN)
    tasks = {"task 6": ("TransformerForSequenceClassification", defaults.CLASSIFIER),
             "task 8": ("LinformerForSequenceClassification", defaults.LINFORMER)}
    results = {}
    for task, (class_name, config) in tasks.items():
        runs = [bench_training.train_to_accuracy(lambda: ref[class_name](**config), loaders, held_out, seed,
                                                 TARGET_ACCURACY, device, defaults.TRAINING, settings["max_seconds"])
                for seed in settings["seeds"]]
        model = dict(config, activation=config["activation"].__name__)
        results[task] = dict(model=class_name, config=model, runs=runs, **bench_training.summarize_runs(runs))
    return results


# ----------------------------------------------------------------------------- attention scaling


def scaling_specs(proj_dims):
    """Curve name -> Linformer proj_dim k (None for full attention)."""
    return {"full attention": None, **{f"Linformer k={k}": k for k in proj_dims}}


def attention_factory(ref, proj_dim):
    """factory(seq_len) -> one-head attention of width SCALING_WIDTH: full if proj_dim is None, else Linformer."""
    if proj_dim is None:
        return lambda seq_len: ref["MultiheadAttention"](SCALING_WIDTH, 1)
    return lambda seq_len: ref["LinformerAttention"](SCALING_WIDTH, 1, seq_len, proj_dim)


def analytic_bytes(proj_dim, seq_len, backward):
    """Bytes of the attention tensors at the peak of one pass (bench_scaling's formulas, one head)."""
    if proj_dim is None:
        return bench_scaling.full_attention_bytes(SCALING_BATCH, 1, seq_len, backward)
    return bench_scaling.linformer_attention_bytes(SCALING_BATCH, 1, seq_len, proj_dim, SCALING_WIDTH, backward)


def summarize_curve(curve, seq_lens, proj_dim, fit_from, backward):
    """Analytic sizes, measured / analytic ratios and fitted log-log slopes of one curve.

    Slopes are fitted from fit_from on (the asymptotic regime; below it a call's fixed cost, not L,
    sets the time) and, for the record, over all lengths.
    """
    fit = [index for index, seq_len in enumerate(seq_lens) if seq_len >= fit_from]
    lengths = [seq_lens[index] for index in fit]
    analytic = [analytic_bytes(proj_dim, seq_len, backward) for seq_len in seq_lens]
    slope = {key: bench_scaling.loglog_slope(lengths, [curve[key][index] for index in fit])
             for key in ("peak_bytes", "seconds")}
    return dict(analytic_bytes=analytic, peak_over_analytic=[p / a for p, a in zip(curve["peak_bytes"], analytic)],
                ideal_slope=2 if proj_dim is None else 1, memory_slope=slope["peak_bytes"], time_slope=slope["seconds"],
                memory_slope_all=bench_scaling.loglog_slope(seq_lens, curve["peak_bytes"]),
                time_slope_all=bench_scaling.loglog_slope(seq_lens, curve["seconds"]))


def scaling_section(ref, settings, device):
    """Full against Linformer attention (one head, width 8, batch 32) at every length, both passes.

    Returns:
        dict with seq_lens, batch_size, embed_dim, fit_from, method, and per pass name -> curve
        (peak_bytes, seconds, analytic_bytes, peak_over_analytic, slopes).
    """
    seq_lens, specs = settings["seq_lens"], scaling_specs(settings["proj_dims"])
    layers = {name: attention_factory(ref, proj_dim) for name, proj_dim in specs.items()}
    curves = bench_scaling.scaling_curves(layers, seq_lens, SCALING_BATCH, SCALING_WIDTH, device,
                                          repeats=settings["scaling_repeats"], long_call_seconds=LONG_CALL_SECONDS)
    for pass_name, backward in bench_scaling.PASSES.items():
        for name, curve in curves[pass_name].items():
            curve.update(summarize_curve(curve, seq_lens, specs[name], settings["fit_from"], backward))
    time_method = (f"median of {settings['scaling_repeats']} timed run(s) after a warm-up run; "
                   f"1 run for calls expected over {LONG_CALL_SECONDS:g} s")
    return dict(seq_lens=seq_lens, batch_size=SCALING_BATCH, embed_dim=SCALING_WIDTH, num_heads=1,
                fit_from=settings["fit_from"], time_method=time_method, **curves)


PASS_TITLES = {"forward": "one forward pass", "forward_backward": "one forward + backward pass"}
QUANTITIES = {"memory": ("peak_bytes", 2**-20, "peak memory (MiB)"), "time": ("seconds", 1e3, "wall time (ms)")}


def figures(report, out):
    """Log-log plots of the scaling section's memory and time against L, ideal slopes drawn; one PNG per pass and
    quantity, written under out.

    Returns:
        List of the paths written.
    """
    scaling, paths = report["scaling"], []
    for pass_name, pass_title in PASS_TITLES.items():
        for quantity, (key, scale, ylabel) in QUANTITIES.items():
            curves = scaling[pass_name]
            series = {name: [value * scale for value in curve[key]] for name, curve in curves.items()}
            how = f"measured with {scaling['method']}" if quantity == "memory" else scaling["time_method"]
            title = (f"{ylabel.split(' (')[0].capitalize()} of {pass_title} (B={scaling['batch_size']}, "
                     f"D={scaling['embed_dim']}, 1 head)\n{how}")
            fig = plot_scaling(scaling["seq_lens"], series, ylabel=ylabel, title=title,
                               ideal_slopes={name: curve["ideal_slope"] for name, curve in curves.items()})
            paths.append(saved(fig, out / f"scaling_{quantity}_{pass_name}.png"))
    return paths


# ----------------------------------------------------------------------------- goals and table

PASS_LABELS = {"forward": "fwd", "forward_backward": "fwd+bwd"}


def layer_goals(layers):
    """One row per pair: outputs and input gradients allclose (the goal); the time ratio is reported beside it."""
    rounds = next(iter(layers.values()))["comparisons"][0]["rounds"]
    rows = [Goal("layers", "time measured as", f"medians of {rounds} alternating rounds (ref, native, ref, "
                 "...), each round >= 20 ms of back-to-back calls")]
    for size_name, result in layers.items():
        size = result["size"]
        section = (f"layers {size_name} B{size['batch_size']} L{size['seq_len']} D{size['embed_dim']} "
                   f"H{size['num_heads']}")
        for row in result["comparisons"]:
            measured = (f"fwd+bwd ref/native {row['ratio']:.2f} ({ms(row['reference_seconds'])} / "
                        f"{ms(row['other_seconds'])}); max|diff| {row['max_abs_diff']:.0e}, "
                        f"grad {row['grad_max_abs_diff']:.0e}")
            rows.append(Goal(section, f"{row['layer']} vs {row['native']}", measured,
                             "allclose (time: reported)", row["match"]))
    return rows


def training_step_goals(step):
    """Rows for the training-step section: same outputs, the time ratio (goal), and where the time goes."""
    ours, theirs = step["profile"]["reference"], step["profile"]["native"]
    return [
        Goal("training step", "classifier vs nn.TransformerEncoderLayer: outputs, input grads",
             f"max|diff| {step['max_abs_diff']:.0e}, grad {step['grad_max_abs_diff']:.0e}", "allclose",
             step["match"]),
        Goal("training step", "AdamW step of the course classifier, ref / native",
             f"{step['ratio']:.2f} ({ms(step['reference_seconds'])} / {ms(step['other_seconds'])})",
             f"<= {STEP_RATIO_GOAL}", step["ratio"] <= STEP_RATIO_GOAL),
        Goal("training step", "tensor ops per step, ref / native (step time per op)",
             f"{ours['ops']} / {theirs['ops']} ({step['reference_seconds'] / ours['ops'] * 1e6:.1f} / "
             f"{step['other_seconds'] / theirs['ops'] * 1e6:.1f} us)"),
    ]


def training_goals(training):
    """Rows for the training section: median and worst seed's training seconds to 95% on the checker's data."""
    rows = []
    for task, result in training.items():
        worst = max(result["runs"], key=lambda run: run["seconds"])
        label = f"{task} ({result['model'].replace('ForSequenceClassification', '')}) to 95% on checker data"
        reached = "" if result["all_reached"] else ", NOT all reached"
        rows.append(Goal("training", f"{label}: median of {len(result['runs'])} seeds",
                         f"{result['median_seconds']:.1f} s ({result['median_steps']:.0f} steps){reached}",
                         f"<= {TRAINING_SECONDS_GOAL:.0f} s",
                         result["all_reached"] and result["median_seconds"] <= TRAINING_SECONDS_GOAL))
        rows.append(Goal("training", f"{label}: worst seed",
                         f"{worst['seconds']:.1f} s (seed {worst['seed']}, {worst['steps']} steps, "
                         f"acc {worst['accuracy']:.1%})", f"<= {TRAINING_SECONDS_GOAL:.0f} s",
                         worst["reached"] and worst["seconds"] <= TRAINING_SECONDS_GOAL))
    return rows


def curve_goals(pass_name, name, curve, fit_from):
    """Rows for one scaling curve: memory and time slopes, and measured peak / analytic size."""
    label, ideal = f"{PASS_LABELS[pass_name]} {name}", curve["ideal_slope"]
    within = lambda slope: abs(slope - ideal) <= SLOPE_TOLERANCE
    ratios = curve["peak_over_analytic"]
    rows = [Goal("scaling", f"{label}: {quantity} slope, L >= {fit_from} (all L: {curve[key + '_all']:.2f})",
                 f"{curve[key]:.2f}", f"{ideal} +- {SLOPE_TOLERANCE}", within(curve[key]))
            for quantity, key in (("memory", "memory_slope"), ("time", "time_slope"))]
    rows.append(Goal("scaling", f"{label}: peak / analytic attention tensors, over all L",
                     f"{min(ratios):.2f}x .. {max(ratios):.2f}x", f"within {MEMORY_RATIO_GOAL}x",
                     all(1 / MEMORY_RATIO_GOAL <= ratio <= MEMORY_RATIO_GOAL for ratio in ratios)))
    return rows


def scaling_goals(scaling, proj_dims):
    """Rows for the scaling section: every curve's goals and the Linformer's saving at the longest length."""
    rows = [Goal("scaling", "memory measured with", scaling["method"]),
            Goal("scaling", "time measured as", scaling["time_method"])]
    longest, smallest = scaling["seq_lens"][-1], f"Linformer k={min(proj_dims)}"
    for pass_name in bench_scaling.PASSES:
        curves = scaling[pass_name]
        for name, curve in curves.items():
            rows += curve_goals(pass_name, name, curve, scaling["fit_from"])
        saving = curves["full attention"]["peak_bytes"][-1] / curves[smallest]["peak_bytes"][-1]
        rows.append(Goal("scaling", f"{PASS_LABELS[pass_name]} peak at L={longest}: full / {smallest}",
                         f"{saving:.0f}x ({curves['full attention']['peak_bytes'][-1] / 2**20:.0f} MiB / "
                         f"{curves[smallest]['peak_bytes'][-1] / 2**20:.1f} MiB)",
                         f">= {LINFORMER_SAVING_GOAL:.0f}x", saving >= LINFORMER_SAVING_GOAL))
    return rows


def goals(report, settings):
    """Every row of the table, section by section."""
    return (layer_goals(report["layers"]) + training_step_goals(report["training_step"])
            + training_goals(report["training"]) + scaling_goals(report["scaling"], settings["proj_dims"]))


SECTIONS = {"layers": layers_section, "training_step": training_step_section, "training": training_section,
            "scaling": scaling_section}
