"""Generic probes of a wrong size: which arrangement of the expected axes a shape is, and which formula of the
constructor's arguments a size follows across several builds of the student's class."""


def swapped_axes(got, expected, names):
    """The names of expected's axes in the order got has them, "(1, embed_dim, N + 1)", when got is a rearrangement
    of expected (distinct sizes, another order); else None.

    Args:
        got, expected: shapes; names: a name for each axis of expected.
    """
    got, expected = tuple(got), tuple(expected)
    if got == expected or len(set(expected)) != len(expected) or sorted(got) != sorted(expected):
        return None
    return "(" + ", ".join(names[expected.index(size)] for size in got) + ")"


def size_rule(build, configs, measure, formulas):
    """The one formula (text) of formulas that gives measure(build(config)) for every config, or None.

    Args:
        build: config -> the student's object (raising as it does); configs: the argument sets to build with.
        measure: object -> the size to explain; formulas: {text: config -> value}, the right one among them.
    """
    found = []
    for config in configs:
        try:
            found.append(measure(build(config)))
        except Exception:  # noqa: BLE001 -- only a probe
            return None
    fitting = [text for text, formula in formulas.items()
               if all(formula(**config) == size for config, size in zip(configs, found))]
    return fitting[0] if len(fitting) == 1 else None
