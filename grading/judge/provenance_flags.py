"""Whether a trained model's graded weights came out of an optimizer step in the notebook: a flag for a person.

The probe's Ledger (grading/probe/provenance.py) records, with a global optimizer step hook installed before any student
code runs, the float64 norm of every parameter after every step. A weight the grader judges is a state some step left
when its norm equals (within RELATIVE) the norm a parameter of its size had after a step: a best checkpoint reloaded
or a model moved between devices passes; weights pasted into the notebook, loaded from a file or left at their
initialisation do not. The task keeps its score; the flag only asks a person to check that the student trained it.
It is not proof either way: see docs/instructors.md, "Trained weights the notebook did not produce".
"""
import torch

# Float64 norms of equal float32 values agree to about 1e-15 however the sum is ordered (threads, devices); a step
# that changes a weight moves its norm far more (unless its learning rate is 0: that is not caught).
RELATIVE = 1e-9
CHECK = "check by hand that the student trained it"
MISSING = f"the record of the notebook's optimizer steps is missing or malformed (possible tampering): {CHECK}"
UNHOOKED = ("the notebook removed or replaced the grader's optimizer step hook, so whether the trained model was "
            f"trained here is unknown (possible tampering): {CHECK}")
NO_STEP = ("the trained model's weights were not produced by an optimizer step in this notebook (no optimizer step "
           f"ran: pasted or loaded weights?): {CHECK}")
NOT_A_STEP = ("the trained model's weights were not produced by an optimizer step in this notebook ({unmatched} of "
              f"its {{total}} weights match no state a step left: pasted or loaded from elsewhere?): {CHECK}")


def valid(evidence):
    """The probe's provenance record has the form the probe writes (anything else: missing or tampered with)."""
    if not isinstance(evidence, dict) or type(evidence.get("hooked")) is not bool:
        return False
    counts = [evidence.get(key) for key in ("steps", "failures", "stepped")]
    norms = evidence.get("norms")
    return all(type(count) is int and count >= 0 for count in counts) and isinstance(norms, dict) and all(
        type(size) is int and type(value) is torch.Tensor and value.dtype == torch.float64 and value.dim() == 1
        for size, value in norms.items())


def unmatched(weights, norms):
    """Roles of the weights whose norm is no parameter's norm of their size after any recorded step."""
    missing = []
    for role, weight in weights.items():
        norm = float(torch.linalg.vector_norm(weight.double()))
        near = norms.get(weight.numel())
        if near is None or not bool(((near - norm).abs() <= RELATIVE * max(norm, 1e-300)).any()):
            missing.append(role)
    return missing


def tampering_flag(record):
    """The flag of a trained record whose step record is missing, malformed, or lost its hook; '' otherwise."""
    evidence = record.get("provenance")
    if not valid(evidence):
        return MISSING
    return "" if evidence["hooked"] else UNHOOKED


def provenance_flag(record):
    """Why a person must check that the model scored was trained in the notebook, or '' (its weights are a state
    some optimizer step of the notebook left).

    Args:
        record: the probe's trained record: "weights" {role: float64 tensor} (already validated by the judge) and
            "provenance" (see grading/probe/provenance.py's Ledger.provenance).
    """
    flag = tampering_flag(record)
    if flag:
        return flag
    evidence, weights = record["provenance"], record["weights"]
    if evidence["steps"] == 0:
        return NO_STEP
    missing = unmatched(weights, evidence["norms"])
    return NOT_A_STEP.format(unmatched=len(missing), total=len(weights)) if missing else ""


TRAINED_ON_STAND_INS = ("{trained} of the {total} stand-ins that the grader's sandbox holds in place of the scored "
                        "data went through the notebook's training steps: it trains on the data it is scored on "
                        "(in the sandbox the stand-ins buy nothing; at home the real data would): {check}")
UNWATCHED = ("the notebook removed the grader's watch on training batches, so whether it trains on the data it is "
             "scored on is unknown (possible tampering): {check}")
CHECK_DATA = "check by hand what the notebook trains on"


def sightings_flag(record):
    """Why a person must check what the notebook trained on, or '': the probe's Sightings (grading/probe/
    provenance.py) saw stand-ins of the scored data in a training batch, or lost its hook. A sandbox without
    stand-in rows records none, and nothing is said."""
    evidence = record.get("provenance")
    sightings = evidence.get("stand_ins") if isinstance(evidence, dict) else None
    if sightings is None:
        return ""
    counts = [sightings.get(key) if isinstance(sightings, dict) else None for key in ("trained", "total")]
    if not isinstance(sightings, dict) or type(sightings.get("hooked")) is not bool or \
            not all(type(count) is int and count >= 0 for count in counts):
        return MISSING
    if not sightings["hooked"]:
        return UNWATCHED.format(check=CHECK_DATA)
    trained, total = counts
    return TRAINED_ON_STAND_INS.format(trained=trained, total=total, check=CHECK_DATA) if trained else ""
