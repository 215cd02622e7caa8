"""All 2^32 operand pairs of fp16 add, fp16 mul, bf16 add, bf16 mul (``slow``: minutes each).

The C++ harness enumerates the pairs (a outer, b inner) through a combinational unit compiled by
Verilator and compares each result with the numpy / ml_dtypes reference streamed to it on stdin,
computed here in chunks of a-values. Prints and asserts the mismatch count.

    .venv/bin/python -m pytest -m slow tests/fp/test_exhaustive.py -s
"""

import subprocess
import time

import numpy as np
import pytest

from rtl.fp import BF16, FP16

from .ref import ref_add, ref_mul
from .vharness import build, make_unit

CHUNK = 64          # a-values per numpy call (64 * 65536 results)


def exhaustive(kind, fmt, a_lo=0, a_hi=1 << 16):
    """Run the sweep for a in [a_lo, a_hi) (a multiple of CHUNK); returns (harness output, seconds)."""
    exe = build(f"x_{fmt}_{kind}", [make_unit(kind, fmt, 0)], cflags="-O3")
    ref = ref_add if kind == "add" else ref_mul
    b = np.arange(1 << 16, dtype=np.uint16)
    t0 = time.time()
    p = subprocess.Popen([exe, "exh16", "0", str(a_lo), str(a_hi)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=False)
    for a0 in range(a_lo, a_hi, CHUNK):
        a = np.repeat(np.arange(a0, a0 + CHUNK, dtype=np.uint16), 1 << 16)
        want = ref(fmt, a, np.tile(b, CHUNK)).astype("<u2")
        p.stdin.write(want.tobytes())
    p.stdin.close()
    out = p.stdout.read().decode()
    assert p.wait() == 0
    return out, time.time() - t0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["add", "mul"])
@pytest.mark.parametrize("fmt", [FP16, BF16], ids=str)
def test_all_pairs(fmt, kind):
    out, seconds = exhaustive(kind, fmt)
    print(f"\n{fmt} {kind}: {out.strip()} ({seconds:.0f} s)")
    assert out.strip().endswith(f"pairs={1 << 32}")
    assert "mismatches=0 " in out, out


if __name__ == "__main__":
    import sys
    for spec in sys.argv[1:] or ["fp16:add", "fp16:mul", "bf16:add", "bf16:mul"]:
        f, k = spec.split(":")
        out, s = exhaustive(k, {"fp16": FP16, "bf16": BF16}[f])
        print(f, k, out.strip().splitlines()[-1], f"{s:.0f} s", flush=True)
