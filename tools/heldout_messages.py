"""Each held-out mistake beside what its check said: `python -m tools.heldout_messages [--list heldout_round2]
[--assignment NAME] > messages.jsonl`.

One JSON line per mistake of course/<name>/tests/<list>.py: the assignment, task, name, what is wrong (the list's own
words) and the check's sentence, for a reader who judges whether the sentence names the mistake (named, observed
only, or wrong advice). Nothing here judges: the naming rate of issue 43 comes from that reading.
"""
import argparse
import contextlib
import importlib
import io
import json
import sys

from course.registry import assignments


def said(name, module, item):
    """(passed, the check's sentence) for one mistake of the list module."""
    checks = importlib.import_module(f"checkers.{name}")
    printed = io.StringIO()
    try:
        arguments = module.mistake_arguments(item) if hasattr(module, "mistake_arguments") else \
            (module.mistake_object(item),)  # a check cell that passes several objects: the list gives them all
        with contextlib.redirect_stdout(printed):
            getattr(checks, f"check_task_{item['task']}")(*arguments)
    except checks.CheckFailure as failure:
        return False, str(failure)
    except Exception as error:  # noqa: BLE001 -- the list's own code failed: reported as such
        return False, f"(the mistake could not be built: {type(error).__name__}: {error})"
    return True, printed.getvalue().strip()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", default="heldout_round2", help="the list module in course/<name>/tests/")
    parser.add_argument("--assignment", help="one assignment (default: every one that has the list)")
    args = parser.parse_args(argv)
    for registered in assignments():
        if args.assignment and registered.name != args.assignment:
            continue
        try:
            module = importlib.import_module(f"course.{registered.name}.tests.{args.list}")
        except ModuleNotFoundError:
            continue
        for item in module.MISTAKES:
            passed, sentence = said(registered.name, module, item)
            print(json.dumps({"assignment": registered.name, "task": item["task"], "name": item["name"],
                              "what": item["what"], "passed": passed, "said": sentence}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
