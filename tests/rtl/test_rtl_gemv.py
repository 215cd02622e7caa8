"""GemvEngine in Amaranth's simulator against the golden machine (rtl_engine_bench: real UB, whole UB
compared after every command): every (C, A, B) triple x variant,
K and N around the lane count, odd pitches, in-place and chained TGEMV_ACC, P = 1, 2, 4, 8, 16, 32 (the
accumulation order changes with P; P < ADD_DEPTH takes the dummy-step path; P = 32 uses three of the
reducer's hold registers), 16- and 32-byte words, the reducer's schedule (symbolically, every P), the
cycle model (``GemvEngine.cycles(config, cmd)``) against the RTL's cycle counts, and the timing contract's
couplings (each ``require`` made to fail)."""

import gc
import random
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable

from rtl.config import preset
from rtl.engines.gemv import fire
from rtl.engines.gemv.engine import GemvEngine
from rtl.engines.gemv.reduce import Reducer, schedule
from rtl.engines.gemv.mac import MacArray, mac_latency
from rtl.isa import Command, DType, DTYPE_BYTES, Opcode, Status, decode, encode
from rtl.lib.contract import ContractError
from rtl.top import VectorUnit
from rtl.ub.writer import UbWriter

from golden.check import check
from cocotb_tests.gemv_commands import GEMV_OPS, gemv_command, random_pads, triples
from rtl_engine_bench import run_engine

FP32 = DType.FP32


def random_command(rng, config, *, dims):
    """A random legal command of the family (random triple, K and N from ``dims``, random pads, C_in /
    bias in place one time in five), or None when it does not fit the UB."""
    op = rng.choice(GEMV_OPS)
    cmd = gemv_command(rng, config, op, rng.choice(triples(config.profile)), rng.choice(dims), rng.choice(dims),
                       **random_pads(rng), in_place=op != Opcode.TGEMV and rng.random() < 0.2)
    return cmd if cmd is not None and check(cmd, config) == Status.OK else None


def _run(config, cmds, seed, ub=None, **kw):
    rng = random.Random(seed)
    ub_init = bytearray(rng.randbytes(config.ub_bytes)) if ub is None else ub
    results = run_engine(config, GemvEngine, cmds, ub_init=bytes(ub_init), seed=seed, **kw)
    assert [r.status for r in results] == [Status.OK] * len(cmds)
    return results


@pytest.mark.parametrize("op", GEMV_OPS, ids=lambda o: o.name)
def test_every_triple(op):
    """Every triple of the A5 profile, K and N at 1, lanes - 1, lanes, lanes + 1 and beyond, random bits
    (NaN, infinities, subnormals included) everywhere in the UB; small configuration (16-byte words)."""
    config = preset("small")
    rng = random.Random(op.value)
    cmds = []
    for triple in triples(config.profile):
        L = GemvEngine.lanes(config, triple[2])
        for K, N in ((1, 1), (L - 1 or 1, L + 1), (L + 1, L), (2 * L + 3, 2 * L - 1)):
            cmd = gemv_command(rng, config, op, triple, K, N, **random_pads(rng))
            if cmd:
                cmds.append(cmd)
    _run(config, cmds, op.value)


@pytest.mark.parametrize("P", [1, 2, 4, 8, 16, 32])
def test_partial_sums(P):
    """The accumulation order for P partial sums, on 32-byte words; K across several groups of P."""
    config = preset("default", ub_bytes=8192, gemv_partial_sums=P)
    rng = random.Random(P)
    cmds = [c for c in (random_command(rng, config, dims=(1, 2, 3, 5, 8, 9, 17, 33)) for _ in range(12)) if c]
    _run(config, cmds, P)


@pytest.mark.slow
def test_full_word_lanes():
    """gemv_lanes = 32 (fullrate): 32 int8 / fp8 lanes, 16 for 16-bit types, 8 for fp32; C lines of up
    to 4 words. Slow (~50 s: 32 lanes elaborate and simulate slowly); the cocotb regression runs fullrate too."""
    config = preset("fullrate", ub_bytes=16384)
    rng = random.Random(5)
    cmds = [gemv_command(rng, config, Opcode.TGEMV_BIAS, t, K, N, **random_pads(rng))
            for t, K, N in (((DType.INT32, DType.INT8, DType.INT8), 9, 70), ((FP32, DType.FP8E5M2, DType.FP8E4M3), 20, 33),
                            ((FP32, DType.BF16, DType.BF16), 3, 17), ((FP32, FP32, FP32), 12, 9))]
    _run(config, cmds, 5)


def test_acc_chain_and_in_place():
    """TGEMV_ACC four times into one tile (out of place, then in place), then TGEMV_BIAS in place."""
    config = preset("small")
    rng = random.Random(11)
    triple = (FP32, DType.FP16, DType.FP16)
    first = gemv_command(rng, config, Opcode.TGEMV_ACC, triple, 21, 6, pad_n=1)
    c_tile = first["dst"]
    cmds = [first]
    for _ in range(3):
        cmds.append(dict(first, src2=dict(c_tile)))                     # C_in is the C_out tile
    cmds.append(dict(first, opcode=Opcode.TGEMV_BIAS, src2=dict(c_tile)))
    _run(config, cmds, 11)


def _put(ub, t, array):
    """Write ``array`` (its bits) into tile ``t``'s rows in the UB image ``ub``."""
    a = np.ascontiguousarray(array)
    size = DTYPE_BYTES[t["dtype"]]
    for r in range(a.shape[0]):
        row = a[r].tobytes()
        at = t["base"] + r * t["cols"] * size
        ub[at:at + len(row)] = row


def test_specials():
    """fp32: inf - inf, NaN with payloads, sums of -0 (TGEMV gives +0; TGEMV_ACC from C_in = -0 gives -0),
    overflow to infinity, a rounding tie, and a partial sum that loses 1 to 2^24 (order visible)."""
    config = preset("small")
    rng = random.Random(3)
    t3 = (FP32, FP32, FP32)
    K, N = 6, 4
    cmd = gemv_command(rng, config, Opcode.TGEMV, t3, K, N)
    acc = dict(gemv_command(rng, config, Opcode.TGEMV_ACC, t3, K, N), src0=cmd["src0"], src1=cmd["src1"])
    ub = bytearray(config.ub_bytes)
    f = np.float32
    a = np.array([[1, 1, 1, 1, 1, 1]], f)
    b = np.array([[np.inf, -0.0, 3.4e38, 2.0 ** 24],
                  [-np.inf, -0.0, 3.4e38, 1],
                  [1, -0.0, 1, 1],
                  [np.nan, -0.0, 0, 1],
                  [1, -0.0, 0, -2.0 ** 24],
                  [1, -0.0, 0, 1]], f)
    b.view(np.uint32)[3, 0] = 0x7F80_0123                              # NaN with a payload
    _put(ub, cmd["src0"], a)
    _put(ub, cmd["src1"], b)
    _put(ub, acc["src2"], np.array([[0, -0.0, 0, 0.5]], f))
    _run(config, [cmd, acc], 3, ub=ub)


def decoded(cmd):
    """``cmd`` as the cycle model takes it: the nested dict ``rtl.isa.decode`` gives for its word."""
    return decode(Command, encode(Command, cmd))


@pytest.mark.parametrize("P", [8, 2])
def test_cycles(P):
    """One block step per cycle (P >= the adder's depth) or P of every R (P = 2): ``GemvEngine.cycles`` is
    exact when the reducer keeps up, for every type class and N across 1-3 blocks, at K = 64 and (P = 8)
    at the shortest blocks that keep up (``GemvEngine.keep_up``); below that it is None."""
    config = preset("default", ub_bytes=32768, gemv_partial_sums=P)
    rng = random.Random(P)
    floor = GemvEngine.keep_up(config)
    assert GemvEngine.steps(config, 64) >= floor
    assert floor <= mac_latency(config) + schedule(P)[1] + 1       # no slower than one block at a time
    cmds = []
    for triple in ((FP32, FP32, FP32), (DType.INT32, DType.INT8, DType.INT8), (FP32, DType.BF16, DType.BF16)):
        L = GemvEngine.lanes(config, triple[2])
        for N in ((1, L, 2 * L + 1) if P == 8 else (2 * L + 1,)):
            cmds.append(gemv_command(rng, config, Opcode.TGEMV_ACC, triple, 64, N, pad_n=3))
        if P == 8:
            cmds.append(gemv_command(rng, config, Opcode.TGEMV_BIAS, triple, floor, 4 * L + 1, pad_n=1))
    results = _run(config, cmds, P, stall=0)
    for c, r in zip(cmds, results):
        K, N, bt = c["src1"]["valid_rows"], c["src1"]["valid_cols"], c["src1"]["dtype"]
        assert r.cycles == GemvEngine.cycles(config, decoded(c)), (bt.name, K, N, r.cycles)
        assert r.cycles == GemvEngine.steady_cycles(config, K, N, bt)          # one-word C lines
    short = gemv_command(rng, config, Opcode.TGEMV, (FP32, FP32, FP32), 1, 3)
    assert GemvEngine.steps(config, 1) < floor and GemvEngine.cycles(config, decoded(short)) is None


def test_cycles_wide_c_lines():
    """C lines of two words (16-byte words, 8 lanes: int8 and bf16 B, 8 x 4 result bytes): the writer takes
    the last block's words one per cycle, so ``GemvEngine.cycles`` adds the last C line's words beyond the
    first (a full last block: 2 words; N mod 8 <= 4: one); fp32 B (4 lanes) stays at one word."""
    config = preset("small", gemv_lanes=8)
    rng = random.Random(21)
    K = GemvEngine.keep_up(config)
    cmds = [gemv_command(rng, config, Opcode.TGEMV_BIAS, triple, K, N, pad_n=1)
            for triple in ((DType.INT32, DType.INT8, DType.INT8), (FP32, DType.BF16, DType.BF16), (FP32, FP32, FP32))
            for N in (8, 11)]
    results = _run(config, cmds, 21, stall=0)
    extra = []
    for c, r in zip(cmds, results):
        N, bt = c["src1"]["valid_cols"], c["src1"]["dtype"]
        assert r.cycles == GemvEngine.cycles(config, decoded(c)), (bt.name, K, N, r.cycles)
        extra.append(r.cycles - GemvEngine.steady_cycles(config, K, N, bt))
    assert extra == [1, 0, 1, 0, 0, 0]


# ---- the timing contract: each coupling's check fails when one side changes (elaboration only) ------------

@pytest.fixture
def unused_ok():
    """The contract tests build components they never elaborate: collect them here, their
    ``UnusedElaboratable`` warnings ignored (they would surface in a later test)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        yield
        gc.collect()


def _elaborate(config):
    """The engine's own module (its sub-components are not elaborated)."""
    return GemvEngine(config).elaborate(None)


def test_contract_c_words_within_reducer_interval(monkeypatch, unused_ok):
    """The reducer keeps a result for ``Reducer.INTERVAL`` cycles at least; the writer needs a C line's words
    (4 with 16 int8 lanes on 16-byte words). A reducer whose results came every 2 cycles (P = 1, its
    padding ``MIN_INTERVAL`` lowered) breaks that."""
    config = preset("small", gemv_lanes=16, gemv_partial_sums=1)
    _elaborate(config)
    monkeypatch.setattr(Reducer, "MIN_INTERVAL", 2)
    assert Reducer(config).INTERVAL == 2
    with pytest.raises(ContractError, match="C line's words"):
        _elaborate(config)


def test_contract_go_before_first_product(monkeypatch, unused_ok):
    """``cycles`` assumes ``go`` (``rtl.engines.base.GO_DELAY``, then local copies) is there before the first
    product could fire (``GemvEngine.FIRST_STEP``); a checker deeper than that breaks it."""
    config = preset("small")
    assert VectorUnit.GO_DELAY == fire.GO_DELAY   # the front end raises go after the delay fire.py checks
    _elaborate(config)
    monkeypatch.setattr(fire, "GO_DELAY", GemvEngine.FIRST_STEP)
    with pytest.raises(ContractError, match="go's local copies"):
        _elaborate(config)


def test_contract_c_line_before_result(monkeypatch, unused_ok):
    """A block's C line reaches the writer (``UbWriter.LINE_LATENCY``) before the block's result can."""
    config = preset("small")
    monkeypatch.setattr(UbWriter, "LINE_LATENCY", 1000)
    with pytest.raises(ContractError, match="reaches the writer"):
        _elaborate(config)


def test_contract_banks_and_tags(monkeypatch, unused_ok):
    """The reducer's banks are addressed by the tag's bank bit; a tag's ``q`` holds ``k mod P``."""
    config = preset("small")
    monkeypatch.setattr(Reducer, "BANKS", 4)
    with pytest.raises(ContractError, match="BANKS"):
        Reducer(config).elaborate(None)
    monkeypatch.undo()
    with pytest.raises(ContractError, match="k mod P"):
        MacArray(SimpleNamespace(gemv_lanes=1, gemv_partial_sums=128, ub_word_bytes=32))


@pytest.mark.parametrize("P", [1, 2, 4, 8, 16, 32, 64])
def test_reducer_schedule(P):
    """``rtl.engines.gemv.reduce.schedule`` run symbolically, the way the reducer's registers run it: every add's
    operands as expressions (a bank entry, the sum leaving the adder in that cycle, a hold register), a
    sum leaving ``Reducer.ADD_LATENCY`` cycles after its add; the result leaving the adder
    ``Reducer.RESULT_CYCLES`` before the schedule's ``cycles`` must be docs/semantics.md's ``init + tree``
    with the tree's pairs in order, the holds captured before they are read and not overwritten while
    their sum waits, and one add per cycle (``issues`` is keyed by cycle)."""
    issues, cycles, captures, holds = schedule(P)
    leaving, hold, pending = {}, {}, {}          # cycle -> expression; hold h -> expression; h -> reads left
    for t in range(cycles):
        if t in captures:
            h = captures[t]
            assert 0 <= h < holds and t in leaving and not pending.get(h), (t, h)
            hold[h], pending[h] = leaving.pop(t), 1
        if t in issues:
            def value(src):
                kind, x = src
                if kind == "bank":
                    return f"s{x}"
                if kind == "sum":
                    return leaving.pop(t)
                if kind == "hold":
                    assert pending.get(x), (t, x)
                    pending[x] = 0
                    return hold[x]
                assert kind == "init"
                return "init"
            a, b, level1 = issues[t]
            assert level1 == (a[0] == "bank" or b[0] == "bank")
            leaving[t + Reducer.ADD_LATENCY] = f"({value(a)} + {value(b)})"
        assert not [c for c in leaving if c < t], f"a sum leaving before cycle {t} was neither used nor held"
    tree = [f"s{q}" for q in range(P)]
    while len(tree) > 1:
        tree = [f"({tree[2 * i]} + {tree[2 * i + 1]})" for i in range(len(tree) // 2)]
    assert leaving == {cycles - Reducer.RESULT_CYCLES: f"(init + {tree[0]})"}
    assert not any(pending.values())
