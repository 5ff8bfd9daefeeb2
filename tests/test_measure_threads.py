"""tools/measure_threads.py prints its table for both conditions and leaves nothing running behind it."""
import pytest
import multiprocessing
import re

import torch

from tools import measure_threads  # tools/ is a package of the checkout, on sys.path through conftest.py

pytestmark = pytest.mark.full


def test_table_has_both_thread_counts_in_both_conditions(capsys):
    threads = torch.get_num_threads()
    measure_threads.main(["--load", "1", "--rounds", "1", "--steps", "2"])
    table = capsys.readouterr().out
    rows = re.findall(r"^(machine as it is|\+ 1 busy process\(es\)) +([12]) +(\d+\.\d) .* -> \d+\.\d\d$", table, re.M)
    assert [(condition[0], count) for condition, count, _ in rows] == [("m", "1"), ("m", "2"), ("+", "1"), ("+", "2")]
    assert all(float(ms) > 0 for _, _, ms in rows)
    assert torch.get_num_threads() == threads and not multiprocessing.active_children()
