"""The facts the gpt's cases record of a module (read by checkers/gpt/_facts.py), and the judge's sentence for each
(fact, key) that differs from the reference's (grading/cases: fact_problem)."""
FACTS = "checkers.gpt._facts"
ROTARY, MAX_LEN, ROTARY_TABLES = (f"{FACTS}:{name}" for name in ("rotary", "max_len", "rotary_tables"))

FACT_PROBLEMS = {
    (ROTARY, "buffers"): "`cos` and `sin` should be registered with self.register_buffer(..., persistent=False)",
    (ROTARY, "saved"): ("`cos` and `sin` are saved in the state_dict: register them with persistent=False (they are "
                        "computed, never learned)"),
    (ROTARY, "dtype"): ("`cos` and `sin` are not in torch's default dtype (the module was built under float32): "
                        "convert them with .to(torch.get_default_dtype())"),
    (ROTARY, "shape"): "`cos` and `sin` should each have shape (max_len, head_dim // 2)",
    (ROTARY_TABLES, "shape"): ("`rotary.cos` should have shape (max_len, head_dim // 2): build "
                               "RotaryEmbedding(head_dim, max_len) with the layer's max_len"),
    (MAX_LEN, "value"): "the model does not keep its max_len argument as `self.max_len` (generate reads it)",
}
