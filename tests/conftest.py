import sys, pathlib
# Make the repository root importable for tests that are not run through the installed package.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
