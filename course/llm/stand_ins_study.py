"""Honest and held-out-trained Llamas on the held-out help topics and on the sandbox's stand-ins:
`python -m course.llm.stand_ins_study [--quick]`.

Trains the reference Llama as Task 7's cell does (seeds 0-2; the notebook's 1,100 steps, and 250 and 500), and the
same with the shown stand-ins' scored part added to the training ids four times (what an answer cell that trains on
the sandbox's "held-out text" does). For each it prints the bits per byte on the real scored part (what the grade
pays), on the shown and the unseen stand-ins' scored parts (course/llm/cases/scored_data.py), and fitted_share, which
stand_in_flag thresholds, with the machine's load.
"""
import argparse
import math
import os

import torch
from torch.utils.data import DataLoader

from course.llm.cases.scored_data import fitted_share, scored_parts
from course.reference import reference_of
from course_lib import llm as llm_defaults
from course_lib import seed_everything, train
from course_lib.llm import TextWindows, bits_per_byte, next_token_loss, split_topics, utf8_size

ADDED_COPIES = 4


def trained(ref, train_ids, seed, steps):
    """The reference Llama trained as Task 7's cell does, for steps steps (the warm-up the same share)."""
    seed_everything(seed)
    model = ref["Llama"](**llm_defaults.MODEL)
    windows = TextWindows(train_ids, llm_defaults.MODEL["max_len"], steps * llm_defaults.BATCH_SIZE)
    settings = dict(llm_defaults.TRAINING, warmup_steps=llm_defaults.TRAINING["warmup_steps"] * steps // 1100,
                    eval_every=steps)
    train(model, DataLoader(windows, batch_size=llm_defaults.BATCH_SIZE), None, **settings,
          batch_loss=next_token_loss, evaluate_fn=lambda model: (math.nan, math.nan))  # scored after, in row()
    return model.eval()


def row(name, model, tokenizer, texts, seed):
    """One line of the table."""
    bpb = {key: bits_per_byte(model, tokenizer.encode(text), utf8_size(text), llm_defaults.MODEL["max_len"])
           for key, text in texts.items()}
    print(f"| {name:38s} | {seed} | {bpb['real']:.3f} | {bpb['shown']:.3f} | {bpb['unseen']:.3f} | "
          f"{fitted_share(model, tokenizer.encode):.3f} | {os.getloadavg()[0]:4.1f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="seed 0 only")
    args = parser.parse_args()
    ref = reference_of("llm")
    training_text, held_out_text = split_topics()
    tokenizer = ref["BPETokenizer"](ref["train_bpe"](training_text, llm_defaults.VOCAB_SIZE))
    texts = dict(real=held_out_text[:llm_defaults.EVAL_CHARS], **scored_parts())
    train_ids = tokenizer.encode(training_text)
    added = train_ids + tokenizer.encode(texts["shown"]) * ADDED_COPIES
    torch.set_num_threads(1)
    print("| model | seed | real bpb | shown bpb | unseen bpb | fitted share | load |\n" + "|---" * 7 + "|")
    for seed in (0,) if args.quick else range(3):
        for steps in (1100, 500, 250):
            row(f"honest, {steps} steps", trained(ref, train_ids, seed, steps), tokenizer, texts, seed)
            row(f"shown stand-ins added x{ADDED_COPIES}, {steps} steps", trained(ref, added, seed, steps), tokenizer,
                texts, seed)


if __name__ == "__main__":
    main()
