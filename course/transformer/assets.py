"""The transformer assignment's figures in assets/ (docs/students.md shows them; `make assets` renders them)."""
from course.reference import reference_of
from course_lib import plot_lr_schedule, plot_positional_encoding
from course_lib import transformer as defaults

STEPS_PER_EPOCH = defaults.TRAIN_SIZE // defaults.BATCH_SIZE  # DataLoader(drop_last=True)


def figures(train=True):
    """{file name: matplotlib figure}: the positional encoding and the learning-rate schedule the notebook uses (train:
    unused, no figure here comes from a trained model)."""
    pe = reference_of("transformer")["PositionalEncoding"](embed_dim=64, max_len=128).pe[0]
    training = defaults.TRAINING
    return {
        "positional_encoding.png": plot_positional_encoding(pe),
        "lr_schedule.png": plot_lr_schedule(training["lr"], training["warmup_steps"],
                                            training["num_epochs"] * STEPS_PER_EPOCH),
    }
