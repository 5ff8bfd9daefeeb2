"""Generic probe of a wrong vector: the coefficients that write it as a sum of the parts it should be made of."""
import torch


def coefficients(vector, parts, tolerance=1e-6):
    """{name: coefficient} with vector = sum of coefficient * part, each rounded to a whole number, when that holds
    to the tolerance; None otherwise (the parts do not explain the vector).

    Args:
        vector: (D,); parts: {name: (D,)}, linearly independent.
    """
    names = list(parts)
    basis = torch.stack([parts[name].detach().double().reshape(-1) for name in names], dim=1)  # (D, P)
    target = vector.detach().double().reshape(-1, 1)  # (D, 1)
    if basis.size(0) <= basis.size(1):
        return None
    solution = torch.linalg.lstsq(basis, target).solution.reshape(-1)  # (P,)
    whole = solution.round()
    if not torch.allclose(basis @ whole, target.reshape(-1), atol=tolerance, rtol=0):
        return None
    return {name: int(value) for name, value in zip(names, whole.tolist())}
