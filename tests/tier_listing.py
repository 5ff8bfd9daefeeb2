"""A pytest plugin for tests/test_tiers.py: after collection, print every test's tier markers as one JSON line,
`TIERS {node id: [tier, ...]}` (`pytest -p tier_listing --collect-only`, with tests/ on PYTHONPATH)."""
import json

TIERS = ("fast", "full")  # conftest.TIERS, which tests/test_tiers.py holds this to


def pytest_collection_finish(session):
    found = {item.nodeid: [tier for tier in TIERS if item.get_closest_marker(tier)] for item in session.items}
    print("TIERS " + json.dumps(found))
