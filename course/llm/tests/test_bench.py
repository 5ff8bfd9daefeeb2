"""The llm assignment's bench (course/llm/bench.py): a quick run end to end through the runner, its merges' byte
mapping, its attention routes and its LoRA count.
"""
import math

import pytest
import torch

from course.llm import bench as bench_llm
from course_lib import llm as llm_defaults

from bench_reports import assert_whole_report, run_quick_bench
from .checks import reference

NAME = "llm"
SECTIONS = ("meta", "bpe_training", "tokenizers", "attention", "lora", "training", "goals")


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    """The llm bench's quick run, as `make bench ASSIGNMENT=llm --quick` runs it: (report, out, stdout)."""
    return run_quick_bench(NAME, tmp_path_factory.mktemp("bench_llm"))


@pytest.mark.fast
def test_the_bench_module_defines_the_sections_of_the_report():
    assert list(bench_llm.SECTIONS) == list(SECTIONS[1:-1])


@pytest.mark.full
def test_quick_bench_writes_every_section_and_its_plots(quick_report):
    assert_whole_report(NAME, quick_report, SECTIONS)
    report, out, _ = quick_report
    assert sorted(p.split("/")[-1] for p in report["meta"]["plots"]) == [
        "attention_scaling.png", "bpe_training_time.png", "training_bits_per_byte.png"]


@pytest.mark.full
def test_quick_bench_trains_as_the_notebook_and_checks_the_model(quick_report):
    training, quick = quick_report[0]["training"], bench_llm.SETTINGS["quick"]
    assert training["target_bpb"] == bench_llm.TARGET_BPB and training["eval_chars"] == llm_defaults.EVAL_CHARS
    run = training["runs"][0]
    assert run["steps"] == quick["steps"] and run["seconds"] > 0
    assert len(run["bpb"]) == len(run["curve_seconds"]) == quick["steps"] // quick["eval_every"] + 1
    # untrained (embedding N(0, 0.02)): about a uniform guess, log2(1024) = 10 bits a token at ~0.35 tokens a byte
    assert run["bpb"][0] > 3 and run["bpb"][-1] < run["bpb"][0]
    # a dozen steps reach no bound: the run is reported as not reached and the check fails, saying so
    assert run["target_seconds"] is None and training["all_reached"] is False and "Task 7" in run["check"]
    # on the CPU the goal reads the process's CPU seconds, on CUDA the wall clock
    assert training["clock"] == ("cpu" if quick_report[0]["meta"]["device"] == "cpu" else "wall")


@pytest.mark.full
def test_quick_bench_times_bpe_at_each_size_on_both_texts(quick_report):
    bpe = quick_report[0]["bpe_training"]
    quick = bench_llm.SETTINGS["quick"]
    assert list(bpe["texts"]) == ["help topics, repeated", "stdlib source"]
    for curve in bpe["texts"].values():
        assert len(curve["bytes"]) == len(quick["bpe_chars"]) and curve["bytes"] == sorted(curve["bytes"])
        assert min(curve["cpu_seconds"]) > 0 and curve["merges"] == quick["vocab_size"] - 256
    rows = [g for g in quick_report[0]["goals"] if g["section"] == "bpe"]
    assert [row["passed"] for row in rows] == [None] * 4  # the quick sizes are far below the goal's 1 MB: no verdict


@pytest.mark.fast
def test_the_stdlib_text_is_python_source_of_the_size_asked():
    text = bench_llm.stdlib_source(50_000)
    assert len(text) == 50_000 and "def " in text and "import " in text


@pytest.mark.full
def test_quick_bench_compares_with_tokenizers_where_installed(quick_report):
    compared = quick_report[0]["tokenizers"]
    if not compared["available"]:
        pytest.skip("Hugging Face tokenizers is not installed (requirements.txt pins it)")
    assert compared["round_trip"] is True
    for side in ("training", "held_out"):
        assert 0 < compared["tokenizers"][side] < 1 and 0 < compared["reference"][side] < 1
    merges = compared["merges"]
    assert merges["ours"] == merges["theirs"] == compared["vocab_size"] - 256
    assert 0 < merges["common_prefix"] <= merges["shared"] <= merges["ours"]


@pytest.mark.full
def test_quick_bench_checks_the_attention_routes_equal_before_measuring(quick_report):
    attention = quick_report[0]["attention"]
    assert attention["match"] is True and max(attention["max_abs_diff"].values()) <= bench_llm.EQUAL_ATOL
    for curve in attention["routes"].values():
        assert len(curve["peak_bytes"]) == len(curve["seconds"]) == len(attention["lengths"])
        assert min(curve["seconds"]) > 0
    naive = attention["routes"]["naive (full scores)"]
    # the naive route's (B, H, L, L) float32 scores alone: a floor on its peak at every length
    size = attention["size"]
    floors = [4 * size["batch_size"] * size["num_heads"] * length**2 for length in attention["lengths"]]
    assert all(peak >= floor for peak, floor in zip(naive["peak_bytes"], floors))


@pytest.mark.fast
def test_the_tiled_route_stays_below_the_full_scores_at_a_longer_length():
    """At L = 1024 with blocks of 16 the tiled route holds a few (L, 16) tiles, far below the naive route's (L, L)."""
    routes = bench_llm.attention_routes(reference(), 16)
    size = dict(batch_size=1, num_heads=2, head_dim=8)
    inputs = bench_llm.attention_inputs(size, 1024, "cpu")
    with torch.no_grad():
        peaks = {name: bench_llm.measure(lambda: routes[name](*inputs), "cpu", repeats=1).peak_bytes
                 for name in ("tiled_attention (block 16)", "naive (full scores)")}
    scores = 4 * 2 * 1024**2  # bytes of the (B, H, L, L) float32 scores
    assert peaks["naive (full scores)"] >= scores > 4 * peaks["tiled_attention (block 16)"]


@pytest.mark.fast
def test_the_route_check_sees_a_wrong_route():
    """The equality check can fail: attention without the causal mask differs from SDPA's causal output."""
    routes = {"not causal": lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1) @ v}
    inputs = bench_llm.attention_inputs(dict(batch_size=1, num_heads=2, head_dim=8), 20, "cpu")
    assert bench_llm.route_differences(routes, inputs)["not causal"] > 1e-2


@pytest.mark.fast
def test_the_byte_level_alphabet_is_a_bijection_onto_256_printable_characters():
    alphabet = bench_llm.byte_level_alphabet()
    assert sorted(alphabet.values()) == list(range(256)) and all(char.isprintable() for char in alphabet)
    assert alphabet["A"] == ord("A") and alphabet["Ġ"] == ord(" ")  # GPT-2 shows a space as Ġ


@pytest.mark.fast
def test_tokenizers_merges_read_back_as_the_bytes_they_join():
    """On a text whose first two merges are certain (the pair a, b 6 times; then space, ab 5 times: the words are
    "ab", " ab" 5 times and " xy"), both trainers' merges read as the same bytes."""
    pytest.importorskip("tokenizers")
    text = "ab ab ab ab ab ab xy"
    theirs = bench_llm.hf_merges(bench_llm.hf_bpe(text, 258))
    ours = bench_llm.reference_merges_as_bytes(reference()["train_bpe"](text, 258))
    assert theirs[0] == ours[0] == (b"a", b"b") and theirs[1] == ours[1] == (b" ", b"ab")
    assert bench_llm.merge_agreement(ours, theirs) == dict(common_prefix=2, shared=2, ours=2, theirs=2)


@pytest.mark.fast
def test_merge_agreement_counts_the_common_prefix_and_the_shared_merges():
    ours = [(b"a", b"b"), (b"c", b"d"), (b"e", b"f")]
    theirs = [(b"a", b"b"), (b"e", b"f"), (b"c", b"d"), (b"x", b"y")]
    assert bench_llm.merge_agreement(ours, theirs) == dict(common_prefix=1, shared=3, ours=3, theirs=4)


@pytest.mark.fast
def test_lora_count_equals_rank_times_in_plus_out_on_the_attention_projections():
    """Counted from the reference LoRALinear's parameters; checked against the Task 7 model's sizes (per block: q and
    o map embed_dim to embed_dim, k and v embed_dim to num_kv_heads * head_dim), times its blocks."""
    if "Llama" not in reference():
        pytest.skip("the notebook has no Task 7 model yet")
    lora = bench_llm.lora_section(reference(), dict(lora_ranks=(8,)), "cpu")
    model = llm_defaults.MODEL
    width, kv_features = model["embed_dim"], model["num_kv_heads"] * model["embed_dim"] // model["num_heads"]
    per_block = 8 * (2 * (width + width) + 2 * (width + kv_features))  # q and o; k and v
    assert lora["ranks"][8]["trainable"] == lora["ranks"][8]["formula"] == per_block * model["num_layers"]
    assert lora["full"] > 10 * lora["ranks"][8]["trainable"]


@pytest.mark.fast
def test_the_curve_of_held_out_losses_reads_as_course_libs_bits_per_byte():
    """bpb_curve turns next_token_scores' mean nats per predicted token into bits per byte: the same figure
    course_lib.llm.bits_per_byte computes from the summed bits, on a small untrained model of the reference."""
    torch.manual_seed(0)
    model = reference()["Llama"](**dict(llm_defaults.MODEL, vocab_size=300, num_layers=1, max_len=16))
    ids, num_bytes = torch.randint(300, (100,)).tolist(), 137
    loss, _ = llm_defaults.next_token_scores(model, ids, 16)
    history = type("History", (), dict(val_loss=[loss]))
    (curve,) = bench_llm.bpb_curve(history, ids, num_bytes)
    assert curve == pytest.approx(llm_defaults.bits_per_byte(model, ids, num_bytes, 16), rel=1e-6)


@pytest.mark.fast
def test_a_run_stops_at_the_first_evaluation_at_the_bound(monkeypatch):
    """With the bound moved to 3.4 bits per byte (an untrained model scores about 3.46, a dozen steps about 3.1),
    the run stops at the first evaluation under it, which is also its time to the bound."""
    monkeypatch.setattr(bench_llm, "TARGET_BPB", 3.4)
    settings = dict(steps=12, eval_every=3, stop_at_bound=True)
    run = bench_llm.notebook_run(reference(), 0, bench_llm.notebook_data(reference(), 12), settings, "cpu")
    assert run["bpb"][0] > 3.4 >= run["bpb"][-1] and all(bpb > 3.4 for bpb in run["bpb"][:-1])
    assert run["target_steps"] == run["steps"] < 12 and run["target_seconds"] == run["seconds"]
    # one CPU clock reading per evaluation, growing, the last at the stop
    cpu = run["curve_cpu_seconds"]
    assert len(cpu) == len(run["bpb"]) and cpu == sorted(cpu) and run["target_cpu_seconds"] == cpu[-1] > 0
