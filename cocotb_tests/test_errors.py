"""Every error status: the RTL answers it, touches nothing, and runs the next command correctly.

Each test issues one illegal instruction (status compared with the golden model's ``check``), then a
legal TLOAD/TSTORE pair, then compares the whole UB and the GM window with the golden machine.
"""

import os

import cocotb
import numpy as np

from rtl.isa import DType, gm_region, Layout, OobMode, Opcode, Status, tile
from rtl.top import supported_opcodes

from .harness import Harness, resolve_config

#: The whole unit: the error tests send every family's commands (and UNSUPPORTED ones).
UNIT_ENGINES = None

SRC, DST = 0x2_0000, 0x3_0000


def _unsupported(config):
    """Opcodes the unit of ``config`` has no engine for (none in ``small`` and ``default``; with one UB
    read port the elementwise and GEMV engines are left out)."""
    have = supported_opcodes(config)
    return [op for op in Opcode if op not in have]


def _legal():
    t = tile(256, 4, 8, DType.INT16, valid=(3, 5))
    return t, {"opcode": Opcode.TLOAD, "dst": t, "gm": gm_region(SRC, 3, 5, DType.INT16, 64)}


def _bad(name):
    """An instruction that violates exactly one constraint, by status name."""
    t, load = _legal()
    cmd = {**load, "dst": dict(t), "gm": dict(load["gm"])}
    d, g = cmd["dst"], cmd["gm"]
    if name == "UNKNOWN_OPCODE":
        cmd["opcode"] = 0x7F
    elif name == "UNSUPPORTED":
        cmd = {"opcode": _unsupported(resolve_config())[0], "dst": t, "src0": t, "src1": t}
    elif name == "DTYPE_INVALID":
        d["dtype"] = g["dtype"] = 13
    elif name == "DTYPE_MISMATCH":
        g["dtype"] = DType.UINT16
    elif name == "UB_MISALIGNED":
        d["base"] = 256 + 16
    elif name == "UB_OUT_OF_RANGE":
        d["base"] = int(os.environ.get("TILEVEC_UB_BYTES", "4096")) - 32
    elif name == "VALID_EXCEEDS_STATIC":
        d["valid_cols"] = 9
        g["cols"] = 9
    elif name == "SHAPE_MISMATCH":
        g["rows"] = 4
    elif name == "GM_MISALIGNED":
        g["base"] = SRC + 1
    elif name == "GM_OUT_OF_RANGE":
        g["base"] = (1 << 32) - 64
    else:
        raise KeyError(name)
    return cmd


async def _error_then_recover(dut, name):
    h = await Harness.start(dut, backpressure=True)
    os.environ["TILEVEC_UB_BYTES"] = str(h.config.ub_bytes)
    h.gm_write(SRC, bytes(h.rng.randrange(256) for _ in range(512)))
    h.gm_write(DST - 64, bytes(h.rng.randrange(256) for _ in range(512)))
    rsp = await h.run(_bad(name))          # asserts RTL status == golden status
    assert rsp["status"] == Status[name], f"expected {name}, got {rsp['status']}"
    t, load = _legal()
    assert (await h.run(load))["status"] == Status.OK
    store = {"opcode": Opcode.TSTORE, "src0": t, "gm": gm_region(DST + 6, 3, 5, DType.INT16, 40)}
    assert (await h.run(store))["status"] == Status.OK
    h.check_gm(DST - 64, 512)
    await h.check_ub()


#: The statuses ``error`` answers, one test each (``error/status=UNKNOWN_OPCODE``, run and labelled
#: ``error_unknown_opcode`` by ``sim.regress``). UNSUPPORTED only in a configuration whose unit lacks an
#: engine (tests/test_cocotb_errors.py runs it on ``small,ub_read_ports=1``): every opcode has one in
#: the presets.
STATUSES = [Status.UNKNOWN_OPCODE, *([Status.UNSUPPORTED] if _unsupported(resolve_config()) else []),
            Status.DTYPE_INVALID, Status.DTYPE_MISMATCH,
            Status.UB_MISALIGNED, Status.UB_OUT_OF_RANGE, Status.VALID_EXCEEDS_STATIC, Status.SHAPE_MISMATCH,
            Status.GM_MISALIGNED, Status.GM_OUT_OF_RANGE]


@cocotb.test()
@cocotb.parametrize(status=STATUSES)
async def error(dut, status):
    """One error status: answered, nothing touched, next command correct."""
    await _error_then_recover(dut, status.name)


@cocotb.test()
async def error_axi_read(dut):
    """SLVERR on a TLOAD's reads: AXI_READ_ERROR, no write outside the tile, no hang; then normal."""
    h = await Harness.start(dut, backpressure=True)
    h.gm_write(SRC, bytes(range(256)) * 2)
    h.gm.read_errors.append((SRC + 64, SRC + 65))
    t, load = _legal()
    await h.run_axi_error(load, Status.AXI_READ_ERROR)
    h.gm.read_errors.clear()
    assert (await h.run(load))["status"] == Status.OK
    await h.check_ub()


@cocotb.test()
async def error_axi_read_mgather(dut):
    """SLVERR on MGATHER table reads (row and element mode): AXI_READ_ERROR, nothing written outside the
    destination tile, no hang; the same gather then runs normally."""
    h = await Harness.start(dut, backpressure=True)
    table = 0x6_0000
    h.gm_write(table, bytes(h.rng.randrange(256) for _ in range(2048)))
    h.gm_write(SRC, np.array([3, 0, 7, 1, 5, 2, 6, 4] * 4, np.uint32).tobytes())
    idx_row, idx_elem = tile(0x000, 8, 1, DType.UINT32), tile(0x100, 4, 8, DType.UINT32)
    for t in (idx_row, idx_elem):
        assert (await h.run({"opcode": Opcode.TLOAD, "dst": t,
                             "gm": gm_region(SRC, t["rows"], t["cols"], DType.UINT32)}))["status"] == Status.OK
    row = {"opcode": Opcode.MGATHER_ROW, "oob": OobMode.CLAMP, "src0": idx_row,
           "dst": tile(0x400, 8, 32, DType.INT16), "gm": gm_region(table, 8, 32, DType.INT16)}
    elem = {"opcode": Opcode.MGATHER_ELEM, "oob": OobMode.ZERO, "src0": idx_elem,
            "dst": tile(0x800, 4, 8, DType.INT16), "gm": gm_region(table, 8, 32, DType.INT16)}
    # the failing window: table row 5 (index 5) for the row gather, element 0 (index 0) for the other
    for cmd, window in ((row, (table + 64 * 5, table + 64 * 5 + 1)), (elem, (table, table + 2))):
        h.gm.read_errors.append(window)
        await h.run_axi_error(cmd, Status.AXI_READ_ERROR)
        h.gm.read_errors.clear()
        assert (await h.run(cmd))["status"] == Status.OK
    await h.check_ub()


@cocotb.test()
async def error_axi_write(dut):
    """SLVERR on a TSTORE's writes: AXI_WRITE_ERROR, no hang; then normal."""
    h = await Harness.start(dut, backpressure=True)
    h.gm_write(SRC, bytes(range(256)) * 2)
    t, load = _legal()
    assert (await h.run(load))["status"] == Status.OK
    store = {"opcode": Opcode.TSTORE, "src0": t, "gm": gm_region(DST, 3, 5, DType.INT16, 40)}
    h.gm.write_errors.append((DST, DST + 200))
    await h.run_axi_error(store, Status.AXI_WRITE_ERROR)
    h.gm.write_errors.clear()
    assert (await h.run(store))["status"] == Status.OK
    h.check_gm(DST, 200)
    await h.check_ub()


@cocotb.test()
async def status_sweep(dut):
    """Random mutations of legal TLOAD/TSTORE fields: the RTL's status equals golden.check's every time,
    and the state stays identical to the golden machine's."""
    h = await Harness.start(dut)
    rng = h.rng
    h.gm_write(SRC, bytes(rng.randrange(256) for _ in range(4096)))
    fields = ["base", "rows", "cols", "valid_rows", "valid_cols", "dtype", "layout"]
    for n in range(int(os.environ.get("TILEVEC_ROUNDS", "150"))):
        t = tile(rng.randrange(0, 8) * 32 + (8 if rng.random() < 0.08 else 0), rng.randrange(1, 8),
                 rng.randrange(1, 12), rng.choice(list(DType)))
        t["valid_rows"], t["valid_cols"] = rng.randrange(0, t["rows"] + 1), rng.randrange(0, t["cols"] + 1)
        g = gm_region(SRC + rng.choice([0] * 8 + [1, 2, 6]), t["valid_rows"], t["valid_cols"], t["dtype"],
                      row_stride=rng.choice([64, 66, 96, 1 << 31]))
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            f = rng.choice(fields)
            if f == "dtype":
                t["dtype"] = rng.choice([*DType, 11, 15])
            elif f == "layout":
                t["layout"] = Layout.COL_MAJOR
            elif f == "base":
                t["base"] = rng.choice([4096 - 32, 1 << 23, 40])
            else:
                t[f] = rng.randrange(0, 20)
        if rng.random() < 0.2:
            g["rows"] += 1
        if rng.random() < 0.3:
            g["base"] = (1 << 32) - rng.randrange(1, 300)
        op = rng.choice([Opcode.TLOAD, Opcode.TSTORE] * 6 + [0x03, Opcode.TGEMV])
        slot = "src0" if op == Opcode.TSTORE else "dst"
        await h.run({"opcode": op, slot: t, "gm": g})
    await h.check_ub()
