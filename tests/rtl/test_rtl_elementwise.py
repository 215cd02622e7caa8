"""ElementwiseEngine in Amaranth's simulator against the golden machine (rtl_engine_bench: real UB, whole UB
compared after every command): every opcode of the family, every type, both TROWEXPAND modes and operand
placements, every TPART validity pattern and layout combination, in-place destinations, 16- and 32-byte
words; the cycle counts of the streaming datapath against the cycle model (``ElementwiseEngine.cycles``,
checked for every command it claims exact); and the timing contract's checks (``require``)."""

import random
from types import SimpleNamespace

import pytest
from amaranth.lib import data

from rtl.config import preset
from rtl.engines.base import tile_lines, words_of
from rtl.engines.elementwise.engine import ElementwiseEngine
from rtl.engines.elementwise.lanes import ElementwiseLanes
from rtl.engines.elementwise.model import pattern_ready
from rtl.engines.elementwise.pattern import PatternBuilder
from rtl.engines.elementwise.walker import MAX_WORD_BYTES, SegmentWalker
from rtl.isa import DType, DTYPE_BYTES, INSTRUCTIONS, Layout, Opcode, Status
from rtl.lib.contract import ContractError
from rtl.top import VectorUnit

from cocotb_tests.ew_commands import EW_OPS, PART_OPS, ROWEXPAND_OPS, part_command, random_command, rowexpand_command
from rtl_contract import built_not_used
from rtl_engine_bench import run_engine

ROW, COL = Layout.ROW_MAJOR, Layout.COL_MAJOR


def _types(op, config):
    return sorted(INSTRUCTIONS[op].types[config.profile], key=lambda d: d.value)


def _run(config, cmds, seed):
    """Run ``cmds``; every command's cycles must be the cycle model's where it gives a figure."""
    rng = random.Random(seed)
    results = run_engine(config, ElementwiseEngine, cmds, ub_init=rng.randbytes(config.ub_bytes), seed=seed)
    for r, c in zip(results, cmds):
        want = ElementwiseEngine.cycles(config, c)
        assert want is None or r.cycles == want, (c["opcode"].name, c["dst"]["dtype"].name, r.cycles, want)
    return results


@pytest.mark.parametrize("op", EW_OPS, ids=lambda o: o.name)
def test_every_type(op):
    """Each type of the op, both modes / placements (TROWEXPAND*) or a random validity pattern and layouts
    (TPART*), on the small configuration."""
    config = preset("small")
    rng = random.Random(op.value)
    cmds = []
    for dtype in _types(op, config):
        for k in range(2):
            if op in ROWEXPAND_OPS:
                cmd = rowexpand_command(rng, config, op, dtype, mode=1 + k, expanded=rng.randrange(2),
                                        R=rng.randrange(1, 6), C=rng.randrange(1, 20))
            else:
                R, C = rng.randrange(1, 6), rng.randrange(1, 20)
                lay = tuple(rng.choice([ROW, COL]) for _ in range(3)) if k else (ROW,) * 3
                cmd = part_command(rng, config, op, dtype, R=R, C=C, partial=(rng.randrange(R + 1), rng.randrange(C + 1)),
                                   full_slot=rng.randrange(2), layouts=lay)
            if cmd:
                cmds.append(cmd)
    results = _run(config, cmds, op.value)
    assert all(r.status == Status.OK for r in results)


#: (seed, word, lanes); the normal set runs seed 1 of 32-byte words in 8-byte lanes.
RANDOM = [(seed, word, lanes) for word, lanes in [(16, 16), (32, 8), (16, 4)] for seed in (1, 2)]


@pytest.mark.parametrize("seed, word, lanes", [
    pytest.param(*c, marks=() if c == (1, 32, 8) else pytest.mark.slow) for c in RANDOM])
def test_random(seed, word, lanes):
    """Random commands; lanes narrower than the word (a word in 2 or 4 beats) included. The normal set keeps
    seed 1 of 32-byte words in 8-byte lanes (4 beats a word, as 16-byte words in 4-byte lanes); the rest is
    ``slow`` (each run builds its own simulator, ~15 s): on ``small`` (16/16) every other test here runs, on
    ``default``'s 4-byte lanes (8 beats) ``test_rtl_write_stalls``, and the whole
    unit's cocotb runs mix opcodes and types back to back."""
    config = preset("small", ew_lane_bytes=lanes) if word == 16 else preset("default", ub_bytes=8192, ew_lane_bytes=lanes)
    rng = random.Random(seed * 100 + word)
    cmds = [c for c in (random_command(rng, config) for _ in range(30)) if c][:16]
    results = _run(config, cmds, seed)
    assert all(r.status == Status.OK for r in results)


@pytest.mark.parametrize("mode", [1, 2])
def test_both_sources_full(mode):
    """Both sources have dst's valid shape: src1 is the expanded operand (mode 1: one column, src1
    column-major; mode 2: exactly 32 / size columns, src1 row-major), e.g. an 8-column fp32 mode-2 multiply."""
    config = preset("small")
    rng = random.Random(mode)
    cmds = []
    for op in ROWEXPAND_OPS:
        for dtype in (DType.FP32, DType.FP16, DType.INT8):
            C = 1 if mode == 1 else 32 // DTYPE_BYTES[dtype]
            cmd = rowexpand_command(rng, config, op, dtype, mode=mode, expanded=1, R=4, C=C)
            cmds.append(cmd)
    assert all(r.status == Status.OK for r in _run(config, cmds, 5))


def test_empty_and_in_place():
    config = preset("small")
    rng = random.Random(9)
    cmds = [
        part_command(rng, config, Opcode.TPARTADD, DType.FP32, R=0, C=4, partial=(0, 0), full_slot=0, layouts=(ROW,) * 3),
        part_command(rng, config, Opcode.TPARTADD, DType.INT16, R=6, C=9, partial=(2, 3), full_slot=1,
                     layouts=(ROW,) * 3, in_place=1),
        part_command(rng, config, PART_OPS[-1], DType.FP16, R=5, C=11, partial=(5, 0), full_slot=0,
                     layouts=(COL,) * 3, in_place=0),
        rowexpand_command(rng, config, Opcode.TROWEXPANDMUL, DType.BF16, mode=2, expanded=1, R=7, C=21, in_place=True),
        rowexpand_command(rng, config, ROWEXPAND_OPS[-1], DType.UINT8, mode=1, expanded=0, R=7, C=40, in_place=True),
    ]
    results = _run(config, cmds, 9)
    assert results[0].cycles == ElementwiseEngine.EMPTY_CYCLES == ElementwiseEngine.cycles(config, cmds[0])
    assert all(r.status == Status.OK for r in results)


@pytest.mark.parametrize("lane_bytes", [32, 8])
def test_throughput(lane_bytes):
    """One destination word per W / ew_lane_bytes cycles: a 16-row tile takes that per destination word plus
    a fixed overhead (``ElementwiseEngine.cycles``, exact for every case here), the same for both modes, both
    placements and TPART with a partial source; rows of two and of three words (an odd pitch: rows at
    every alignment)."""
    config = preset("default", ub_bytes=16384, ew_lane_bytes=lane_bytes)
    W = config.ub_word_bytes
    rng = random.Random(3)
    cases = []
    for dtype in (DType.FP32, DType.FP16, DType.INT8):
        C = 2 * W // DTYPE_BYTES[dtype]                  # two words per row
        cases.append(rowexpand_command(rng, config, Opcode.TROWEXPANDMUL, dtype, mode=1, expanded=1, R=16, C=C, pad=False))
        cases.append(rowexpand_command(rng, config, Opcode.TROWEXPANDMUL, dtype, mode=2, expanded=0, R=16, C=C, pad=False))
        cases.append(part_command(rng, config, Opcode.TPARTADD, dtype, R=16, C=C, partial=(9, C - 3), full_slot=1,
                                  layouts=(ROW,) * 3))
        C3 = C + 1                                       # an odd pitch: two or three words per row
        cases.append(rowexpand_command(rng, config, Opcode.TROWEXPANDSUB, dtype, mode=1, expanded=0, R=9, C=C3,
                                       pad=False))
        cases.append(rowexpand_command(rng, config, Opcode.TROWEXPANDMAX, dtype, mode=2, expanded=1, R=9,
                                       C=C3 + W // 2, pad=False))
    # every case here has a figure (_run compares it with the RTL's)
    assert all(ElementwiseEngine.cycles(config, c) is not None for c in cases)
    results = _run(config, cases, 3)
    assert len(results) == len(cases)


def test_cycle_model_small():
    """The cycle model on 16-byte words (a mode-2 block is two words, so the first row waits a cycle more than
    ``PATTERN_CYCLES``) and where it gives no figure: TPART with a source in the other order (one element per
    cycle), and TROWEXPAND with one-word rows, whose patterns come after the rows are due: the RTL takes
    longer than the first row's wait accounts for."""
    config = preset("small")
    W = config.ub_word_bytes
    rng = random.Random(4)
    exact = [rowexpand_command(rng, config, Opcode.TROWEXPANDMUL, DType.FP32, mode=2, expanded=1, R=5, C=8, pad=False),
             rowexpand_command(rng, config, Opcode.TROWEXPANDADD, DType.INT8, mode=2, expanded=0, R=4, C=37, pad=False),
             rowexpand_command(rng, config, Opcode.TROWEXPANDMIN, DType.FP16, mode=1, expanded=0, R=9, C=16, pad=False)]
    late = [rowexpand_command(rng, config, Opcode.TROWEXPANDMUL, DType.FP32, mode=1, expanded=1, R=9, C=4, pad=False),
            rowexpand_command(rng, config, Opcode.TROWEXPANDMUL, DType.FP32, mode=2, expanded=1, R=5, C=4, pad=False)]
    elem = [part_command(rng, config, Opcode.TPARTMUL, DType.INT16, R=3, C=5, partial=(2, 4), full_slot=0,
                         layouts=(ROW, COL, ROW))]
    assert all(ElementwiseEngine.cycles(config, c) is not None for c in exact)
    assert all(ElementwiseEngine.cycles(config, c) is None for c in late + elem)
    results = _run(config, exact + late + elem, 4)
    for r, c in zip(results[len(exact):], late):
        words = sum(words_of(a, n, W) for a, n in tile_lines(c["dst"]))
        first_row_wait = pattern_ready(ElementwiseEngine, config, c)[0] - ElementwiseEngine.FIRST_WORD_CYCLES
        assert r.cycles > words + ElementwiseEngine.FIXED + ElementwiseLanes.latency() + first_row_wait


def test_go_before_first_word():
    """The cycle model assumes ``go`` (the checker's verdict, ``VectorUnit.GO_DELAY`` after ``start``) is
    high before the first full-operand word reaches the combiner, which takes nothing before it."""
    assert VectorUnit.GO_DELAY <= ElementwiseEngine.FIRST_WORD_CYCLES


def _elaborate(engine_cls, config):
    """The engine's own ``elaborate`` (its sections and their ``require``s; the parts are built, not
    elaborated)."""
    engine_cls(config).elaborate(None)


@pytest.mark.parametrize("override", [{"WRITER_QUEUE_DEPTH": 16}, {"LANE_DEPTHS": dict(add_depth=20, mul_depth=20)},
                                      {"INFO_QUEUE_DEPTH": 8}, {"INFO_QUEUE_SLACK": 1}],
                         ids=["writer-queue", "deep-lanes", "info-queue", "info-slack"])
def test_queue_contracts(override):
    """The queues' couplings (``ElementwiseEngine._segments``) catch a depth that breaks them: the writer's
    line queue against the segments in flight to the writer (the lanes' latency among them), the info
    queue against those in flight to the combiner and its slack against the register stage in front."""
    config = preset("small")
    with built_not_used():
        _elaborate(ElementwiseEngine, config)                   # the engine's own depths hold
        with pytest.raises(ContractError):
            _elaborate(type("Broken", (ElementwiseEngine,), dict(override, __module__=__name__)), config)


def test_width_contracts():
    """The walker's mode-1 counts hold ``W / size`` only up to ``MAX_WORD_BYTES``; the pattern builder
    folds whole words or half-pattern words."""
    layout = data.StructLayout({"data": 64, "be": 8, "last": 1})
    with built_not_used():
        SegmentWalker(SimpleNamespace(ub_word_bytes=MAX_WORD_BYTES))
        with pytest.raises(ContractError):
            SegmentWalker(SimpleNamespace(ub_word_bytes=2 * MAX_WORD_BYTES))
        with pytest.raises(ContractError):
            PatternBuilder(SimpleNamespace(ub_word_bytes=8), layout).elaborate(None)


def _matrix(config, ops, rng, *, sizes):
    """Every type x mode x operand placement (TROWEXPAND*) and every type x validity pattern x layout
    combination x full-operand slot (TPART*) of ``ops``, small shapes from ``sizes``."""
    cmds = []
    for op in ops:
        for dtype in _types(op, config):
            if op in ROWEXPAND_OPS:
                for mode in (1, 2):
                    for expanded in (0, 1):
                        R, C = rng.choice(sizes)
                        cmds.append(rowexpand_command(rng, config, op, dtype, mode=mode, expanded=expanded, R=R, C=C))
                continue
            layouts = [(a, b, c) for a in (ROW, COL) for b in (ROW, COL) for c in (ROW, COL)]
            for k, pattern in enumerate(["full", "rows", "cols", "both", "empty"]):
                R, C = rng.choice(sizes)
                part = {"full": (R, C), "rows": (R - 1, C), "cols": (R, C - 1), "both": (R - 1, C - 2),
                        "empty": (0, C)}[pattern]
                part = (max(part[0], 0), max(part[1], 0))
                for full_slot in (0, 1):
                    lay = layouts[(k * 2 + full_slot + rng.randrange(8)) % 8]
                    cmds.append(part_command(rng, config, op, dtype, R=R, C=C, partial=part, full_slot=full_slot,
                                             layouts=lay))
    return [c for c in cmds if c is not None]


@pytest.mark.parametrize("family", ["rowexpand", "part"])
def test_matrix_base_ops(family):
    """TROWEXPANDMUL: every type x mode x placement; TPARTADD: every type x validity pattern x full slot,
    layouts cycling through all 8 combinations."""
    config = preset("small")
    rng = random.Random(11)
    ops = (Opcode.TROWEXPANDMUL,) if family == "rowexpand" else (Opcode.TPARTADD,)
    cmds = _matrix(config, ops, rng, sizes=[(3, 5), (4, 9), (2, 17), (5, 3)])
    assert len(cmds) >= 30
    assert all(r.status == Status.OK for r in _run(config, cmds, 11))


@pytest.mark.slow
@pytest.mark.parametrize("word", [16, 32])
def test_matrix_every_op(word):
    """The whole matrix for every opcode of the family, 16- and 32-byte words (make test-slow)."""
    config = preset("small") if word == 16 else preset("default", ub_bytes=8192)
    rng = random.Random(word)
    cmds = _matrix(config, EW_OPS, rng, sizes=[(3, 5), (4, 9), (2, 17), (5, 3), (7, 40), (16, 8)])
    assert all(r.status == Status.OK for r in _run(config, cmds, word))


@pytest.mark.parametrize("depth, slack", [(4, 1), (4, 2), (16, 2)])
def test_flag_fifo(depth, slack):
    """rtl.engines.elementwise.walker.FlagFifo against a model queue, random writes (whenever not full, so also past w_rdy
    when slack > 1) and reads (whenever r_rdy): the data in order, and on every cycle ``r_rdy`` = not
    empty and ``w_rdy`` = at least ``slack`` entries free, both from registers."""
    from amaranth.sim import Simulator
    from rtl.engines.elementwise.walker import FlagFifo

    dut = FlagFifo(8, depth, slack=slack)
    rng = random.Random(depth * 10 + slack)
    seen = {"full": 0, "empty": 0, "past_w_rdy": 0}

    async def bench(ctx):
        model, nxt = [], 0
        for _ in range(3000):
            assert ctx.get(dut.r_rdy) == (len(model) > 0)
            assert ctx.get(dut.w_rdy) == (len(model) <= depth - slack)
            if model:
                assert ctx.get(dut.r_data) == model[0]
            w = len(model) < depth and rng.random() < 0.55
            r = len(model) > 0 and rng.random() < 0.5
            seen["full"] += len(model) == depth
            seen["empty"] += not model
            seen["past_w_rdy"] += w and not ctx.get(dut.w_rdy)
            ctx.set(dut.w_en, w)
            ctx.set(dut.w_data, nxt)
            ctx.set(dut.r_en, r)
            await ctx.tick()
            if r:
                model.pop(0)
            if w:
                model.append(nxt)
                nxt = (nxt + 1) % 256

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen["full"] and seen["empty"] and (slack == 1 or seen["past_w_rdy"])


def _stream(config, cmds, seed, **options):
    """Run ``cmds`` back to back on an engine built with ``overlap`` (``EngineBench.execute_overlapped``)."""
    from rtl_engine_bench import EngineBench
    rng = random.Random(seed)
    bench = EngineBench(config, ElementwiseEngine(config, overlap=True), seed=seed, **options)
    bench.ub_write(0, rng.randbytes(config.ub_bytes))
    out = {}

    async def stimulus(b):
        out["cycles"], out["overlapped"] = await b.execute_overlapped(cmds)
    bench.run(stimulus)
    return out["cycles"], out["overlapped"]


#: (preset, ew_lane_bytes, write stalls) of the overlap sweep, each with seeds 0-5 (``slow``); the normal set runs
#: :data:`OVERLAP_NORMAL`.
OVERLAP_SWEEP = [("small", 16, False), ("small", 4, True), ("default", 8, True), ("small", 16, True)]
#: Seed 1 of the K = 4 case with stalls found the expanded operand's first line written into reader B's full
#: line queue (the previous instruction's lines still in it): kept.
OVERLAP_NORMAL = [("small", 16, False, 0), ("small", 4, True, 1)]


@pytest.mark.parametrize("name, lanes, stalls, seed", [
    pytest.param(*c, seed, marks=() if (*c, seed) in OVERLAP_NORMAL else pytest.mark.slow)
    for c in OVERLAP_SWEEP for seed in range(6)])
def test_overlap_random_stream(name, lanes, stalls, seed):
    """``overlap``: 50 random commands of every kind (TPART* and TROWEXPAND* mixed, so the flags of the
    combiner, the pattern builder and the lanes change between instructions in flight; empty regions, whose
    ``done`` must wait for the older ones) back to back, each started at ``release`` unless it conflicts with
    one in flight (``EngineBench.execute_overlapped``): dones in order with each command's bytes written, the
    UB equal to the commands run one at a time, and at least a third started while another was in flight.
    ``stalls``: the write port refuses words; lanes of 4 or 8 bytes: a word in 4 beats (K = 4)."""
    config = preset(name, ew_lane_bytes=lanes, ub_write_queues=True, **({"ub_bytes": 8192} if name == "default" else {}))
    rng = random.Random(seed * 7 + lanes)
    cmds = []
    while len(cmds) < 50:
        if rng.random() < 0.08:
            c = part_command(rng, config, Opcode.TPARTADD, DType.FP16, R=0, C=rng.randrange(1, 8), partial=(0, 0),
                             full_slot=0, layouts=(ROW,) * 3)
        else:
            c = random_command(rng, config, small=rng.random() < 0.7)
        if c:
            cmds.append(c)
    cycles, overlapped = _stream(config, cmds, seed, write_stalls=stalls)
    assert overlapped >= len(cmds) // 3, (overlapped, len(cmds))


@pytest.mark.parametrize("lanes, mode", [(16, 2), (4, 1), pytest.param(16, 1, marks=pytest.mark.slow),
                                         pytest.param(4, 2, marks=pytest.mark.slow)])
def test_overlap_trowexpand_stream(lanes, mode):
    """Independent TROWEXPANDMULs back to back (double_buffer's compute): the engine takes each next one as soon
    as its walker has finished the previous one, as for TPART* (reader B's lines carry their instruction's
    parity), and the pattern builder moves on to the next one's expanded lines as soon as it has the current
    one's patterns (``pattern_context``), so its first row's pattern waits in the queue when the combiner
    gets there: each after the first costs its words and nothing more, but for the cycle the builder takes
    to move on where it is no faster than the combiner (mode 2 at K = 1: a row is one block, a pattern per
    row's words; it has no lead to hide that cycle in). (Before the tenth session the builder
    waited for the combiner, and each later one paid the expanded operand's first line, ``line_words``, and
    ``PatternBuilder.LATENCY`` on top; released only at the last word into the lanes, a TROWEXPANDMUL paid
    its whole setup and fill: ~45 cycles each here at K = 1.)"""
    config = preset("small", ub_bytes=16384, ub_write_queues=True, ew_lane_bytes=lanes)
    t = lambda base, c, lay=ROW: {"base": base, "rows": 16, "cols": c, "valid_rows": 16, "valid_cols": c,
                                  "dtype": DType.FP16, "layout": lay}
    cmds, n = [], 8
    for k in range(n):      # dst, full source, expanded source: 512 bytes apart, none shared
        base = k * 3 * 512
        e = t(base + 1024, 16) if mode == 2 else t(base + 1024, 1, COL)
        cmds.append({"opcode": Opcode.TROWEXPANDMUL, "dst": t(base, 16), "src0": t(base + 512, 16), "src1": e})
    one = ElementwiseEngine.cycles(config, cmds[0])
    K = config.ub_word_bytes // lanes
    words = 512 // config.ub_word_bytes
    cycles, overlapped = _stream(config, cmds, 3)
    assert overlapped == n - 1
    each = words * K + (mode == 2 and K == 1)
    assert cycles == one + (n - 1) * each, (cycles, one, each)


@pytest.mark.parametrize("lanes", [16, 4])
def test_overlap_hides_the_fill(lanes):
    """A stream of independent 16 x 16 fp16 TPARTADDs (issue #33's stream) on ``small``: with ``overlap`` the
    engine takes each next one when its walker has finished the previous one, and the next one's setup,
    reads and fill run under the previous one's last words: the stream costs one instruction's cycles
    (:meth:`ElementwiseEngine.cycles`) plus ``K`` cycles per destination word of the others, exactly."""
    config = preset("small", ub_bytes=16384, ub_write_queues=True, ew_lane_bytes=lanes)
    cmds, n = [], 8
    for k in range(n):      # dst, src0, src1 of 512 bytes each, none shared
        t = lambda base: {"base": base, "rows": 16, "cols": 16, "valid_rows": 16, "valid_cols": 16,
                          "dtype": DType.FP16, "layout": ROW}
        base = k * 3 * 512
        cmds.append({"opcode": Opcode.TPARTADD, "dst": t(base), "src0": t(base + 512), "src1": t(base + 1024)})
    one = ElementwiseEngine.cycles(config, cmds[0])
    K = config.ub_word_bytes // lanes
    words = 512 // config.ub_word_bytes
    cycles, overlapped = _stream(config, cmds, 3)
    assert overlapped == n - 1
    assert cycles == one + (n - 1) * words * K, (cycles, one, words * K)
