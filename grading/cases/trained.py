"""Tasks 6 and 8: fresh palindromes for the trained models; the labels never leave the grader."""
from course_lib.data import PalindromeDataset
from course_lib.defaults import SEQ_LEN as DEFAULT_SEQ_LEN

from .parts import recipe

DATA_SEED = 271828  # neither the notebook's data (1, 2) nor the visible check's (31337)
SIZE = 2000
TRAINED = {6: ("TransformerForSequenceClassification", "classifier"),
           8: ("LinformerForSequenceClassification", "linformer_classifier")}


def fresh_data():
    """The hidden evaluation set: (tokens, labels) of SIZE sequences of the notebook's length."""
    data = PalindromeDataset(SIZE, DEFAULT_SEQ_LEN, seed=DATA_SEED)
    return data.tokens, data.labels.long()


def trained_case(task, tokens, vocab_size):
    """The one case of a training task: the model's logits on fresh sequences (inputs only)."""
    class_name, slots = TRAINED[task]
    spec = {"class_name": class_name, "slots": slots, "tokens": tokens, "vocab_size": vocab_size}
    return recipe(task, f"hidden: accuracy on {SIZE} fresh sequences of length {DEFAULT_SEQ_LEN}", False,
                  trained=spec)
