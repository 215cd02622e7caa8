"""ElementwiseLanes (default depths, pipelined, one 32-bit slot on Verilator): all 2^32 operand pairs of
fp16 and bf16 ADD, MUL and MAX (``slow``: minutes each).

Each cycle carries (a, b) in element 0 and (a, b + 1) in element 1 (b even), so each sub-lane sees half
of the pairs (the two sub-lanes are identical instances). The harness compares every result with the
golden.numerics result streamed on stdin, computed here in chunks of a-values.

    .venv/bin/python -m pytest -m slow tests/fp/test_ew_lanes_exhaustive.py -s -k "FP16 and MAX"
    .venv/bin/python -m tests.fp.test_ew_lanes_exhaustive fp16:max bf16:add
"""

import subprocess
import time

import numpy as np
import pytest

from golden import numerics
from rtl.engines.elementwise.lanes import LaneOp
from rtl.isa import DType

from .ew_vharness import GOLDEN, build

CHUNK = 64          # a-values per numpy call (64 * 65536 results)


def exhaustive(dtype, op, a_lo=0, a_hi=1 << 16):
    """Run the sweep for a in [a_lo, a_hi) (a multiple of CHUNK); returns (harness output, seconds)."""
    exe, lat = build(cflags="-O3")
    npdt = numerics.np_dtype(dtype)
    b = np.arange(1 << 16, dtype=np.uint16)
    t0 = time.time()
    p = subprocess.Popen([exe, "exh16", str(lat), str(dtype.value), str(op.value), str(a_lo), str(a_hi)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=False)
    for a0 in range(a_lo, a_hi, CHUNK):
        a = np.repeat(np.arange(a0, a0 + CHUNK, dtype=np.uint16), 1 << 16)
        want = GOLDEN[op](a.view(npdt), np.tile(b, CHUNK).view(npdt), dtype)
        p.stdin.write(np.asarray(want, npdt).view("<u2").tobytes())
    p.stdin.close()
    out = p.stdout.read().decode()
    assert p.wait() == 0
    return out, time.time() - t0


@pytest.mark.slow
@pytest.mark.parametrize("op", [LaneOp.ADD, LaneOp.MUL, LaneOp.MAX], ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [DType.FP16, DType.BF16], ids=lambda d: d.name)
def test_all_pairs(dtype, op):
    out, seconds = exhaustive(dtype, op)
    print(f"\n{dtype.name} {op.name}: {out.strip()} ({seconds:.0f} s)")
    assert f"pairs={1 << 32} " in out, out
    assert "mismatches=0 " in out and out.strip().endswith("valid_errors=0"), out


if __name__ == "__main__":
    import sys
    for spec in sys.argv[1:] or ["fp16:add", "fp16:mul", "fp16:max", "bf16:add", "bf16:mul", "bf16:max"]:
        t, o = spec.split(":")
        out, s = exhaustive({"fp16": DType.FP16, "bf16": DType.BF16}[t], LaneOp[o.upper()])
        print(t, o, out.strip().splitlines()[-1], f"{s:.0f} s", flush=True)
