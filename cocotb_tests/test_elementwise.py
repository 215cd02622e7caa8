"""The elementwise family (TROWEXPANDMUL/ADD/SUB/MAX/MIN, TPARTADD/MUL/MAX/MIN), bit-exact against the golden
machine on the whole unit.

Every command runs on the RTL and on the golden machine (``Harness``); after each one the whole UB is
compared (the UB starts as random bytes, so everything outside the destination is a canary).
Parameters: ``TILEVEC_ROUNDS``.
"""

import itertools
import os
import random

import cocotb
import numpy as np

from golden.numerics import CANONICAL_NAN
from rtl.isa import DType, DTYPE_BYTES, INSTRUCTIONS, Layout, Opcode, Status, tile
from rtl.top import VectorUnit

from .ew_commands import EW_OPS, PART_OPS, ROWEXPAND_OPS, part_command, random_command, rowexpand_command
from .harness import Harness

#: The engines of the unit these tests simulate (``Config.engines``; sim.regress builds it): a
#: unit of only what the tests exercise simulates several times faster.
UNIT_ENGINES = ('elementwise',)

ROW, COL = Layout.ROW_MAJOR, Layout.COL_MAJOR


def _env(name, default):
    return os.environ.get(f"TILEVEC_{name}", default)


async def _fresh_ub(h):
    await h.ub_load(0, h.rng.randbytes(h.config.ub_bytes))


async def _run_checked(h, cmd, label=None):
    rsp = await h.run(cmd, label=label)
    assert rsp["status"] == Status.OK, rsp
    await h.check_ub()
    return rsp


#: The data types of the elementwise family (``ew_dtype`` runs once per type).
EW_TYPES = sorted({d for op in EW_OPS for types in INSTRUCTIONS[op].types.values() for d in types},
                  key=lambda d: d.value)


@cocotb.parametrize(dtype=[d.name for d in EW_TYPES])
async def ew_dtype(dut, dtype):
    """One data type, every opcode of the family that accepts it: random shapes, both TROWEXPAND modes and
    operand placements, every TPART validity pattern and layout mix, in-place destinations."""
    h = await Harness.start(dut)
    dtype = DType[dtype]
    rng = random.Random(h.rng.random())
    rounds = int(_env("ROUNDS", "2"))
    await _fresh_ub(h)
    ran = 0
    for _ in range(rounds):
        for op in EW_OPS:
            if dtype not in INSTRUCTIONS[op].types[h.config.profile]:
                continue
            for _ in range(20):
                cmd = random_command(rng, h.config, ops=(op,))
                if cmd is not None and cmd["dst"]["dtype"] == dtype:
                    break
                cmd = None
            if cmd is None:       # random_command picks the type itself: force this one
                cmd = _force_type(rng, h.config, op, dtype)
            if cmd is not None:
                await _run_checked(h, cmd)
                ran += 1
    assert ran, f"no command of type {dtype.name}"


def _force_type(rng, config, op, dtype):
    R, C = rng.randrange(1, 12), rng.randrange(1, 40)
    if op in ROWEXPAND_OPS:
        return rowexpand_command(rng, config, op, dtype, mode=rng.choice([1, 2]), expanded=rng.randrange(2), R=R, C=C)
    return part_command(rng, config, op, dtype, R=R, C=C, partial=(rng.randrange(R + 1), rng.randrange(C + 1)),
                        full_slot=rng.randrange(2), layouts=(rng.choice([ROW, COL]),) * 3)


@cocotb.test()
async def ew_tpart_layouts(dut):
    """TPART* with every (dst, src0, src1) layout mix, the full operand in either slot: each operand's
    layout is its own (random commands mostly share one)."""
    h = await Harness.start(dut)
    rng = random.Random(h.rng.random())
    await _fresh_ub(h)
    for layouts in itertools.product([ROW, COL], repeat=3):
        for full_slot in (0, 1):
            op = rng.choice(PART_OPS)
            dtype = rng.choice(sorted(INSTRUCTIONS[op].types[h.config.profile], key=lambda d: d.value))
            R, C = rng.randrange(1, 9), rng.randrange(1, 20)
            cmd = part_command(rng, h.config, op, dtype, R=R, C=C, full_slot=full_slot, layouts=layouts,
                               partial=(rng.randrange(R + 1), rng.randrange(C + 1)))
            await _run_checked(h, cmd)


@cocotb.test()
async def ew_seed_examples(dut):
    """The seeds' own examples: a 16 x 16 half tile times a 16 x 1 column-major row vector (TROWEXPANDMUL
    mode 1), and a 16 x 16 float TPARTADD (full src0, a 8 x 16 partial src1)."""
    h = await Harness.start(dut)
    F16, F32 = DType.FP16, DType.FP32
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    v = rng.standard_normal((16, 1)).astype(np.float16)
    await h.ub_load(0x000, a.tobytes())
    await h.ub_load(0x200, v.T.tobytes())            # column-major (16, 1): the 16 scalars in a row
    await _run_checked(h, {"opcode": Opcode.TROWEXPANDMUL, "dst": tile(0x400, 16, 16, F16),
                           "src0": tile(0x000, 16, 16, F16), "src1": tile(0x200, 16, 1, F16, layout=COL)},
                       label="seed TROWEXPANDMUL 16x16 half x 16x1")
    x = rng.standard_normal((16, 16)).astype(np.float32)
    y = rng.standard_normal((16, 16)).astype(np.float32)
    await h.ub_load(0x000, x.tobytes())
    await h.ub_load(0x400, y.tobytes())
    await _run_checked(h, {"opcode": Opcode.TPARTADD, "dst": tile(0x800, 16, 16, F32),
                           "src0": tile(0x000, 16, 16, F32), "src1": tile(0x400, 16, 16, F32, valid=(8, 16))},
                       label="seed TPARTADD 16x16 float")


def _specials(dtype, n, rng):
    """n values of a float type: +-0, +-inf, NaNs with payloads and both signs, subnormals, the largest
    finite, values near overflow and rounding ties, mixed with random bits."""
    size = DTYPE_BYTES[dtype]
    bits = 8 * size
    man = {DType.FP16: 10, DType.BF16: 7, DType.FP32: 23}[dtype]
    sign, exp_all = 1 << (bits - 1), ((1 << (bits - 1 - man)) - 1) << man
    pool = [0, sign, exp_all, exp_all | sign, exp_all | 1, exp_all | (1 << (man - 1)) | 5, sign | exp_all | 3,
            CANONICAL_NAN[dtype], 1, sign | 1, (1 << man) - 1, 1 << man, exp_all - 1, sign | (exp_all - 1),
            exp_all - (1 << man), (1 << (bits - 2)) - (1 << man), (1 << (bits - 2)) | 1]
    out = [rng.choice(pool) if rng.random() < 0.7 else rng.randrange(1 << bits) for _ in range(n)]
    return np.array(out, {1: np.uint8, 2: np.uint16, 4: np.uint32}[size]).tobytes()


@cocotb.test()
async def ew_float_specials(dut):
    """Float special values in both operands, every float type and opcode (both modes, full and partial
    sources): the results must be the golden's bits (canonical NaN, signed zeros, overflow to infinity)."""
    h = await Harness.start(dut)
    rng = random.Random(h.rng.random())
    for dtype in (DType.FP16, DType.BF16, DType.FP32):
        for op in EW_OPS:
            if dtype not in INSTRUCTIONS[op].types[h.config.profile]:
                continue
            await h.ub_load(0, _specials(dtype, h.config.ub_bytes // DTYPE_BYTES[dtype], rng))
            cmd = _force_type(rng, h.config, op, dtype)
            if cmd is not None:
                await _run_checked(h, cmd, label=f"specials {op.name} {dtype.name}")


@cocotb.test()
async def ew_backpressure(dut):
    """Random stalls on the command and response streams between back-to-back elementwise commands of
    different types and opcodes (the lanes carry type and op per word)."""
    h = await Harness.start(dut, backpressure=True)
    rng = random.Random(h.rng.random())
    await _fresh_ub(h)
    for _ in range(int(_env("ROUNDS", "12"))):
        cmd = random_command(rng, h.config, small=True)
        if cmd is not None:
            await _run_checked(h, cmd)


@cocotb.parametrize(status=["LAYOUT_UNSUPPORTED", "SHAPE_MISMATCH", "VALIDITY_PATTERN", "DTYPE_UNSUPPORTED",
                            "DTYPE_MISMATCH"])
async def ew_error(dut, status):
    """Each elementwise error status (the golden's), no UB change, then a correct command runs normally."""
    h = await Harness.start(dut)
    rng = random.Random(7)
    await _fresh_ub(h)
    good = rowexpand_command(rng, h.config, Opcode.TROWEXPANDMUL, DType.FP32, mode=2, expanded=1, R=4, C=12)
    part = part_command(rng, h.config, Opcode.TPARTADD, DType.INT16, R=4, C=9, partial=(2, 3), full_slot=0,
                        layouts=(ROW,) * 3)
    bad = {k: (dict(v) if isinstance(v, dict) else v) for k, v in (part if status == "VALIDITY_PATTERN" else good).items()}
    if status == "LAYOUT_UNSUPPORTED":
        bad["dst"]["layout"] = COL
    elif status == "SHAPE_MISMATCH":
        bad["src1"]["valid_cols"] = 5
    elif status == "VALIDITY_PATTERN":
        bad["src0"]["valid_rows"] = 3          # neither source has dst's valid shape any more
    elif status == "DTYPE_UNSUPPORTED":
        for s in ("dst", "src0", "src1"):
            bad[s]["dtype"] = DType.FP8E4M3
    elif status == "DTYPE_MISMATCH":
        bad["src0"]["dtype"] = DType.INT32
    before = await h.ub_image()
    rsp = await h.run(bad, label=f"error {status}")
    assert rsp["status"] == Status[status], rsp
    assert await h.ub_image() == before, "an illegal command changed the UB"
    await _run_checked(h, good, label="after the error")
    await _run_checked(h, part, label="after the error")


@cocotb.test()
async def ew_empty_destination(dut):
    """A zero destination valid region (either dimension) returns at once with OK and writes nothing, for
    every opcode of the family (TPART*: whatever the sources' validity; the golden skips the pattern check)."""
    h = await Harness.start(dut)
    rng = random.Random(3)
    await _fresh_ub(h)
    for op in EW_OPS:
        for R, C in ((0, 5), (4, 0)):
            if op in PART_OPS:
                cmd = part_command(rng, h.config, op, DType.INT16, R=R, C=C, partial=(0, 0), full_slot=0,
                                   layouts=(ROW,) * 3)
                cmd["src1"]["valid_rows"] = 0      # still within its static shape
            else:
                cmd = rowexpand_command(rng, h.config, op, DType.FP32, mode=1 + (R == 0), expanded=1, R=R, C=C)
            rsp = await _run_checked(h, cmd, label=f"empty {op.name} {R}x{C}")
            assert rsp["cycles"] <= VectorUnit.REJECT_CYCLES, rsp   # done at start: answered with the verdict
