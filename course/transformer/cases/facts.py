"""The facts the transformer's cases record of a module (read by checkers/transformer/_facts.py), and the judge's
sentence for each (fact, key) that differs from the reference's (grading/cases: fact_problem)."""
FACTS = "checkers.transformer._facts"
PE, CLS_TOKEN, CLS_START, ENCODER, MAX_LEN = (f"{FACTS}:{name}" for name in ("pe", "cls_token", "cls_start", "encoder",
                                                                              "max_len_used"))

FACT_PROBLEMS = {
    (PE, "tensor"): "the module has no tensor `pe`",
    (PE, "buffer"): "`pe` is not registered with self.register_buffer",
    (PE, "trainable"): "`pe` is trainable; the sinusoidal table is fixed (a buffer, not an nn.Parameter)",
    (CLS_TOKEN, "tensor"): "the model has no tensor `cls_token`",
    (CLS_TOKEN, "parameter"): "`cls_token` is not an nn.Parameter",
    (CLS_TOKEN, "trainable"): "`cls_token` is not trainable",
    (CLS_TOKEN, "numel"): "`cls_token` does not hold embed_dim numbers",
    (CLS_START, "standard_normal"): "`cls_token` does not start drawn from N(0, 1) (fresh models' starting values "
                                    "have another mean or spread): initialise it with torch.randn(embed_dim)",
    (ENCODER, "blocks"): "the encoder does not hold num_layers blocks",
    (MAX_LEN, "used"): "max_len changes nothing the model builds: pass it on to PositionalEncoding(embed_dim, max_len)",
    (ENCODER, "distinct"): "the encoder repeats one block object, so its layers share weights",
}
