"""Testbench base for the vector unit: clock, reset, GM model, command/response streams, backpressure,
and a golden :class:`golden.machine.Machine` that shadows every command for whole-state comparison.

Usage in a cocotb test::

    h = await Harness.start(dut, backpressure=True)   # config / timeout_cycles: see Harness.start
    h.gm_write(0x1000, data)                     # written to the RTL's GM and the golden's GM
    await h.ub_load(0x200, data)                 # written to the RTL's UB (debug port) and the golden's
    rsp = await h.run(cmd)                       # executes on both; asserts the statuses agree
    await h.check_ub()                           # whole UB image, RTL vs golden, bit for bit
    h.check_gm(0x1000, 4096)                     # a GM range, RTL vs golden
    raw = await h.ub_read(0x200, 64)             # UB bytes, read through the debug port

Failures raise the ``AssertionError`` subclasses of :mod:`sim.failures` (``HangError``,
``StatusMismatch``, ``UbMismatch``, ``GmMismatch``), whose attributes say what differed.
"""

import os
import random
from collections.abc import Mapping

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiStreamBus, AxiStreamSink, AxiStreamSource

from rtl.config import Config
from rtl.isa import DType, gm_region, instruction, Opcode, Status, tile
from sim.driver import DEFAULT_TIMEOUT_CYCLES, Driver, matrix_rows
from sim.gm import ErrorRam, LatencyRam

from . import coverage as _coverage
from sim.failures import GmMismatch, StatusMismatch, UbMismatch, UnitLacksEngine

__all__ = ["Harness", "Params", "params", "resolve_config", "resolve_timeout"]

#: GM scratch area the harness uses to read the UB back (TSTORE of the whole UB).
SCRATCH = 0x8000_0000


#: Environment variables the runner sets for itself (not test parameters).
_RESERVED = ("CONFIG", "COVERAGE_CONFIG", "RECORDS", "TEST", "TIMEOUT_CYCLES")


class Params(Mapping):
    """The test parameters of this simulator run: ``sim.runner.run(params={"dtype": "FP16"})`` (or a
    ``sim.regress.Entry``) sets ``TILEVEC_DTYPE=FP16``, read here as ``params["dtype"]``. Keys are
    case-insensitive (stored lower case); the runner's own variables (``TILEVEC_CONFIG``,
    ``TILEVEC_RECORDS``, ``TILEVEC_TEST``, ``TILEVEC_TIMEOUT_CYCLES``) are not parameters."""

    def __init__(self, environ=None):
        environ = os.environ if environ is None else environ
        self._values = {key[len("TILEVEC_"):].lower(): value for key, value in environ.items()
                        if key.startswith("TILEVEC_") and key[len("TILEVEC_"):] not in _RESERVED}

    def __getitem__(self, key):
        return self._values[key.lower()]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def get(self, key, default=None, cast=None):
        """The parameter ``key``, converted by ``cast`` (default: the type of ``default`` when that is
        not a string; ``bool`` accepts 1/0, true/false, yes/no, on/off), or ``default`` when unset."""
        if key.lower() not in self._values:
            return default
        value = self._values[key.lower()]
        cast = cast or (type(default) if default is not None and not isinstance(default, str) else None)
        if cast is bool:
            low = value.strip().lower()
            if low not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError(f"TILEVEC_{key.upper()}={value!r} is not a boolean")
            return low in ("1", "true", "yes", "on")
        return cast(value) if cast else value

    def __repr__(self):
        return f"Params({self._values!r})"


def params():
    """:class:`Params` of this run (also ``Harness.params``), usable before ``Harness.start``."""
    return Params()


def resolve_config(config=None):
    """A :class:`rtl.config.Config` from a ``Config``, a preset name or a preset with overrides
    (``small,gemv_partial_sums=2``, ``sim.runner.config_spec``), or ``None``: the configuration named by
    ``TILEVEC_CONFIG`` (what the runner built), ``small`` when unset."""
    if config is None:
        config = os.environ.get("TILEVEC_CONFIG", "small")
    if isinstance(config, str):
        from sim.runner import config_spec
        return config_spec(config)[0]
    if not isinstance(config, Config):
        raise TypeError(f"config must be a rtl.config.Config or a preset name, not {config!r}")
    return config


def resolve_timeout(timeout_cycles=None):
    """The hang limit in clock cycles: ``timeout_cycles``, else ``TILEVEC_TIMEOUT_CYCLES``, else
    :data:`sim.driver.DEFAULT_TIMEOUT_CYCLES`."""
    if timeout_cycles is None:
        timeout_cycles = os.environ.get("TILEVEC_TIMEOUT_CYCLES") or DEFAULT_TIMEOUT_CYCLES
    timeout_cycles = int(timeout_cycles)
    if timeout_cycles < 1:
        raise ValueError(f"timeout_cycles must be >= 1, not {timeout_cycles}")
    return timeout_cycles


def _check_dut(dut, config):
    """Fail early when ``config`` does not describe the simulated unit (wrong preset for the build)."""
    def width(name):
        return len(getattr(dut, name))
    problems = []
    if width("m_axi__wdata") != config.axi_data_bits:
        problems.append(f"m_axi__wdata is {width('m_axi__wdata')} bits, config says {config.axi_data_bits}")
    if width("m_axi__araddr") != config.gm_addr_bits:
        problems.append(f"m_axi__araddr is {width('m_axi__araddr')} bits, config says {config.gm_addr_bits}")
    has_dbg = hasattr(dut, "ub_dbg__valid")
    if has_dbg != config.ub_debug_port:
        problems.append(f"the unit {'has' if has_dbg else 'has no'} UB debug port, config says "
                        f"ub_debug_port={config.ub_debug_port}")
    elif has_dbg and width("ub_dbg__addr") != (config.ub_words - 1).bit_length():
        problems.append(f"ub_dbg__addr is {width('ub_dbg__addr')} bits, config has {config.ub_words} UB words")
    if problems:
        raise ValueError("Harness.start: the configuration does not match the simulated unit: "
                         + "; ".join(problems) + f" (config: {config.describe()})")


def _pauses(rng, probability):
    while True:
        yield rng.random() < probability


class Harness:
    def __init__(self, dut, config, driver, gm, seed):
        from golden.machine import Machine
        from rtl.top import supported_opcodes
        self.dut, self.config, self.driver, self.gm = dut, config, driver, gm
        self.golden = Machine(config, supported=supported_opcodes(config))
        self.rng = random.Random(seed)
        self.params = Params()
        self.has_debug_port = config.ub_debug_port and hasattr(dut, "ub_dbg__valid")

    @property
    def timeout_cycles(self):
        """Clock cycles a command may take before it fails as a hang (``HangError``); settable."""
        return self.driver.timeout_cycles

    @timeout_cycles.setter
    def timeout_cycles(self, cycles):
        self.driver.timeout_cycles = resolve_timeout(cycles)

    @classmethod
    async def start(cls, dut, *, config=None, timeout_cycles=None, backpressure=False, latency=None, seed=None,
                    pause=0.3):
        """Clock, reset, models; returns the harness.

        ``config``: a :class:`rtl.config.Config` or a preset name describing the simulated unit (default:
        ``TILEVEC_CONFIG``, which the runner sets to the configuration it built; ``small`` when unset);
        checked against the unit's port widths. ``timeout_cycles``: how long a command may take before
        the test fails with ``HangError`` (default: ``TILEVEC_TIMEOUT_CYCLES``, else 200,000).
        ``backpressure``: random stalls (probability ``pause`` per cycle) on every AXI and stream
        channel. ``latency``: use the fixed-latency GM model (benchmarks) instead of ``ErrorRam``.
        ``seed``: of ``h.rng`` and the stall patterns (default: cocotb's random seed)."""
        config = resolve_config(config)
        timeout_cycles = resolve_timeout(timeout_cycles)
        _check_dut(dut, config)
        seed = cocotb.RANDOM_SEED if seed is None else seed
        dut.rst.value = 1                      # before the first clock edge (see shared NOTES)
        dut.clk.value = 0
        if hasattr(dut, "ub_dbg__valid"):
            dut.ub_dbg__valid.value = 0        # an undriven valid is X in Icarus
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
        driver = Driver(src, sink, gm, test_name=_current_test_name(), timeout_cycles=timeout_cycles,
                        clock=dut.clk)
        await ClockCycles(dut.clk, 4)
        dut.rst.value = 0
        await RisingEdge(dut.clk)
        h = cls(dut, config, driver, gm, seed)
        global _starts
        if _starts and h.has_debug_port:
            await h._zero_ub()
        _starts += 1
        if backpressure:
            h.set_backpressure(pause)
        return h

    def set_faults(self, faults):
        """GM windows whose AXI accesses fail (a :class:`golden.faults.GmFaults`; an empty one clears them): in
        the memory model (it answers SLVERR there) and in the golden machine (which predicts the statuses
        and the bytes they leave undefined). Only with ``ErrorRam``, the default memory."""
        if faults and not isinstance(self.gm, ErrorRam):
            raise ValueError("GM faults need the ErrorRam memory model (Harness.start without latency=)")
        if isinstance(self.gm, ErrorRam):
            self.gm.read_errors[:] = list(faults.read)
            self.gm.write_errors[:] = list(faults.write)
        self.golden.faults = faults

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

    def _lacks_engine(self, cmd, status):
        """An UNSUPPORTED answer because ``Config.engines`` left the opcode's engine out of the simulated
        unit is the test's mistake, not a result: raise :class:`sim.failures.UnitLacksEngine`."""
        if status != Status.UNSUPPORTED or self.config.engines is None:
            return
        from rtl.top import ENGINES
        op = cmd["opcode"]
        try:
            op = op if isinstance(op, Opcode) else Opcode(int(op))
        except ValueError:
            return
        owner = next((e for e in ENGINES if op in e.opcodes), None)
        if owner is not None and owner.name not in self.config.engines and owner.available(self.config):
            raise UnitLacksEngine(cmd, owner.name, self.config.engines)

    async def _counters(self, name):
        """``{pipe name: value}`` of the per-pipe counters ``perf__<name>__<k>``, or None when the unit has
        none, read once a response taken before the call is in them (``PipeCounters.LATENCY`` cycles after it,
        and one edge more: a value read at an edge is the one before it)."""
        from rtl.frontend.counters import PIPES, PipeCounters
        if not hasattr(self.dut, f"perf__{name}__0"):
            return None
        await ClockCycles(self.dut.clk, PipeCounters.LATENCY + 1)
        return {pipe.value: int(getattr(self.dut, f"perf__{name}__{k}").value) for k, pipe in enumerate(PIPES)}

    async def busy_counters(self):
        """``{pipe name: cycles}`` of the unit's per-pipe busy counters (``perf__busy__<k>``,
        ``rtl.frontend.counters``), read as :meth:`_counters` says."""
        return await self._counters("busy")

    async def stall_counters(self):
        """``{pipe name: cycles}`` of the stalled-on-hazard counters (``perf__stalled__<k>``) of a unit whose
        pipes run at once (``Config.concurrent``); None for a unit without them. Read as :meth:`busy_counters`."""
        return await self._counters("stalled")

    async def early_counters(self):
        """``{pipe name: instructions}`` of the early-start counters (``perf__early__<k>``: started while the
        pipe's previous instruction was still in its engine) of a unit whose pipes run at once; None for a unit
        without them. Read as :meth:`busy_counters`."""
        return await self._counters("early")

    async def run(self, cmd, *, label=None):
        """Execute on the RTL and on the golden machine; the statuses must agree. Returns the response."""
        rsp = await self.driver.execute(cmd, label=label)
        self._lacks_engine(cmd, rsp["status"])
        _coverage.sample(self, cmd, rsp["status"])     # functional coverage, before the golden executes it
        expected = self.golden.execute(cmd)
        if rsp["status"] != expected:
            raise StatusMismatch(cmd, expected, rsp["status"])
        return rsp

    async def run_axi_error(self, cmd, expected):
        """Execute a command whose GM access hits an injected SLVERR: the RTL must answer ``expected``
        and change nothing outside the destination (UB tile valid region for TLOAD and MGATHER, the GM
        lines for TSTORE). The golden machine then adopts the RTL's destination bytes so later checks hold."""
        from golden.check import normalize, tile_view
        import numpy as np
        rsp = await self.driver.execute(cmd)
        self._lacks_engine(cmd, rsp["status"])
        _coverage.sample(self, cmd, rsp["status"])
        if rsp["status"] != expected:
            raise StatusMismatch(cmd, expected, rsp["status"], reference=None)
        dest = instruction(cmd["opcode"]).destination      # the UB tile it writes (None: TSTORE)
        if dest is not None:
            mask = self.golden.footprint(tile_view(normalize(cmd), dest.name))
            got = await self.ub_image()
            bad = UbMismatch.compare(0, bytes(self.golden.ub), got, care=~np.asarray(mask, bool),
                                     context=f"{cmd['opcode'].name} with an AXI error wrote outside its tile")
            if bad:
                raise bad
            self.golden.ub[:] = np.frombuffer(got, np.uint8)
        return rsp

    async def run_masked(self, cmd, *, label=None):
        """Execute a command whose result may be partly undefined (docs/semantics.md, "Undefined
        results"; and an AXI error that ``set_faults`` causes): the golden machine runs in
        ``on_undefined="mask"`` mode, the statuses must agree and the whole UB must equal the golden's
        except the bytes it calls undefined, which the golden then adopts from the RTL, as it does the GM
        bytes it calls undefined (a TSTORE that met a write fault). Returns ``(response, number of
        undefined UB and GM bytes)``."""
        import numpy as np
        rsp = await self.driver.execute(cmd, label=label)
        self._lacks_engine(cmd, rsp["status"])
        _coverage.sample(self, cmd, rsp["status"])
        expected = self.golden.execute(cmd, on_undefined="mask")
        if rsp["status"] != expected:
            raise StatusMismatch(cmd, expected, rsp["status"])
        mask = self.golden.last_undefined
        got = np.frombuffer(await self.ub_image(), np.uint8)
        care = np.ones(len(got), bool) if mask is None else ~mask
        bad = UbMismatch.compare(0, self.golden.ub, got, care=care, what="defined")
        if bad:
            raise bad
        self.golden.ub[:] = got
        gm_undefined = 0
        for lo, hi in self.golden.last_gm_undefined:
            self.golden.gm.write(lo, self.driver.gm_read(lo, hi - lo))
            gm_undefined += hi - lo
        return rsp, (0 if mask is None else int(mask.sum())) + gm_undefined

    # ---- the UB: debug port (default) or TSTORE -----------------------------------------------------

    async def ub_load(self, address, data, *, shadow=True):
        """Write ``data`` to the RTL's UB at byte ``address`` through the UB debug port (one word per
        cycle, exact byte enables: bytes outside the range keep their values), and, with ``shadow``,
        to the golden machine's UB. Must be awaited between commands (the port is granted only while
        the unit is idle; it waits for that)."""
        data = bytes(data)
        self._ub_range(address, len(data))
        W = self.config.ub_word_bytes
        ops = []
        for word in range(address // W, -(-(address + len(data)) // W)):
            lo, hi = max(address, word * W), min(address + len(data), (word + 1) * W)
            off = lo - word * W
            ops.append((1, word, int.from_bytes(data[lo - address:hi - address], "little") << (8 * off),
                        ((1 << (hi - lo)) - 1) << off))
        await self._debug(ops)
        if shadow:
            import numpy as np
            self.golden.ub[address:address + len(data)] = np.frombuffer(data, np.uint8)

    async def ub_read(self, address, length):
        """``length`` bytes of the RTL's UB from byte ``address``, read through the UB debug port (one
        word per cycle; nothing else in the unit moves). Awaited between commands, like :meth:`ub_load`."""
        self._ub_range(address, length)
        W = self.config.ub_word_bytes
        first = address // W
        words = await self._debug([(0, word, 0, 0) for word in range(first, -(-(address + length) // W))])
        raw = b"".join(w.to_bytes(W, "little") for w in words)
        return raw[address - first * W:address - first * W + length]

    async def ub_image(self, via=None):
        """The RTL's whole UB. ``via="port"`` (the default when the unit has the debug port): read
        through the UB debug port; ``via="tstore"``: through a TSTORE of the whole UB into the GM scratch
        area at ``SCRATCH`` (not shadowed; exercises TSTORE, ~10x slower)."""
        via = via or ("port" if self.has_debug_port else "tstore")
        if via == "port":
            return await self.ub_read(0, self.config.ub_bytes)
        if via != "tstore":
            raise ValueError(f"via must be 'port' or 'tstore', not {via!r}")
        cols = 256
        rows = self.config.ub_bytes // cols
        cmd = {"opcode": Opcode.TSTORE, "src0": tile(0, rows, cols, DType.UINT8),
               "gm": gm_region(SCRATCH, rows, cols, DType.UINT8)}
        rsp = await self.driver.execute(cmd, label="ub readback")
        if rsp["status"] != Status.OK:
            raise StatusMismatch(cmd, Status.OK, rsp["status"], reference=None)
        return self.driver.gm_read(SCRATCH, self.config.ub_bytes)

    async def check_ub(self, via=None):
        """The whole UB, RTL against golden (:meth:`ub_image` ``via``); raises ``UbMismatch``."""
        bad = UbMismatch.compare(0, bytes(self.golden.ub), await self.ub_image(via))
        if bad:
            raise bad

    def check_gm(self, address, length):
        """GM bytes ``[address, address + length)``, RTL's model against golden; raises ``GmMismatch``."""
        bad = GmMismatch.compare(address, self.golden.gm.read(address, length),
                                 self.driver.gm_read(address, length))
        if bad:
            raise bad

    def _ub_range(self, address, length):
        if not self.has_debug_port:
            raise RuntimeError("this unit has no UB debug port (Config.ub_debug_port=False): "
                               "load the UB with TLOAD, read it with ub_image(via='tstore')")
        if address < 0 or length < 0 or address + length > self.config.ub_bytes:
            raise ValueError(f"UB range 0x{address:x} + {length} is outside the {self.config.ub_bytes}-byte UB")

    async def _zero_ub(self):
        """Zero the RTL's whole UB through the debug port (one word per cycle; not shadowed: for
        :meth:`start`, whose golden machine starts from zeros)."""
        W = self.config.ub_word_bytes
        await self._debug([(1, word, 0, (1 << W) - 1) for word in range(self.config.ub_words)])

    async def _debug(self, ops):
        """Run ``(we, word, wdata, be)`` transfers on the UB debug port, back to back (one per cycle
        while ``ready``); returns the read words in order. Handshakes are sampled at the clock edge."""
        dut, clk = self.dut, self.dut.clk
        valid, ready, we_sig, addr = dut.ub_dbg__valid, dut.ub_dbg__ready, dut.ub_dbg__we, dut.ub_dbg__addr
        wdata, be, rdata, rvalid = dut.ub_dbg__wdata, dut.ub_dbg__be, dut.ub_dbg__rdata, dut.ub_dbg__rvalid
        out, pending, i = [], 0, 0
        while i < len(ops) or pending:
            if i < len(ops):
                we, word, data, enables = ops[i]
                valid.value, we_sig.value, addr.value = 1, we, word
                if we:
                    wdata.value, be.value = data, enables
            else:
                valid.value = 0
            await RisingEdge(clk)
            if pending and rvalid.value:           # the read accepted at the previous edge
                out.append(int(rdata.value))
                pending -= 1
            if i < len(ops) and ready.value:       # this op was accepted at this edge
                pending += not ops[i][0]
                i += 1
        valid.value = 0
        return out


#: :meth:`Harness.start` calls in this simulator process so far. A run of several testcases
#: (``sim.regress.run_group``) starts every one after the first from the UB its predecessor wrote; reset
#: does not clear RAM, so ``start`` zeroes it (the golden machine starts from zeros).
_starts = 0


def _current_test_name():
    """The running testcase's label: ``TILEVEC_TEST`` (a run of one testcase, labelled by the runner), else
    cocotb's name of the running test as ``sim.runner.testcase_label`` writes it (a run of several)."""
    label = os.environ.get("TILEVEC_TEST")
    if label:
        return label
    from cocotb.task import current_task
    from sim.runner import testcase_label
    try:
        name = current_task().get_name()    # the test's main task: "Test <its name>"
    except RuntimeError:
        return ""
    return testcase_label(name.removeprefix("Test "))
