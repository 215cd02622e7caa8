"""GEMV MAC array products (rtl/engines/gemv/mac.py ``MacArray`` on Verilator, built ``-O3``): all 2^32 operand
pairs of fp16 x fp16 and bf16 x bf16 (``slow``: tens of minutes each).

Every cycle is one step, a block of its own (tag real = first = final = last = 1): ``a`` and the next 16
b values in the 16 lanes of the B word (``gemv_lanes=16``, 32-byte words: every lane used for 2-byte
types); the harness compares each lane's ``fin_data`` (= product + (-0.0) = the product) ``LATENCY``
cycles later with ``golden.numerics.widening_product`` streamed on stdin, computed here in chunks of
a-values, and checks ``fin_valid`` on every cycle.

    .venv/bin/python -m pytest -m slow tests/fp/test_gemv_mac_exhaustive.py -s -k FP16
    .venv/bin/python -m tests.fp.test_gemv_mac_exhaustive fp16 bf16
"""

import subprocess
import time

import numpy as np
import pytest

from rtl.engines.gemv.mac import OperandKind

from .gemv_vharness import KIND_SIZE, build, reference

CHUNK = 64          # a-values per numpy call (64 * 65536 products)
#: Lanes of the sweep build: 32-byte B words hold 16 two-byte elements.
LANES = 16


def exhaustive(a_kind, b_kind, a_lo=0, a_hi=None, lanes=LANES, cflags="-O3"):
    """Every pair (a, b) with a in [a_lo, a_hi) (multiples of CHUNK, or a_hi the end); returns
    (harness output, seconds)."""
    h = build(lanes=lanes, cflags=cflags)
    size = KIND_SIZE[a_kind]
    assert KIND_SIZE[b_kind] == size
    nb = 1 << (8 * size)
    a_hi = nb if a_hi is None else a_hi
    acc = int(a_kind == OperandKind.INT8)
    b = np.arange(nb, dtype=np.uint32)
    t0 = time.time()
    p = subprocess.Popen([h.exe, "exh", str(size), str(a_kind.value), str(b_kind.value), str(acc),
                          str(h.latency), str(a_lo), str(a_hi)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=False)
    for a0 in range(a_lo, a_hi, CHUNK):
        a = np.arange(a0, min(a0 + CHUNK, a_hi), dtype=np.uint32)
        want = reference(a_kind, b_kind, a[:, None], b[None, :])
        p.stdin.write(np.ascontiguousarray(want, "<u4").tobytes())
    p.stdin.close()
    out = p.stdout.read().decode()
    assert p.wait() == 0, out
    return out, time.time() - t0


@pytest.mark.slow
@pytest.mark.parametrize("kind", [OperandKind.FP16, OperandKind.BF16], ids=lambda k: k.name)
def test_all_pairs(kind):
    out, seconds = exhaustive(kind, kind)
    print(f"\n{kind.name} x {kind.name}: {out.strip()} ({seconds:.0f} s)")
    assert f"pairs={1 << 32} " in out, out
    assert "mismatches=0 " in out and out.strip().endswith("valid_errors=0"), out


if __name__ == "__main__":
    import sys
    for name in sys.argv[1:] or ["fp16", "bf16"]:
        k = OperandKind[name.upper()]
        out, s = exhaustive(k, k)
        print(name, out.strip().replace("\n", " | "), f"{s:.0f} s", flush=True)
