"""Inputs of nki_local_gather_scaled.pto (nki_local_gather.py with width 8, num_valid 20)."""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import nki_local_gather as _base  # noqa: E402


def inputs(seed=0):
    return _base.inputs(seed, rows=128, width=8, nepi=4, num_valid=20)


def reference(x):
    return _base.reference(x, nepi=4, num_valid=20)


if __name__ == "__main__":
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "nki_local_gather_scaled.npz", **inputs())
