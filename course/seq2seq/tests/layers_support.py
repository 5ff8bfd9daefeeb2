"""Which objects Tasks 1-4's checks take, and running a check on them (the reference and its variants: checks.py)."""
import checkers.seq2seq as checkers

LAYER_OBJECTS = {1: ("LayerNorm",), 2: ("causal_mask", "padding_mask"), 3: ("MultiheadAttention",),
                 4: ("DecoderBlock",)}


def run_layer_check(task, namespace):
    """check_task_<task> on the objects it takes, looked up by name in namespace."""
    return getattr(checkers, f"check_task_{task}")(*(namespace[name] for name in LAYER_OBJECTS[task]))
