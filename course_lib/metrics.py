"""Loss and accuracy for classifiers that output one logit (binary) or one per class."""
import torch.nn.functional as F


def classification_loss(logits, labels):
    """Binary cross-entropy for one logit per example, cross-entropy otherwise.

    Args:
        logits: (batch_size, num_classes) raw scores; num_classes == 1 means binary.
        labels: (batch_size,) 0/1 floats (binary) or class indices.

    Returns:
        scalar tensor, the mean loss.
    """
    if logits.size(-1) == 1:
        return F.binary_cross_entropy_with_logits(logits.squeeze(-1), labels.float())
    return F.cross_entropy(logits, labels.long())


def predictions(logits):
    """Predicted class per example: logit > 0 for binary, argmax otherwise. Returns (batch_size,)."""
    if logits.size(-1) == 1:
        return (logits.squeeze(-1) > 0).long()
    return logits.argmax(-1)


def accuracy(logits, labels):
    """Fraction of examples whose predicted class equals the label (a Python float)."""
    return (predictions(logits) == labels.long()).float().mean().item()
