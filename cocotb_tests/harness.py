"""Testbench base for the vector unit: clock, reset, GM model, command/response streams, backpressure,
and a golden :class:`golden.machine.Machine` that shadows every command for whole-state comparison.

Usage in a cocotb test::

    h = await Harness.start(dut, backpressure=True)
    h.gm_write(0x1000, data)                     # written to the RTL's GM and the golden's GM
    rsp = await h.run(cmd)                       # executes on both; asserts the statuses agree
    await h.check_ub()                           # whole UB image, RTL vs golden, bit for bit
    h.check_gm(0x1000, 4096)                     # a GM range, RTL vs golden
"""

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiStreamBus, AxiStreamSink, AxiStreamSource

from rtl.config import preset
from rtl.isa import DType, Opcode
from rtl.status import Status
from sim.driver import Driver, gm_region, matrix_rows, tile
from sim.gm import ErrorRam, LatencyRam

__all__ = ["Harness"]

#: GM scratch area the harness uses to read the UB back (TSTORE of the whole UB).
SCRATCH = 0x8000_0000


def _pauses(rng, probability):
    while True:
        yield rng.random() < probability


class Harness:
    def __init__(self, dut, config, driver, gm, seed):
        from golden.machine import Machine
        from rtl.top import ENGINES
        self.dut, self.config, self.driver, self.gm = dut, config, driver, gm
        self.golden = Machine(config, supported=[op for engine in ENGINES for op in engine.opcodes])
        self.rng = random.Random(seed)

    @classmethod
    async def start(cls, dut, *, backpressure=False, latency=None, seed=None, pause=0.3):
        """Clock, reset, models. ``backpressure``: random stalls on every AXI and stream channel.
        ``latency``: use the fixed-latency GM model (benchmarks) instead of ``ErrorRam``."""
        config = preset(os.environ.get("TILEVEC_CONFIG", "small"))
        seed = cocotb.RANDOM_SEED if seed is None else seed
        dut.rst.value = 1                      # before the first clock edge (see shared NOTES)
        dut.clk.value = 0
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start(start_high=False))
        bus = AxiBus.from_prefix(dut, "m_axi", bus_separator="__")
        size = 1 << min(config.gm_addr_bits, 32)
        if latency is not None:
            gm = LatencyRam(bus, dut.clk, dut.rst, latency=latency, size=size)
        else:
            gm = ErrorRam(bus, dut.clk, dut.rst, size=size)
        src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_cmd", bus_separator="__"), dut.clk, dut.rst)
        sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_rsp", bus_separator="__"), dut.clk, dut.rst)
        for model in (src, sink):
            model.log.setLevel("WARNING")
        gm.write_if.log.setLevel("WARNING")
        gm.read_if.log.setLevel("WARNING")
        driver = Driver(src, sink, gm, test_name=_current_test_name(), clock=dut.clk)
        await ClockCycles(dut.clk, 4)
        dut.rst.value = 0
        await RisingEdge(dut.clk)
        h = cls(dut, config, driver, gm, seed)
        if backpressure:
            h.set_backpressure(pause)
        return h

    def set_backpressure(self, probability):
        """Random pauses (each cycle with ``probability``) on every channel the testbench drives."""
        rng = self.rng
        channels = [self.driver.cmd_source, self.driver.rsp_sink]
        if isinstance(self.gm, ErrorRam):
            channels += [self.gm.read_if.ar_channel, self.gm.read_if.r_channel, self.gm.write_if.aw_channel,
                         self.gm.write_if.w_channel, self.gm.write_if.b_channel]
        for ch in channels:
            ch.set_pause_generator(_pauses(random.Random(rng.random()), probability))

    # ---- shadowed operations ----------------------------------------------------------------------

    def gm_write(self, address, data):
        data = bytes(data)
        self.driver.gm_write(address, data)
        self.golden.gm.write(address, data)

    def put_matrix(self, address, array, row_stride=None):
        """``Driver.put_matrix``, shadowed into the golden machine's GM."""
        for addr, data in matrix_rows(address, array, row_stride):
            self.gm_write(addr, data)

    async def run(self, cmd, *, label=None):
        """Execute on the RTL and on the golden machine; the statuses must agree. Returns the response."""
        rsp = await self.driver.execute(cmd, label=label)
        expected = self.golden.execute(cmd)
        assert rsp["status"] == expected, \
            f"status {_name(rsp['status'])} from the RTL, golden says {_name(expected)} for {cmd}"
        return rsp

    async def run_axi_error(self, cmd, expected):
        """Execute a command whose GM access hits an injected SLVERR: the RTL must answer ``expected``
        and change nothing outside the destination (UB tile valid region for TLOAD and MGATHER, the GM
        lines for TSTORE). The golden machine then adopts the RTL's destination bytes so later checks hold."""
        from golden.check import gm_view, normalize, tile_view
        rsp = await self.driver.execute(cmd)
        assert rsp["status"] == expected, f"status {_name(rsp['status'])}, expected {_name(expected)}"
        if cmd["opcode"] in (Opcode.TLOAD, Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM):
            mask = self.golden.footprint(tile_view(normalize(cmd), "dst"))
            got = await self.ub_image()
            want = bytes(self.golden.ub)
            outside = [i for i in range(len(want)) if got[i] != want[i] and not mask[i]]
            assert not outside, f"{cmd['opcode'].name} with an AXI error wrote outside its tile, first at UB 0x{outside[0]:x}"
            import numpy as np
            self.golden.ub[:] = np.frombuffer(got, np.uint8)
        return rsp

    async def run_masked(self, cmd, *, label=None):
        """Execute a command whose result may be partly undefined (docs/semantics.md, "Undefined
        results"): the golden machine runs in ``on_undefined="mask"`` mode, the statuses must agree and
        the whole UB must equal the golden's except the bytes it calls undefined, which the golden then
        adopts from the RTL. Returns ``(response, number of undefined UB bytes)``."""
        import numpy as np
        rsp = await self.driver.execute(cmd, label=label)
        expected = self.golden.execute(cmd, on_undefined="mask")
        assert rsp["status"] == expected, \
            f"status {_name(rsp['status'])} from the RTL, golden says {_name(expected)} for {cmd}"
        mask = self.golden.last_undefined
        got = np.frombuffer(await self.ub_image(), np.uint8)
        care = np.ones(len(got), bool) if mask is None else ~mask
        bad = np.nonzero((got != self.golden.ub) & care)[0]
        assert not len(bad), (f"UB differs from golden at {len(bad)} defined bytes, first at 0x{bad[0]:x}: "
                              f"rtl {got[bad[0]]:#04x} golden {self.golden.ub[bad[0]]:#04x}")
        self.golden.ub[:] = got
        return rsp, 0 if mask is None else int(mask.sum())

    async def ub_image(self):
        """The RTL's whole UB, read back through TSTORE into the GM scratch area (not shadowed)."""
        cols = 256
        rows = self.config.ub_bytes // cols
        cmd = {"opcode": Opcode.TSTORE, "src0": tile(0, rows, cols, DType.UINT8),
               "gm": gm_region(SCRATCH, rows, cols, DType.UINT8)}
        rsp = await self.driver.execute(cmd, label="ub readback")
        assert rsp["status"] == Status.OK, f"UB readback failed: {_name(rsp['status'])}"
        return self.driver.gm_read(SCRATCH, self.config.ub_bytes)

    async def check_ub(self):
        got = await self.ub_image()
        want = bytes(self.golden.ub)
        if got != want:
            diff = [i for i in range(len(want)) if got[i] != want[i]]
            raise AssertionError(f"UB differs from golden at {len(diff)} bytes, first at 0x{diff[0]:x}: "
                                 f"rtl {got[diff[0]]:#04x} golden {want[diff[0]]:#04x}")

    def check_gm(self, address, length):
        got = self.driver.gm_read(address, length)
        want = self.golden.gm.read(address, length)
        if got != want:
            diff = [i for i in range(length) if got[i] != want[i]]
            raise AssertionError(f"GM differs from golden at {len(diff)} bytes, first at "
                                 f"0x{address + diff[0]:x}: rtl {got[diff[0]]:#04x} golden {want[diff[0]]:#04x}")


def _name(status):
    return status.name if isinstance(status, Status) else f"0x{int(status):02x}"


def _current_test_name():
    return os.environ.get("TILEVEC_TEST", "")
