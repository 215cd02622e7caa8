"""Benchmark cases for the GEMV family (run by ``sim.bench``; the UB is still checked against golden at the end).

Case labels: ``<K*N> MAC <C/A/B> K<k> N<n> <opcode> P<p>`` (``sim.bench.gemv_cycles_bound`` reads K, N and
B's type from them). Rows: every triple at K = 64 and 128 with N = 64 (TGEMV; TGEMV_ACC and TGEMV_BIAS for
fp16), long K and long N, and the curves over K (N = 64) and over N (K = 64) for fp16 at 1, 2, 4, ... 128.
``TILEVEC_SUBSET=p`` (the ``gemv_partial_sums=2`` bench) runs only the rows marked for it: the rate at a P
below the adder's depth. Cases that do not fit the configured UB answer UB_OUT_OF_RANGE and are skipped.
"""

import os
import random

import cocotb
import numpy as np

from golden.profiles import GEMV_TRIPLES
from rtl.isa import DType, DTYPE_BYTES, Opcode, Profile, tile, UB_ALIGN

from .gemv_commands import INIT, triple_name, values
from .harness import Harness

#: The engines of the unit these tests simulate (``Config.engines``; sim.regress builds it): a
#: unit of only what the tests exercise simulates several times faster.
UNIT_ENGINES = ('gemv',)

O = Opcode
F16T = (DType.FP32, DType.FP16, DType.FP16)


def _command(op, triple, K, N):
    """A, B, C (and C_in / bias) packed from UB address 0, dense rows."""
    c_t, a_t, b_t = triple
    up = lambda n: -(-n // UB_ALIGN) * UB_ALIGN
    a_base = 0
    b_base = up(K * DTYPE_BYTES[a_t])
    c_base = b_base + up(K * N * DTYPE_BYTES[b_t])
    i_base = c_base + up(N * DTYPE_BYTES[c_t])
    cmd = {"opcode": op, "dst": tile(c_base, 1, N, c_t), "src0": tile(a_base, 1, K, a_t),
           "src1": tile(b_base, K, N, b_t)}
    if op != O.TGEMV:
        cmd[INIT] = tile(i_base, 1, N, c_t)
    return cmd


def cases():
    """(command, in the P subset) in row order."""
    out = []
    for triple in sorted(GEMV_TRIPLES[Profile.A5], key=lambda t: [d.value for d in t]):
        out += [(_command(O.TGEMV, triple, 64, 64), False), (_command(O.TGEMV, triple, 128, 64), True)]
    out += [(_command(op, F16T, 128, 64), op == O.TGEMV_ACC) for op in (O.TGEMV_ACC, O.TGEMV_BIAS)]
    out += [(_command(O.TGEMV, (DType.INT32, DType.INT8, DType.INT8), 4095, 4), True),
            (_command(O.TGEMV, F16T, 4095, 2), False),
            (_command(O.TGEMV, F16T, 16, 1024), False)]
    pow2 = [1, 2, 4, 8, 16, 32, 64, 128]
    out += [(_command(O.TGEMV, F16T, K, 64), K in (8, 16, 32)) for K in pow2]
    out += [(_command(O.TGEMV, F16T, 64, N), N in (1, 4)) for N in pow2 if N != 64]
    return out


@cocotb.test()
async def bench_gemv(dut):
    h = await Harness.start(dut, latency=int(os.environ.get("TILEVEC_LATENCY", "32")))
    subset = h.params.get("subset") == "p"
    rng = np.random.default_rng(7)
    await h.ub_load(0, rng.integers(0, 256, h.config.ub_bytes, dtype=np.uint8).tobytes())
    P = h.config.gemv_partial_sums
    vrng = random.Random(7)
    for cmd, in_p in cases():
        if subset and not in_p:
            continue
        K, N = cmd["src1"]["valid_rows"], cmd["src1"]["valid_cols"]
        end = max(t["base"] + t["rows"] * t["cols"] * DTYPE_BYTES[t["dtype"]]
                  for t in cmd.values() if isinstance(t, dict))
        if end <= h.config.ub_bytes:            # operands of moderate magnitude (the UB's random bytes
            for slot in ("src0", "src1"):       # are mostly NaN-free but huge); a case that does not fit
                t = cmd[slot]                   # is still issued: it answers UB_OUT_OF_RANGE (skipped)
                await h.ub_load(t["base"], values(vrng, t["dtype"], t["rows"] * t["cols"]).tobytes())
        types = triple_name(tuple(cmd[s]["dtype"] for s in ("dst", "src0", "src1")))
        await h.run(cmd, label=f"bench:{K * N} MAC {types} K{K} N{N} {cmd['opcode'].name} P{P}")
    await h.check_ub()
