"""Shared utilities of the course's workbooks: training, schedules, plots and measurement.

Each assignment's own data and default settings are in its module, course_lib.<assignment>.
"""
from .attention_stats import explained_variance, head_statistics
from .device import get_device, seed_everything
from .measure import Measurement, measure
from .metrics import accuracy, classification_loss
from .plotting import (LiveCurves, plot_attention_maps, plot_explained_variance, plot_history,
                       plot_lr_schedule, plot_positional_encoding, plot_scaling, use_plot_style)
from .scaling import measure_attention_scaling
from .schedule import WarmupCosineSchedule, warmup_cosine_factor
from .training import History, evaluate, stop_at_accuracy, train

__all__ = [
    "get_device", "seed_everything", "Measurement", "measure",
    "accuracy", "classification_loss", "explained_variance", "head_statistics", "LiveCurves", "plot_attention_maps",
    "plot_explained_variance",
    "plot_history", "plot_lr_schedule", "plot_positional_encoding", "plot_scaling", "use_plot_style",
    "measure_attention_scaling",
    "WarmupCosineSchedule", "warmup_cosine_factor", "History", "evaluate", "stop_at_accuracy", "train",
]
