"""GemvEngine built with ``overlap`` (the concurrent unit, ``rtl/engines/gemv/overlap.py``) on
``EngineBench.execute_overlapped``: each command starts at ``release`` unless it conflicts with one in flight,
``done`` must come once per command in start order with its C bytes in the UB, and the UB after the stream
must equal the golden machine's after all of them in order. Random streams of every opcode and (C, A, B)
triple with 1-row / 1-column shapes and the kinds changing between instructions in flight, with and without
write stalls; the stream's cycles against the model (each instruction after the first costs its products'
steps plus the way from ``start`` to its first product, not its pipeline's latency)."""

import random

import pytest

from rtl.config import preset
from rtl.engines.gemv import overlap as ovl
from rtl.engines.gemv.engine import GemvEngine
from rtl.isa import Command, DType, Opcode, Status, decode, encode

from golden.check import check
from cocotb_tests.gemv_commands import GEMV_OPS, gemv_command, random_pads, triples
from rtl_engine_bench import EngineBench

FP32 = DType.FP32


def _stream(config, cmds, seed, ub=None, **options):
    """Run ``cmds`` back to back on ``GemvEngine(config, overlap=True)``; returns (cycles, overlapped, trace)."""
    rng = random.Random(seed)
    bench = EngineBench(config, GemvEngine(config, overlap=True), seed=seed, **options)
    bench.ub_write(0, rng.randbytes(config.ub_bytes) if ub is None else ub)
    out, trace = {}, []

    async def stimulus(b):
        out["cycles"], out["overlapped"] = await b.execute_overlapped(cmds, trace=trace)
    bench.run(stimulus)
    return out["cycles"], out["overlapped"], trace


def _random_stream(config, rng, n, regions=4):
    """``n`` legal commands of random opcode, triple and shape (K and N of 1, around the lanes and beyond),
    command ``k`` in UB region ``k mod regions``: neighbours are independent, so most start at ``release``."""
    size = config.ub_bytes // regions
    cmds = []
    while len(cmds) < n:
        op = rng.choice(GEMV_OPS)
        triple = rng.choice(triples(config.profile))
        L = GemvEngine.lanes(config, triple[2])
        dims = (1, 2, L - 1 or 1, L, L + 1, 2 * L + 3, 9)
        K, N = rng.choice(dims + (17, 30)), rng.choice(dims)
        cmd = gemv_command(rng, config, op, triple, K, N, **random_pads(rng),
                           in_place=op != Opcode.TGEMV and rng.random() < 0.2,
                           region=(len(cmds) % regions * size, size))
        if cmd is not None and check(cmd, config) == Status.OK:
            cmds.append(cmd)
    return cmds


#: (preset, its changes, write stalls, seed) of the random streams: ``small`` (4 lanes, P = 8: the ring longer
#: than its adder), P = 2 (dummy steps, the ring no longer than its adder: the identity chosen in front of it),
#: P = 16, ``default`` (32-byte words, one lane, C lines at eight offsets in a word), 8 lanes on 16-byte words
#: (C lines of two words: the C word index across instructions), P = 1.
STREAMS = [("small", {}, False, 0), ("small", {}, True, 1), ("small", {"gemv_partial_sums": 2}, True, 2),
           ("small", {"gemv_partial_sums": 16}, False, 3), ("default", {"ub_bytes": 16384}, True, 4),
           ("small", {"gemv_lanes": 8}, True, 5), ("small", {"gemv_partial_sums": 1}, False, 6)]
#: More seeds of each, ``slow``.
STREAMS_SLOW = [(n, kw, st, seed + 10 * r) for r in range(1, 4) for n, kw, st, seed in STREAMS]


@pytest.mark.parametrize("name, changes, stalls, seed", STREAMS + [pytest.param(*c, marks=pytest.mark.slow)
                                                                 for c in STREAMS_SLOW])
def test_overlap_random_stream(name, changes, stalls, seed):
    """30 random GEMVs (every opcode, every triple of the profile: int8 and the float types, the kinds, the
    init and ``acc_int`` changing between instructions in flight; 1-row / 1-column shapes) back to back:
    bit-exact against the golden machine, dones in order, and most of them started while another was in
    flight. ``stalls``: the write port refuses words."""
    config = preset(name, ub_write_queues=True, **changes)
    rng = random.Random(seed)
    cmds = _random_stream(config, rng, 30)
    kinds = {(c["opcode"], c["src1"]["dtype"], c["dst"]["dtype"]) for c in cmds}
    assert len(kinds) >= 10 and any(c["src1"]["valid_rows"] == 1 for c in cmds)
    _, overlapped, _ = _stream(config, cmds, seed, write_stalls=stalls)
    assert overlapped >= len(cmds) // 2, (overlapped, len(cmds))


def test_overlap_kinds_alternate():
    """int8 x int8 -> int32 and fp32 / fp8 / bf16 -> fp32 alternating, one block each (the kinds, ``acc_int`` and
    the init changing at every instruction while the previous one's last block is in the MAC array and the
    reducer), then the same with several blocks and K = 1."""
    config = preset("small", ub_write_queues=True)
    rng = random.Random(7)
    size = config.ub_bytes // 4
    seq = [(Opcode.TGEMV_ACC, (DType.INT32, DType.INT8, DType.INT8)), (Opcode.TGEMV, (FP32, FP32, FP32)),
           (Opcode.TGEMV_BIAS, (DType.INT32, DType.INT8, DType.INT8)), (Opcode.TGEMV_ACC, (FP32, DType.FP8E4M3, DType.FP8E5M2)),
           (Opcode.TGEMV, (DType.INT32, DType.INT8, DType.INT8)), (Opcode.TGEMV_BIAS, (FP32, DType.BF16, DType.BF16))]
    cmds = []
    for K, N in ((9, 3), (1, 11), (20, 1)):
        for op, triple in seq:
            cmds.append(gemv_command(rng, config, op, triple, K, N, region=(len(cmds) % 4 * size, size)))
    assert None not in cmds
    _, overlapped, _ = _stream(config, cmds, 7)
    assert overlapped == len(cmds) - 1


@pytest.mark.parametrize("P", [8, 2])
def test_overlap_kinds_alternate_at_the_fire_gap(P):
    """fp32 and int8 -> int32 TGEMVs alternating with K = 32 (at least ``keep_up``), so that each one's first
    product fires ``FIRE_GAP`` cycles after the previous one's last: one empty step between them in the MAC
    array. The ring's identity for a block's first product must be the type of the step entering next (P = 8:
    the ring longer than its adder), or the identity in front of the adder that of the step entering now
    (P = 2); choosing it by the step entering now with P = 8 (the empty step, still the previous kind) fails
    here, and in no stream whose gaps are longer. The stream takes :func:`stream_cycles`, exactly."""
    config = preset("small", ub_write_queues=True, gemv_partial_sums=P)
    rng = random.Random(3)
    size = config.ub_bytes // 4
    seq = [(FP32, FP32, FP32), (DType.INT32, DType.INT8, DType.INT8)] * 3
    cmds = [gemv_command(rng, config, Opcode.TGEMV, t, 32, 4, region=(k % 4 * size, size)) for k, t in enumerate(seq)]
    assert None not in cmds and GemvEngine.steps(config, 32) >= GemvEngine.keep_up(config)
    cycles, overlapped, trace = _stream(config, cmds, 3)
    assert overlapped == len(cmds) - 1
    assert cycles == stream_cycles(config, cmds), (cycles, stream_cycles(config, cmds), trace)


def decoded(cmd):
    """``cmd`` as the cycle model takes it: the nested dict ``rtl.isa.decode`` gives for its word."""
    return decode(Command, encode(Command, cmd))


def stream_cycles(config, cmds):
    """The model of a stream of independent GEMVs each started at ``release`` (reducer keeping up,
    ``steps(K) >= keep_up``, one-word C lines): the first one's :meth:`GemvEngine.cycles`; every later one
    is started once the walker has pushed the previous one's last line, so its first A element and B word
    are there when the previous one's last product fires, and its first product comes ``FIRE_GAP`` after
    that: it adds its blocks' steps and ``FIRE_GAP - 1`` (the previous one's latency behind its last product
    and its own way from ``start`` to its first product are hidden); the last one's ``done`` comes its
    ``latency`` after its last product, as alone."""
    gap = ovl.FIRE_GAP - 1
    total = GemvEngine.cycles(config, decoded(cmds[0]))
    for c in cmds[1:]:
        b = c["src1"]
        blocks = -(-b["valid_cols"] // GemvEngine.lanes(config, b["dtype"]))
        total += gap + blocks * GemvEngine.steps(config, b["valid_rows"])
    return total


@pytest.mark.parametrize("name", ["small", "default"])
def test_overlap_stream_cycles(name):
    """A stream of 8 independent GEMVs of mixed opcodes, triples and block counts whose blocks keep the
    reducer busy (``steps(K) >= GemvEngine.keep_up``): from the first ``start`` to the last ``done`` exactly
    :func:`stream_cycles`, each later one costing its steps plus the way to its first product instead of its
    steps plus ``GemvEngine.latency``; and every one started while the previous one was in flight."""
    config = preset(name, ub_write_queues=True, ub_bytes=16384)
    rng = random.Random(11)
    K0 = GemvEngine.keep_up(config)
    size = config.ub_bytes // 4
    plan = [(Opcode.TGEMV, (FP32, FP32, FP32), K0, 1), (Opcode.TGEMV_ACC, (DType.INT32, DType.INT8, DType.INT8), K0 + 3, 2),
            (Opcode.TGEMV_BIAS, (FP32, DType.BF16, DType.BF16), K0, 3), (Opcode.TGEMV, (FP32, DType.FP16, DType.FP16), 40, 1),
            (Opcode.TGEMV_ACC, (FP32, FP32, FP32), K0 + 1, 2), (Opcode.TGEMV, (DType.INT32, DType.INT8, DType.INT8), K0, 1),
            (Opcode.TGEMV_BIAS, (FP32, DType.FP8E4M3, DType.FP8E4M3), 33, 1), (Opcode.TGEMV, (FP32, FP32, FP32), K0, 4)]
    cmds = []
    for op, triple, K, blocks in plan:
        L = GemvEngine.lanes(config, triple[2])
        cmds.append(gemv_command(rng, config, op, triple, K, blocks * L - rng.randrange(L),
                                 region=(len(cmds) % 4 * size, size)))
    assert None not in cmds
    for c in cmds:      # one-word C lines: cycles() is steady_cycles()
        b = c["src1"]
        assert GemvEngine.cycles(config, decoded(c)) == GemvEngine.steady_cycles(config, b["valid_rows"],
                                                                                   b["valid_cols"], b["dtype"])
    cycles, overlapped, trace = _stream(config, cmds, 11)
    assert overlapped == len(cmds) - 1
    assert cycles == stream_cycles(config, cmds), (cycles, stream_cycles(config, cmds), trace)
    alone = sum(GemvEngine.cycles(config, decoded(c)) for c in cmds)
    assert alone - cycles == (len(cmds) - 1) * (GemvEngine.latency(config) - ovl.FIRE_GAP + 1)
