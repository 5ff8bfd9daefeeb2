"""The generic probes' findings (checkers/transformer/_probes_generic.py) said as one failure sentence each."""
from ._probes_generic import aliased_modules, unused_weights


def explain_unused(task, what, module, run, roles=None):
    """Fail naming the first weight of module whose change leaves run(module)'s output unchanged: it is never used."""
    unused = unused_weights(module, run, roles)
    if unused:
        part = unused[0].rsplit(".", 1)[0]
        task.fail(f"{what}: changing `{unused[0]}` changes nothing in the output: `{part}` is never applied (is "
                  "another module used in its place, or its result dropped?).")


def explain_aliased(task, what, module):
    """Fail when one submodule with weights is held under two names, so the two roles share their weights."""
    aliased = aliased_modules(module)
    if aliased:
        first, second = aliased
        task.fail(f"{what}: `{second}` is the same module object as `{first}`, so both share one set of weights: "
                  f"create a separate module for `{second}`.")
