"""`python -m tools.bench --assignment NAME [--quick] [--out DIR] [--threads N]`: see tools/bench/runner.py."""
from tools.bench.runner import main

main()
