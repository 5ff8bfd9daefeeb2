"""Run a command and print how long it took: `python tools/timed.py "stage name" -- cmd args...`."""
import subprocess
import sys
import time


def main():
    name, separator, *command = sys.argv[1:]
    assert separator == "--", "usage: timed.py NAME -- COMMAND..."
    start = time.perf_counter()
    code = subprocess.call(command)
    print(f"[stage] {name}: {time.perf_counter() - start:.0f} s (exit {code})", flush=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
