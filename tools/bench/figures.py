"""How the benches write their plots."""
import matplotlib.pyplot as plt


def saved(fig, path):
    """Write fig to path as every bench plot is written (PNG, 120 dpi, tight), close it and return path."""
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path
