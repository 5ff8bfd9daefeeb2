"""Each held-out mistake beside what its check said: `python -m tools.heldout_messages [--assignment NAME] >
messages.jsonl`.

One JSON line per mistake of course/<name>/tests/heldout_round<N>.py (its LIST, a tools.heldout.HeldOut): the
assignment, round, task, name, what is wrong (the list's own words) and the check's sentence, for a reader who judges
whether the sentence names the mistake (named, observed only, or wrong advice). Nothing here judges: the naming rate
of issue 43 comes from that reading.
"""
import argparse
import json
import sys

from tools.heldout import check_said, held_out_lists


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", help="one assignment (default: every one that has a list)")
    parser.add_argument("--round", type=int, help="one round of lists (default: every round)")
    args = parser.parse_args(argv)
    for (name, number), module in held_out_lists(args.round).items():
        if args.assignment and name != args.assignment:
            continue
        for item in module.MISTAKES:
            try:
                passed, sentence = check_said(name, module.LIST, item)
            except Exception as error:  # noqa: BLE001 -- the list's own code failed: reported as such
                passed, sentence = False, f"(the mistake could not be built: {type(error).__name__}: {error})"
            print(json.dumps({"assignment": name, "round": number, "task": item["task"], "name": item["name"],
                              "what": item["what"], "passed": passed, "said": sentence}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
