"""The facts and weight roles the llm's cases name (functions of checkers/llm/), and the judge's sentence for each
(fact, key) that differs from the reference's (grading/cases: fact_problem)."""
from checkers.llm.training import MERGES_AS_LISTS, SPEED_LIMIT, TOO_SLOW

FACTS = "checkers.llm._facts"
LORA_START, LORA_MERGE, PARAMETERS = (f"{FACTS}:{name}" for name in ("lora_start", "lora_merge", "parameter_count"))
LORA_SLOTS, BASE_LAYER = f"{FACTS}:lora_slots", f"{FACTS}:linear"
MERGE_PAIRS = f"{FACTS}:merge_pairs"  # Task 1: each merge a tuple (values record tuples and lists alike)
BPE_SPEED = f"{FACTS}:bpe_speed"  # Task 1's speed rule, timed in the probe (a ratio of two of its own CPU times)
RMS_SLOTS, SWIGLU_SLOTS = "checkers.llm._roles:rms_norm_slots", "checkers.llm._roles:swiglu_slots"
ATTENTION_SLOTS = "checkers._weights:attention_slots"  # q_proj, k_proj, v_proj, o_proj, as the Task 5 check loads

FACT_PROBLEMS = {
    (MERGE_PAIRS, "tuples"): str(MERGES_AS_LISTS).rstrip("."),
    (BPE_SPEED, "fast_enough"): (f"all the timed text's merges took over {SPEED_LIMIT:g} times the CPU time of its "
                                 f"first merge alone (the check's speed rule): {str(TOO_SLOW).rstrip('.')}"),
    (PARAMETERS, "tensors"): ("the module has other parameters than the task names (RMSNorm: `weight` alone; "
                              "SwiGLU: its three projections' weights, no biases)"),
    (PARAMETERS, "numel"): "the module's parameters hold another number of values than the task's",
    (LORA_START, "base_kept"): "LoRALinear should keep the nn.Linear it adapts as `self.base`",
    (LORA_START, "base_frozen"): ("the base layer's parameters should not require gradients "
                                  "(base.requires_grad_(False))"),
    (LORA_START, "a_zero"): "A should start random (and B at zeros)",
    (LORA_START, "b_zero"): "B should start at zeros (and A random), so the adapted layer starts equal to the base",
    (LORA_START, "a_shape"): "A should have shape (rank, in_features)",
    (LORA_START, "b_shape"): "B should have shape (out_features, rank)",
    (LORA_START, "trainable"): "only A and B should be trainable parameters",
    (LORA_MERGE, "linear"): "merge() should return a new nn.Linear",
    (LORA_MERGE, "base_kept"): "merge() should leave the base layer's weight unchanged",
    (LORA_MERGE, "same_outputs"): "the layer merge() returns should give the same outputs as the adapted layer",
}
