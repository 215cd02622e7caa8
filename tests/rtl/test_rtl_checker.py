"""The hardware checker against golden.check on random (mostly illegal) TLOAD / TSTORE / MGATHER
commands, in both target profiles: the status must be identical for every command."""

import random

import pytest
from amaranth.sim import Simulator

from golden.check import check
from rtl.checker import Checker
from rtl.config import preset
from rtl.isa import Command, DType, Layout, OobMode, Opcode, decode, encode
from rtl.status import Status
from rtl.top import ENGINES

OPS = (Opcode.TLOAD, Opcode.TSTORE, Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM)


def _legal(rng, op):
    dtype = rng.choice(list(DType))
    rows, cols = rng.randrange(1, 6), rng.randrange(1, 6)
    dst = {"base": 64, "rows": rows, "cols": cols, "valid_rows": rows, "valid_cols": cols, "dtype": dtype}
    if op in (Opcode.TLOAD, Opcode.TSTORE):
        slot = "src0" if op == Opcode.TSTORE else "dst"
        return {"opcode": op, slot: dst, "gm": {"base": 0x1000, "rows": rows, "cols": cols, "row_stride": 64,
                                               "dtype": dtype}}
    row = op == Opcode.MGATHER_ROW
    idx = {"base": 1024, "rows": rows, "cols": 1 if row else cols, "valid_rows": rows,
           "valid_cols": 1 if row else cols, "dtype": rng.choice([DType.INT32, DType.UINT32])}
    return {"opcode": op, "oob": rng.choice(list(OobMode)), "dst": dst, "src0": idx,
            "gm": {"base": 0x1000, "rows": 7, "cols": cols, "row_stride": 64, "dtype": dtype}}


def _random_cmd(rng, ub_bytes):
    """A legal command of a random opcode with 0-2 random single-field mutations."""
    cmd = _legal(rng, rng.choice(OPS))
    for _ in range(rng.choice([0, 1, 1, 2])):
        slot = rng.choice(["dst", "src0", "gm", "opcode"])
        if slot == "opcode":
            cmd["opcode"] = rng.choice([0x05, Opcode.TGEMV, *OPS])
            continue
        d = cmd.setdefault(slot, {})
        field = rng.choice(["base", "rows", "cols", "dtype", "row_stride"] if slot == "gm" else
                           ["base", "rows", "cols", "valid_rows", "valid_cols", "dtype", "layout"])
        if field == "dtype":
            d["dtype"] = rng.choice([*DType, 11, 15])
        elif field == "layout" and slot != "gm":
            d["layout"] = Layout.COL_MAJOR
        elif field == "base":
            d["base"] = rng.choice([8, 40, ub_bytes - 32, 0x1001, 0x1002, (1 << 32) - 16]) & (
                0xFFFFFF if slot != "gm" else (1 << 64) - 1)
        elif field == "row_stride" and slot == "gm":
            d["row_stride"] = rng.choice([2, 3, 6, 1 << 30])
        elif field in ("rows", "cols", "valid_rows", "valid_cols"):
            d[field] = rng.choice([*range(9), 40000])
    return cmd


@pytest.mark.parametrize("profile", ["default", "a2a3"])
def test_checker_matches_golden(profile):
    cfg = preset(profile)
    dut = Checker(cfg, ENGINES)
    supported = [op for engine in ENGINES for op in engine.opcodes]
    rng = random.Random(profile)
    seen = set()

    async def bench(ctx):
        for _ in range(1500):
            cmd = decode(Command, encode(Command, _random_cmd(rng, cfg.ub_bytes)))
            ctx.set(dut.cmd.as_value(), encode(Command, cmd))
            got = ctx.get(dut.status)
            want = check(cmd, cfg, supported)
            assert got == want, f"checker {got}, golden {want} for {cmd}"
            seen.add(want)

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    # The sweep must reach the statuses of these instructions, not just the first checks.
    expected = {Status.OK, Status.UNKNOWN_OPCODE, Status.UNSUPPORTED, Status.DTYPE_INVALID,
                Status.DTYPE_MISMATCH, Status.UB_MISALIGNED, Status.UB_OUT_OF_RANGE,
                Status.VALID_EXCEEDS_STATIC, Status.SHAPE_MISMATCH, Status.GM_MISALIGNED,
                Status.GM_OUT_OF_RANGE}
    if profile == "a2a3":       # MGATHER is an A5 instruction: every MGATHER stops at its type check
        expected.add(Status.DTYPE_UNSUPPORTED)
    else:
        expected |= {Status.INDEX_DTYPE, Status.LAYOUT_UNSUPPORTED, Status.DIM_OUT_OF_RANGE}
    assert expected <= seen, f"never produced: {sorted(s.name for s in expected - seen)}"
