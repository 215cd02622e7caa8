"""Inputs of double_buffer_32.pto: double_buffer.pto's loop over 32 tiles (its ``program(32)``), where the
first load and the last store weigh less against the loop than over 8 tiles."""
import sys

import numpy as np

from double_buffer import program, reference  # noqa: F401 (the example's reference)
from double_buffer import inputs as _inputs

TILES = 32


def inputs(seed=0):
    return _inputs(seed, TILES)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pto"]:
        sys.stdout.write(program(TILES, "double_buffer_32"))
    else:
        np.savez(sys.argv[1] if len(sys.argv) > 1 else "double_buffer_32.npz", **inputs())
