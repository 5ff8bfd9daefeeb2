"""Tasks 6 and 8: what the probe records of a trained model, and the grader's own evaluation data.

The probe receives no data for these tasks: it records the model's weights by role and the settings
the weights cannot tell (heads, activation). The grader loads them into the reference architecture
and measures accuracy on sequences drawn here from a seed of its own; neither the sequences nor the
labels ever reach a probe.
"""
from course_lib.data import PalindromeDataset
from course_lib.defaults import SEQ_LEN as DEFAULT_SEQ_LEN

from ..parts import recipe

from checkers.transformer.trained import TARGET_ACCURACY  # one target for the notebook's check and the grader

DATA_SEED = 271828  # neither the notebook's data (1, 2) nor the visible check's (31337)
SIZE = 2000
TRAINED = {6: ("TransformerForSequenceClassification", "classifier"),
           8: ("LinformerForSequenceClassification", "linformer_classifier")}


def evaluation_data(spec):
    """The hidden evaluation set of a trained task's spec: {"tokens", "labels"} of SIZE sequences (grader only)."""
    data = PalindromeDataset(SIZE, DEFAULT_SEQ_LEN, seed=DATA_SEED)
    return {"tokens": data.tokens, "labels": data.labels.long()}


def trained_case(task):
    """The one case of a training task: the trained model's weights and settings (no data goes to the probe)."""
    class_name, slots = TRAINED[task]
    spec = {"assignment": "transformer", "class_name": class_name, "slots": slots, "target": TARGET_ACCURACY}
    return recipe(task, f"hidden: accuracy on {SIZE} fresh sequences of length {DEFAULT_SEQ_LEN}", False,
                  trained=spec)
