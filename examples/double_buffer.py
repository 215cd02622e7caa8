"""Inputs of double_buffer.pto: eight 8 x 16 float tiles and one weight per row; y_i = x_i * w (row-broadcast).

The program itself is :func:`program` (``python examples/double_buffer.py --pto [TILES]`` prints it): the
examples ``double_buffer`` (8 tiles) and ``double_buffer_32`` (32) are its output (tests/test_pto_run.py
holds them to it)."""
import sys

import numpy as np

TILES = 8

_HEADER = """\
// Double-buffered loop over {n} tiles, unrolled (PTO-AS has no loops): in step i, TLOAD tile i+1, scale
// tile i (trowexpandmul: each row by its weight) and TSTORE tile i-1. The order is the one a pipelined
// machine overlaps (load, compute and store of three different tiles at once); the program is equal to
// running it one instruction at a time, which is what the golden model does and what the unit does
// today. No record_event / wait_event: the unit orders its pipes itself. python examples/{name}.py
// writes inputs; the bench (make bench) times it against the pipes' bound.
"""


def program(tiles=TILES, name="double_buffer"):
    """The PTO-AS text of the loop over ``tiles`` tiles (8 x 16 float each)."""
    mem, tile, w = "!pto.memref<8x16xf32>", "!pto.tile<8x16xf32>", "!pto.tile<8x1xf32, col_major>"
    args = ", ".join(f"%x{i}: {mem}" for i in range(tiles))
    outs = ", ".join([mem] * tiles)
    lines = [_HEADER.format(n=tiles, name=name).rstrip("\n"),
             f"func.func @{name}({args}, %w: {w})", f"    -> ({outs}) {{"]

    def load(i):
        lines.append(f"  %t{i} = tload %x{i} : {mem} -> {tile}")

    def scale(i):
        lines.append(f"  %s{i} = trowexpandmul %t{i}, %w : ({tile}, {w}) -> {tile}")

    def store(i):
        lines.append(f"  %y{i} = tstore %s{i} : {tile} -> {mem}")
    load(0)
    for i in range(tiles):
        if i + 1 < tiles:
            load(i + 1)
        scale(i)
        if i >= 1:
            store(i - 1)
    store(tiles - 1)
    lines.append("  return " + ", ".join(f"%y{i}" for i in range(tiles)) + f" : {outs}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def inputs(seed=0, tiles=TILES):
    rng = np.random.default_rng(seed)
    x = {f"x{i}": rng.standard_normal((8, 16)).astype(np.float32) for i in range(tiles)}
    return {**x, "w": rng.standard_normal((8, 1)).astype(np.float32)}


def reference(x):
    # one float32 multiply per element: numpy rounds it to nearest even, as the unit does
    return {f"y{i}": x[f"x{i}"] * x["w"] for i in range(sum(k.startswith("x") for k in x))}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pto"]:
        n = int(sys.argv[2]) if len(sys.argv) > 2 else TILES
        sys.stdout.write(program(n, "double_buffer" if n == TILES else f"double_buffer_{n}"))
    else:
        np.savez(sys.argv[1] if len(sys.argv) > 1 else "double_buffer.npz", **inputs())
