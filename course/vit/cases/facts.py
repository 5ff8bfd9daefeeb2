"""The facts the vit's cases record of a module (read by checkers/vit/_facts.py), and the judge's sentence for each
(fact, key) that differs from the reference's (grading/cases: fact_problem)."""
CLS_TOKEN = "checkers.vit._facts:cls_token"

FACT_PROBLEMS = {
    (CLS_TOKEN, "tensor"): "the model has no tensor `cls_token`",
    (CLS_TOKEN, "parameter"): "`cls_token` is not an nn.Parameter",
    (CLS_TOKEN, "trainable"): "`cls_token` is not trainable",
    (CLS_TOKEN, "numel"): "`cls_token` does not hold embed_dim numbers",
}
