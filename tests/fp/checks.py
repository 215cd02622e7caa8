"""Comparison helper: bit-exact, with a readable report of the first mismatches."""

import numpy as np


def assert_bits_equal(got, want, a, b=None, what=""):
    got = np.asarray(got, dtype=np.uint64)
    want = np.asarray(want, dtype=np.uint64)
    assert got.shape == want.shape
    bad = np.nonzero(got != want)[0]
    if len(bad):
        rows = []
        for i in bad[:10]:
            ops = f"a={int(a[i]):#x}" + ("" if b is None else f" b={int(b[i]):#x}")
            rows.append(f"  {ops} got={int(got[i]):#x} want={int(want[i]):#x}")
        raise AssertionError(f"{what}: {len(bad)} of {len(got)} mismatches\n" + "\n".join(rows))
