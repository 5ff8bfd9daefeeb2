"""course_lib.llm's trained-model helpers against independent routes: bits_per_byte against one forward pass per
predicted token, next_token_scores against bits_per_byte, TextWindows' windows, the held-out rule against
binascii's CRC-32, stdlib_docstrings' two sides."""
import pytest
import binascii
import math

import torch
import torch.nn.functional as F

from course_lib.llm import (ADAPT_CHARS, TextWindows, bits_per_byte, next_token_scores, split_topics,
                            stdlib_docstrings)

from .checks import reference

pytestmark = pytest.mark.fast

SMALL = dict(vocab_size=50, embed_dim=16, num_heads=4, num_kv_heads=2, hidden_dim=24, num_layers=2, max_len=8)


def small_model():
    torch.manual_seed(0)
    return reference()["Llama"](**SMALL).eval()


def bits_one_token_at_a_time(model, ids, max_len):
    """-log2 p of every id but the first given the ids before it in its window, one forward pass per id."""
    total = 0.0
    for t in range(1, len(ids)):
        start = (t - 1) // max_len * max_len  # the window that predicts id t
        logits, _ = model(torch.tensor([ids[start:t]]))  # (1, t - start, V)
        total -= F.log_softmax(logits[0, -1].double(), dim=-1)[ids[t]].item() / math.log(2)
    return total


def test_bits_per_byte_is_the_sum_of_each_token_s_bits_over_the_bytes():
    model, generator = small_model(), torch.Generator().manual_seed(1)
    for length in (2, 8, 9, 10, 17, 30):  # one partial window, exactly full windows, a window of 1 prediction
        ids = torch.randint(SMALL["vocab_size"], (length,), generator=generator).tolist()
        expected = bits_one_token_at_a_time(model, ids, SMALL["max_len"]) / 123
        for batch_size in (1, 2, 32):
            assert math.isclose(bits_per_byte(model, ids, 123, SMALL["max_len"], batch_size), expected, rel_tol=1e-5)


def test_next_token_scores_agree_with_bits_per_byte_and_argmax():
    model, ids = small_model(), torch.randint(SMALL["vocab_size"], (21,), generator=torch.Generator()).tolist()
    nats, accuracy = next_token_scores(model, ids, SMALL["max_len"])
    assert math.isclose(nats * 20 / math.log(2), bits_per_byte(model, ids, 1, SMALL["max_len"]), rel_tol=1e-6)
    right = 0
    for t in range(1, len(ids)):
        start = (t - 1) // SMALL["max_len"] * SMALL["max_len"]
        right += model(torch.tensor([ids[start:t]]))[0][0, -1].argmax().item() == ids[t]
    assert accuracy == right / 20


def test_text_windows_are_consecutive_ids_shifted_by_one_and_seeded():
    ids = list(range(1000, 1300))
    windows = TextWindows(ids, 16, 50, seed=3)
    assert len(windows) == 50
    for index in range(50):
        inputs, targets = windows[index]
        start = inputs[0].item() - 1000
        assert inputs.tolist() == ids[start:start + 16] and targets.tolist() == ids[start + 1:start + 17]
    again = TextWindows(ids, 16, 50, seed=3)
    assert all(torch.equal(windows[i][0], again[i][0]) for i in range(50))
    assert any(not torch.equal(windows[i][0], TextWindows(ids, 16, 50, seed=4)[i][0]) for i in range(50))


def test_the_held_out_rule_reads_each_name_s_crc32():
    topics = {f"topic-{i}": f"text {i}" for i in range(40)}
    held = [name for name in sorted(topics) if binascii.crc32(name.encode()) % 8 == 5]
    training, held_out = split_topics(topics)
    assert held_out == "\n".join(topics[name] for name in held)
    assert training == "\n".join(topics[name] for name in sorted(topics) if name not in held)
    for dropped in (held[0], next(name for name in topics if name not in held)):  # one topic gone: no other moves
        fewer = {name: text for name, text in topics.items() if name != dropped}
        assert split_topics(fewer)[1] == "\n".join(topics[name] for name in held if name != dropped)


def test_stdlib_docstrings_has_two_sides_of_the_sizes_asked():
    training, held_out = stdlib_docstrings()
    assert (len(training), len(held_out)) == ADAPT_CHARS
    assert held_out[:200] not in training
