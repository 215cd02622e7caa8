import sys, pathlib
# Make the repository root importable for tests that are not run through the installed package.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))


def pytest_collection_modifyitems(session, config, items):
    """Run the heavy modules first: those that build and run a simulator (the cocotb runs, the exports, the
    Verilator harnesses of the fp units), whose items take 10-50 s, before the Amaranth block tests, whose
    items take a few seconds. pytest-xdist's ``worksteal`` splits the list between the workers and lets an
    idle one take the rest of the other's: heavy items at the end of the list (their files sort last) left
    one worker busy for minutes while the other had nothing to take. A stable sort: within each group the
    collection order (and each module's own order) is kept."""
    def heavy(item):
        path = pathlib.Path(str(item.fspath))
        top = path.parent.name == "tests"           # tests/test_*.py: cocotb runs, exports, programs
        fp_sim = path.parent.name == "fp" and "verilator" in path.name
        return top or fp_sim or item.get_closest_marker("cocotb") is not None
    items.sort(key=lambda item: not heavy(item))
