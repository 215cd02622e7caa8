"""One bench for engine block tests in Amaranth's simulator: an engine against the real UB, the AXI slave
model and the golden machine. A block test writes only its stimulus.

The engine (anything with :class:`rtl.engines.base.EngineSignature`, as an instance or a class taking the
config) is wired to the real :class:`rtl.ub.buffer.UnifiedBuffer` (read port ``i`` to UB read port ``i``) and,
when it has an ``axi`` port, to :class:`rtl_axi_slave.AxiSlaveModel` (random stalls, protocol checks).
Every command also runs on a :class:`golden.machine.Machine` that starts from the same UB and GM; after
each command the bench asserts that the engine's status equals the golden one, that the *whole* UB is
equal bit for bit (read through a backdoor, no cycles spent) and so are the GM windows asked for, and
that the AXI slave saw no protocol error. Per command it returns a :class:`Result`: status, cycles from
``start`` to ``done`` (0: ``done`` in the ``start`` cycle), and the AXI reads and writes it issued.

A new engine's block test, commands known up front::

    from rtl_engine_bench import run_engine

    def test_my_engine_block():
        config = preset("small")
        rng = random.Random(1)
        cmds = [random_legal_command(rng, config) for _ in range(12)]   # the test's own stimulus
        results = run_engine(config, MyEngine, cmds, ub_init=rng.randbytes(config.ub_bytes))
        assert all(r.status == Status.OK for r in results)
        assert results[0].cycles == 132                                  # throughput, if it matters

State written between commands, or the AXI traffic inspected, through the bench itself::

    bench = EngineBench(config, TransferEngine(config), seed=3, stall=0.4, gm_windows=[(OUT, 4096)])
    bench.gm_write(TABLE, table)                    # GM of the AXI model and of the golden machine

    async def stimulus(b):
        for idx, cmd in cases:
            b.ub_write(IDX_BASE, idx.tobytes())     # both UBs, between commands
            r = await b.execute(cmd, note=f"indices {idx.tolist()}")
            assert len(r.reads) == 3                # (address, beats) of each AR handshake

    bench.run(stimulus)

An engine given as a class is elaborated and compiled once per process for each configuration and reused,
reset, by the benches that follow (``_Design``: compiling an engine takes longer than most block tests
simulate); an instance gets a design of its own. A bench that watches the engine overrides
:meth:`EngineBench.monitor` (a process; ``test_rtl_transfer.ProtocolBench`` checks the AXI handshakes).

Commands the golden machine rejects in its checks are a bug in the stimulus (an engine only receives
commands the checker passed): the bench raises. Execution-time statuses (``EXEC_STATUSES``) are compared
like ``OK``. Results the golden model calls undefined raise too, unless the bench is made with
``on_undefined="mask"``: then those bytes are not compared, and the golden UB adopts the engine's bytes
there so that later commands start from the same state.
"""

import collections
import sys
from typing import NamedTuple

import numpy as np
from amaranth import Cat, Elaboratable, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.sim import Simulator

from golden.machine import Machine
from rtl.top import VectorUnit
from rtl.isa import Command, EXEC_STATUSES, Status
from rtl.ub.buffer import UnifiedBuffer

from rtl_axi_slave import AxiSlaveModel

__all__ = ["EngineBench", "Result", "run_engine"]


class Result(NamedTuple):
    status: Status
    cycles: int     #: clock edges from the ``start`` cycle to the ``done`` cycle
    reads: list     #: (address, beats) of every AR handshake during the command
    writes: list    #: (address, beats) of every AW handshake during the command


class _BenchUb(UnifiedBuffer):
    """The real UB, keeping its bank memories (``mem_even``/``mem_odd``, word ``w`` at row ``w >> 1``
    of bank ``w & 1``) so the bench can read and write them without spending cycles. Mirrors the
    banking of :class:`rtl.ub.buffer.UnifiedBuffer`: if that changes, change this (a wrong mapping shows up
    as UB differences in every test, and test_rtl_mgather cross-checks it through TSTORE)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        self.banks = (m.submodules.mem_even, m.submodules.mem_odd)
        return m

    def rows(self, first, last):
        """Words ``first`` to ``last - 1`` as one value, lowest address in the lowest bits."""
        return Cat(*(self.banks[w & 1].data[w >> 1] for w in range(first, last)))


class _Top(Elaboratable):
    """The engine wired to the UB. The engine's write handshake: ``ready`` is high unless
    ``write_stalls`` is set; then it is low in a pseudo-random quarter of the cycles (a 16-bit LFSR), the
    way a write port shared with other pipes refuses words, or with ``scarce`` high in a quarter only (the
    engine's write queue stays nearly full)."""

    def __init__(self, engine, ub, scarce=False):
        self.engine, self.ub, self.scarce = engine, ub, scarce
        self.write_stalls = Signal()
        self.write_ready = Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.engine, m.submodules.ub = self.engine, self.ub
        members = self.engine.signature.members
        if "ub_wr" in members:
            wr = self.engine.ub_wr
            lfsr = Signal(16, init=0xACE1)
            m.d.sync += lfsr.eq(Cat(lfsr[1:], lfsr[0] ^ lfsr[2] ^ lfsr[3] ^ lfsr[5]))
            ready = self.write_ready
            takes = (lfsr[:2] == 0) if self.scarce else (lfsr[:2] != 0)
            m.d.comb += [ready.eq(~self.write_stalls | takes), wr.ready.eq(ready),
                         self.ub.wr.addr.eq(wr.addr), self.ub.wr.data.eq(wr.data),
                         self.ub.wr.be.eq(Mux(wr.valid & ready, wr.be, 0))]
        if "ub_rd" in members:
            assert len(self.engine.ub_rd) <= len(self.ub.rd), "engine has more read ports than the config"
            for port, ub_port in zip(self.engine.ub_rd, self.ub.rd):
                wiring.connect(m, port, ub_port)
        return m


def most_in_flight(trace):
    """The most commands started and not yet done at once in a ``trace`` of
    :meth:`EngineBench.execute_overlapped` (a start and a done in one cycle: the start is listed first and
    counts beside the one done)."""
    most = level = 0
    for event, _, _ in trace:
        level += 1 if event == "start" else -1
        most = max(most, level)
    return most


def _first_difference(what, got, want, care, word, base=0):
    """None if ``got == want`` wherever ``care``; else a message naming the first differing address
    (``base`` + offset) with both sides' bytes of the word around it."""
    bad = np.flatnonzero((got != want) & care)
    if not len(bad):
        return None
    i = int(bad[0])
    w0 = max(0, i - (base + i) % word)
    show = lambda v: bytes(v[w0:w0 + word]).hex(" ")
    return (f"{what} differs at {len(bad)} bytes, first {base + i:#x}: engine {got[i]:#04x}, golden "
            f"{want[i]:#04x}; last {base + int(bad[-1]):#x}\n  engine [{base + w0:#x}:] {show(got)}"
            f"\n  golden [{base + w0:#x}:] {show(want)}")


class EngineBench:
    """One engine, the real UB, the AXI slave model (if the engine has ``axi``) and the golden machine.

    Parameters
    ----------
    config : rtl.config.Config
    engine : an engine instance, or a class called with ``config``
    seed, stall, latency : the AXI slave's stall RNG seed, stall probability per channel and cycle, and
        read latency in cycles (``rtl_axi_slave.AxiSlaveModel``)
    timeout : cycles after ``start`` without ``done`` before the bench declares a hang
    go_delay : cycles from ``start`` to ``go`` (``VectorUnit.GO_DELAY`` by default, as the front end
        does it); before ``go`` the bench asserts that the engine writes nothing and requests no AXI
        transfer (``rtl.engines.base.EngineSignature``, "Speculative start")
    gm_windows : [(address, bytes)] of GM compared with the golden machine after every command
    on_undefined : ``"raise"`` or ``"mask"``, passed to ``Machine.execute`` (see the module docstring)
    write_stalls : the UB write port refuses words in a pseudo-random quarter of the cycles (``_Top``), or
        with ``"scarce"`` takes them in a quarter only (an engine instance's bench); the bench then also
        asserts, every cycle, that a refused word stays offered unchanged

    Attributes: ``engine``, ``golden`` (the machine), ``axi`` (the slave model or None; ``axi.mem``
    is GM, ``axi.ar``/``axi.aw`` log every burst), ``results`` (a :class:`Result` per command so far).
    """

    def __init__(self, config, engine, *, seed=0, stall=0.3, latency=3, timeout=20_000, gm_windows=(),
                 on_undefined="raise", go_delay=VectorUnit.GO_DELAY, write_stalls=False):
        self.config = config
        if write_stalls and not config.ub_write_queues:
            raise ValueError("EngineBench(write_stalls=True) refuses UB writes: build the engine with "
                             "Config.ub_write_queues=True (preset(name, ub_write_queues=True)); without its "
                             "output queues an engine whose pipeline cannot stop loses the refused words")
        self.write_stalls = write_stalls
        # an engine class: the design built for it is reused (``_Design``); an instance: built for this bench
        self._design = _design(engine, config) if isinstance(engine, type) else None
        self.engine = self._design.engine if self._design else engine
        self.golden = Machine(config)
        self.axi = None
        if "axi" in self.engine.signature.members:
            self.axi = AxiSlaveModel(self.engine.axi, config.axi_data_bytes, seed=seed, stall=stall,
                                     latency=latency, max_burst=config.max_burst_beats)
        self.timeout, self.gm_windows, self.on_undefined = timeout, list(gm_windows), on_undefined
        self.go_delay = go_delay
        self.results = []
        self._ub = self._design.ub if self._design else _BenchUb(config)
        assert write_stalls != "scarce" or not self._design, "write_stalls='scarce' needs an engine instance"
        self._top = self._design.top if self._design else _Top(self.engine, self._ub, scarce=write_stalls == "scarce")
        self._stimulus = ()
        self._ctx = None        # the testbench context while the simulation runs
        self._whole = None      # all UB words as one value (built once: the banks exist after elaboration)

    # ------------------------------------------------------------------------------------- state
    def ub_write(self, addr, data):
        """Write ``data`` at UB byte ``addr`` in both UBs; before ``run`` or between commands."""
        data = np.frombuffer(bytes(data), np.uint8)
        self.golden.ub[addr:addr + len(data)] = data
        if self._ctx is not None and len(data):
            W = self.config.ub_word_bytes
            self._store(addr // W, -(-(addr + len(data)) // W))

    def gm_write(self, addr, data):
        """Write ``data`` at GM ``addr`` in the AXI slave's memory and the golden machine's."""
        assert self.axi is not None, "this engine has no AXI port"
        # a slice assignment past the end would silently grow the bytearray
        assert 0 <= addr and addr + len(data) <= len(self.axi.mem), f"GM write {addr:#x} outside the AXI model"
        self.axi.mem[addr:addr + len(data)] = bytes(data)
        self.golden.gm.write(addr, data)

    def ub_read(self):
        """The RTL UB's bytes (numpy uint8), while the simulation runs."""
        value = self._ctx.get(self._whole)
        return np.frombuffer(value.to_bytes(self.config.ub_bytes, "little"), np.uint8)

    def _store(self, first, last):
        """Copy words ``first`` to ``last - 1`` from the golden UB into the RTL UB's memories."""
        W = self.config.ub_word_bytes
        self._ctx.set(self._ub.rows(first, last), int.from_bytes(self.golden.ub[first * W:last * W], "little"))

    # ------------------------------------------------------------------------------------- commands
    async def execute(self, cmd, note=""):
        """Run ``cmd`` on the engine and the golden machine, compare, return its :class:`Result`.
        ``note`` is added to failure messages (e.g. the stimulus that made the command)."""
        ctx, eng, k = self._ctx, self.engine, len(self.results)
        name = f"command {k} ({cmd['opcode'].name})"
        detail = f"\n{cmd}" + (f"\n{note}" if note else "")
        want = self.golden.execute(cmd, on_undefined=self.on_undefined)
        if want != Status.OK and want not in EXEC_STATUSES:
            raise AssertionError(f"{name}: the golden machine rejects it with {want.name}; an engine only "
                                 f"receives commands the checker passed{detail}")
        n_ar, n_aw = (len(self.axi.ar), len(self.axi.aw)) if self.axi else (0, 0)
        ctx.set(eng.cmd, Command.const(cmd))
        ctx.set(eng.start, 1)
        ctx.set(eng.go, self.go_delay == 0)
        cycles = 0
        refused = None                      # the word refused in the previous cycle (write_stalls)
        while True:
            if cycles < self.go_delay:      # speculative start: no side effect before ``go``
                self._assert_no_side_effects(f"{name}, cycle {cycles} after start, before go{detail}")
            if self.write_stalls:
                refused = self._check_refused_word(refused, f"{name}, cycle {cycles} after start{detail}")
            if ctx.get(eng.done):           # done may come in the start cycle (e.g. an empty tile)
                break
            await ctx.tick()
            ctx.set(eng.start, 0)
            cycles += 1
            ctx.set(eng.go, cycles >= self.go_delay)
            if cycles > self.timeout:
                raise AssertionError(f"{name}: engine hangs, no done {self.timeout} cycles after start{detail}")
        status = ctx.get(eng.status)
        await ctx.tick()
        ctx.set(eng.start, 0)
        ctx.set(eng.go, 0)
        await ctx.tick()                    # the UB registers its writes: the last lands a cycle later
        result = Result(status, cycles, self.axi.ar[n_ar:] if self.axi else [],
                        self.axi.aw[n_aw:] if self.axi else [])
        self.results.append(result)

        statuses = f"status: engine {getattr(status, 'name', status)}, golden {want.name}"
        assert status == want, f"{name}: {statuses}{detail}"
        if self.axi is not None:
            assert not self.axi.errors, f"{name}: AXI protocol errors {self.axi.errors}{detail}"
            diff = self._gm_difference()
            assert diff is None, f"{name} ({statuses}): {diff}{detail}"
        got, gold = self.ub_read(), self.golden.ub
        undefined = self.golden.last_undefined
        care = True if undefined is None else ~undefined
        diff = _first_difference("UB", got, gold, care, self.config.ub_word_bytes)
        assert diff is None, f"{name} ({statuses}): {diff}{detail}"
        gold[:] = got       # adopt the bytes the golden model left undefined
        return result

    async def execute_overlapped(self, cmds, note="", trace=None, in_flight=None):
        """Run ``cmds`` on an engine built with ``overlap`` (``rtl.engines.base.EngineSignature``'s ``release``)
        as the concurrent unit's front end does, one pipe: each command starts (``go`` with ``start``) in a
        cycle where the engine raises ``release`` and it conflicts with no command still in flight
        (``golden.access.hazards``; the unit's scoreboard holds those back), so a command usually starts while
        earlier ones are still in the engine. ``done`` must come once per command, in start order, with the
        golden status, and with every byte the command writes in the UB (read two cycles later, as
        :meth:`execute` does: its bytes equal the golden machine's after it) and in GM (at its ``done``: a write
        is in the slave's memory before its B response); after the last one the whole UB and the
        ``gm_windows`` must equal the golden machine's after all of them in order (bytes a command left
        undefined, e.g. under an AXI error, excepted). Returns ``(cycles, overlapped)``: from the first start to the last ``done``, and how many
        commands started while an earlier one was in flight. ``trace``: a list that gets ``("start" | "done",
        command, cycle)`` per event. ``in_flight``: start a command only while fewer are in flight (the unit's
        front end holds two per pipe)."""
        from golden.access import access, hazards
        ctx, eng = self._ctx, self.engine
        assert "release" in eng.signature.members, "execute_overlapped needs an engine built with overlap=True"
        detail = f"\n{note}" if note else ""
        want, after = [], []
        undefined = np.zeros(len(self.golden.ub), bool)     # bytes any command left undefined (``mask``)
        gm_after, gm_undefined = [], []     # per command: its GM writes' bytes after it; spans left undefined
        for k, cmd in enumerate(cmds):
            want.append(self.golden.execute(cmd, on_undefined=self.on_undefined))
            after.append(self.golden.ub.copy())
            if self.golden.last_undefined is not None:
                undefined |= self.golden.last_undefined
            gm_undefined += self.golden.last_gm_undefined
            gm_after.append([(lo, self.golden.gm.read(lo, hi - lo), list(gm_undefined))
                             for lo, hi in access(cmd).gm_writes if not self.golden.last_gm_undefined])
            assert want[-1] == Status.OK or want[-1] in EXEC_STATUSES, (
                f"command {k} ({cmd['opcode'].name}): the golden machine rejects it with {want[-1].name}{detail}")
        acc = [access(c) for c in cmds]
        flight = []                 # started, no done yet, oldest first
        nxt = cycle = overlapped = 0
        finished = 0
        idle = 0                    # cycles without a start or a done
        refused = None
        released = False            # ``release`` was high in the cycle before, and no ``start`` came
        # commands whose done came one and two cycles ago (the UB has the last word a cycle after it is taken)
        landing, landed = [], []
        while finished < len(cmds):
            if landed:
                got = self.ub_read()
                for k in landed:
                    for lo, hi in acc[k].ub_writes:
                        idx = np.arange(lo, hi) % len(got)
                        idx = idx[~undefined[idx]]
                        bad = np.nonzero(got[idx] != after[k][idx])[0]
                        assert not len(bad), (f"cycle {cycle}: command {k} ({cmds[k]['opcode'].name}) was done, but "
                                              f"UB byte {idx[bad[0]]:#x} is {got[idx[bad[0]]]:#04x}, want "
                                              f"{after[k][idx[bad[0]]]:#04x}{detail}")
                    # (a GM write is in the slave's memory before its B response, so at ``done``)
                    # (bytes an earlier command left undefined excepted: a span's gaps between its lines)
                    for lo, data, holes in gm_after[k]:
                        got_gm = bytes(self.axi.mem[lo:lo + len(data)])
                        bad = next((j for j in range(len(data)) if got_gm[j] != data[j]
                                    and not any(a <= lo + j < b for a, b in holes)), None)
                        assert bad is None, (f"cycle {cycle}: command {k} ({cmds[k]['opcode'].name}) was done, but "
                                             f"GM byte {lo + bad:#x} is {got_gm[bad]:#04x}, want {data[bad]:#04x}{detail}")
            landing, landed = [], landing
            ctx.set(eng.start, 0)
            # ``release``, once high, stays high until a ``start``: the concurrent unit acts on it a cycle late
            # (``rtl.concurrent._engine_port``'s register)
            release = ctx.get(eng.release)
            assert release or not released, (f"cycle {cycle}: release fell without a start (in flight {flight}, "
                                             f"next {nxt}){detail}")
            # (a command done in this cycle still counts as in flight: its last word lands at this edge)
            # (an opcode the engine does not take early waits until nothing is in flight: the front end's rule)
            released = release
            if (nxt < len(cmds) and release and (in_flight is None or len(flight) < in_flight)
                    and (not flight or cmds[nxt]["opcode"] in type(eng).overlap_opcodes())
                    and not any(hazards(acc[j], acc[nxt]) for j in flight)):
                ctx.set(eng.cmd, Command.const(cmds[nxt]))
                ctx.set(eng.start, 1)
                ctx.set(eng.go, 1)
                overlapped += bool(flight)
                if trace is not None:
                    trace.append(("start", nxt, cycle))
                flight.append(nxt)
                nxt += 1
                idle = 0
                released = False
            if self.write_stalls:
                refused = self._check_refused_word(refused, f"cycle {cycle} of the stream{detail}")
            if ctx.get(eng.done):
                assert flight, f"cycle {cycle}: done with no command in flight{detail}"
                k = flight.pop(0)
                # with nothing younger in flight, every write burst so far is this command's or older: a
                # ``done`` before their last B response would be early
                assert flight or self.axi is None or self.axi.b_count == len(self.axi.aw), (
                    f"cycle {cycle}: command {k} ({cmds[k]['opcode'].name}) done with {len(self.axi.aw)} write "
                    f"bursts sent and only {self.axi.b_count} answered{detail}")
                landing.append(k)
                if trace is not None:
                    trace.append(("done", k, cycle))
                status = ctx.get(eng.status)
                assert status == want[k], (f"command {k} ({cmds[k]['opcode'].name}): status engine "
                                           f"{getattr(status, 'name', status)}, golden {want[k].name}{detail}")
                finished += 1
                idle = 0
            await ctx.tick()
            cycle += 1
            idle += 1
            assert idle < self.timeout, f"engine hangs in the stream: in flight {flight}, next {nxt}{detail}"
        ctx.set(eng.start, 0)
        ctx.set(eng.go, 0)
        await ctx.tick()                    # the UB registers its writes: the last lands a cycle later
        got, gold = self.ub_read(), self.golden.ub
        diff = _first_difference("UB", got, gold, ~undefined, self.config.ub_word_bytes)
        assert diff is None, f"after the stream of {len(cmds)} commands: {diff}{detail}"
        if self.axi is not None:
            assert not self.axi.errors, f"AXI protocol errors {self.axi.errors}{detail}"
            diff = self._gm_difference(gm_undefined)
            assert diff is None, f"after the stream of {len(cmds)} commands: {diff}{detail}"
        return cycle - 1, overlapped

    def _gm_difference(self, undefined=()):
        """None if every ``gm_windows`` byte of the AXI slave's memory equals the golden machine's GM, bytes in
        the ``undefined`` spans ``(lo, hi)`` excepted; else :func:`_first_difference`'s message."""
        for a, n in self.gm_windows:
            got = np.frombuffer(bytes(self.axi.mem[a:a + n]), np.uint8)
            exp = np.frombuffer(self.golden.gm.read(a, n), np.uint8)
            care = np.ones(n, bool)
            for lo, hi in undefined:
                care[max(lo, a) - a:max(min(hi, a + n) - a, 0)] = False
            diff = _first_difference("GM", got, exp, care, self.config.axi_data_bytes, base=a)
            if diff is not None:
                return diff
        return None

    def _check_refused_word(self, refused, where):
        """Holds the engine to its write handshake: a word refused in the previous cycle (``refused``:
        its addr, data, be) is offered again unchanged. Returns the word refused in this cycle, or None."""
        ctx, wr = self._ctx, self.engine.ub_wr
        word = (ctx.get(wr.addr), ctx.get(wr.data), ctx.get(wr.be)) if ctx.get(wr.valid) else None
        if refused is not None:
            assert word == refused, (f"a UB write refused by the port was not offered again unchanged: "
                                     f"{where}\n  refused (addr, data, be) {refused}\n  now {word}")
        return word if word is not None and not ctx.get(self._top.write_ready) else None

    def _assert_no_side_effects(self, where):
        eng, ctx = self.engine, self._ctx
        members = eng.signature.members
        if "ub_wr" in members:
            assert not ctx.get(eng.ub_wr.valid), f"UB write offered before go: {where}"
        if "axi" in members:
            for valid in ("arvalid", "awvalid", "wvalid"):
                assert not ctx.get(getattr(eng.axi, valid)), f"{valid} before go: {where}"

    def run(self, stimulus):
        """Simulate: preload the UB, then await ``stimulus(self)`` (an async function) or execute each
        command of a list. Returns ``results``."""
        self._stimulus = stimulus
        if self._design is not None:
            self._design.run(self)
            return self.results
        sim = Simulator(self._top)
        sim.add_clock(1e-8)
        if self.axi is not None:
            sim.add_process(self.axi.read_side)
            sim.add_process(self.axi.write_side)
        sim.add_process(self.monitor)
        sim.add_testbench(self._testbench)
        try:
            sim.run()
        finally:
            self._ctx = None
        return self.results

    async def monitor(self, ctx):
        """A process that watches the engine while the bench runs (a subclass's protocol checks; an
        assertion fails the simulation at once). Default: none."""

    async def _testbench(self, ctx):
        self._ctx = ctx
        try:
            self._whole = self._ub.rows(0, self.config.ub_words)
            ctx.set(self._top.write_stalls, bool(self.write_stalls))
            self._store(0, self.config.ub_words)
            if callable(self._stimulus):
                await self._stimulus(self)
            else:
                for cmd in self._stimulus:
                    await self.execute(cmd)
        finally:
            self._ctx = None


def _rtl_constants():
    """A fingerprint of the upper-case constants of the loaded ``rtl`` modules and of their classes: a test
    that patches one (``monkeypatch``) before it runs an engine gets a design of its own."""
    items = []
    for name, module in sorted(sys.modules.items()):
        if module is None or not (name == "rtl" or name.startswith("rtl.")):
            continue
        for key, value in vars(module).items():
            if key.isupper():
                items.append((name, key, repr(value)))
            elif isinstance(value, type) and value.__module__ == name:
                items.extend((name, key, k, repr(v)) for k, v in vars(value).items() if k.isupper())
    return hash(tuple(items))


class _Design:
    """An engine of one class and configuration wired to a bench UB, elaborated and compiled into a
    ``Simulator`` once and reused, after ``Simulator.reset`` (every signal and memory back to its initial
    value, every process restarted), by the benches that follow: elaborating and compiling an engine takes
    longer than most block tests simulate. The AXI slave processes and the testbench are trampolines to
    the bench that runs."""

    def __init__(self, engine_class, config):
        self.engine, self.ub = engine_class(config), _BenchUb(config)
        self.top = _Top(self.engine, self.ub)
        self.sim = Simulator(self.top)
        self.sim.add_clock(1e-8)
        if "axi" in self.engine.signature.members:
            self.sim.add_process(self._axi_read)
            self.sim.add_process(self._axi_write)
        self.sim.add_process(self._monitor)
        self.sim.add_testbench(self._testbench)
        self.bench, self.used = None, False

    async def _axi_read(self, ctx):
        await self.bench.axi.read_side(ctx)

    async def _axi_write(self, ctx):
        await self.bench.axi.write_side(ctx)

    async def _monitor(self, ctx):
        await self.bench.monitor(ctx)

    async def _testbench(self, ctx):
        await self.bench._testbench(ctx)

    def run(self, bench):
        self.bench = bench
        if self.used:
            self.sim.reset()
        self.used = True
        self.sim.run()


#: Designs kept per process (least recently used dropped): a test module's configurations.
DESIGNS_KEPT = 3
_designs = collections.OrderedDict()


def _design(engine_class, config):
    """The :class:`_Design` of ``engine_class`` for ``config`` (built on first use)."""
    key = (engine_class, config, _rtl_constants())
    design = _designs.pop(key, None) or _Design(engine_class, config)
    _designs[key] = design
    while len(_designs) > DESIGNS_KEPT:
        _designs.popitem(last=False)
    return design


def run_engine(config, engine, commands, *, ub_init=None, gm_init=None, **options):
    """Run ``commands`` on a fresh :class:`EngineBench` (``options``: its keyword parameters) whose UB
    starts as ``ub_init`` (bytes from address 0; default zeros) and GM as ``gm_init`` ({address: bytes}).
    Returns a :class:`Result` per command."""
    bench = EngineBench(config, engine, **options)
    if ub_init is not None:
        bench.ub_write(0, ub_init)
    for addr, data in (gm_init or {}).items():
        bench.gm_write(addr, data)
    return bench.run(commands)
