"""``VectorUnit``: the top level. Command front end, checker, engines, and the shared UB and AXI port."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.checker.checker import Checker
from rtl.concurrent import elaborate_concurrent
from rtl.engines.base import GO_DELAY, GO_REGISTER_CYCLES, START_REGISTER_CYCLES, Engine
from rtl.engines.elementwise.engine import ElementwiseEngine
from rtl.engines.gemv.engine import GemvEngine
from rtl.engines.local_gather.engine import LocalGatherEngine
from rtl.engines.transfer.engine import TransferEngine
from rtl.frontend.counters import PIPES, PerfSignature, PipeCounters, pipe_select
from rtl.frontend.engine_domain import engine_domain
from rtl.isa import COMMAND_BITS, FRONT_END_OPCODES, RESPONSE_BITS, Command, Response, Status
from rtl.lib.axi import Axi4Signature, AxiStreamSignature
from rtl.lib.mux import and_or
from rtl.ub.buffer import UnifiedBuffer
from rtl.ub.debug import UbDebugSignature, debug_port

__all__ = ["VectorUnit", "ENGINES", "engines_for", "supported_opcodes", "check_engines", "UbDebugSignature"]

#: The engine classes (:class:`rtl.engines.base.Engine`) a unit can have, in dispatch order. A new engine
#: is registered here (docs/architecture.md, "Adding an engine").
ENGINES = (TransferEngine, LocalGatherEngine, ElementwiseEngine, GemvEngine)


def check_engines(engines=ENGINES):
    """The registry's own rules, checked whenever a unit is built: every engine an :class:`Engine` (whose
    class checks its own attributes), names unique, no opcode in two engines. Raises ``TypeError``."""
    names, owner = {}, {}
    for cls in engines:
        if not (isinstance(cls, type) and issubclass(cls, Engine)):
            raise TypeError(f"{cls!r} is not an rtl.engines.base.Engine")
        if cls.name in names:
            raise TypeError(f"engines {names[cls.name].__name__} and {cls.__name__} share the name {cls.name!r}")
        names[cls.name] = cls
        for op in cls.opcodes:
            if op in owner:
                raise TypeError(f"{op.name} is in both {owner[op].__name__} and {cls.__name__}")
            owner[op] = cls
    return names


def engines_for(config):
    """The engines a unit of ``config`` has, in :data:`ENGINES` order: those named in ``config.engines``
    (all of them when it is ``None``) that are ``available(config)``. Raises ``ValueError`` for a name
    that is no engine, or an engine named explicitly that this configuration cannot have (the
    elementwise and GEMV engines need two UB read ports)."""
    names = check_engines()
    if config.engines is None:
        return tuple(cls for cls in ENGINES if cls.available(config))
    unknown = [n for n in config.engines if n not in names]
    if unknown:
        raise ValueError(f"Config.engines: {', '.join(map(repr, unknown))} is no engine; engines: "
                         f"{', '.join(names)}")
    missing = [n for n in config.engines if not names[n].available(config)]
    if missing:
        raise ValueError(f"Config.engines: {', '.join(missing)} cannot be built in this configuration "
                         f"(ub_read_ports={config.ub_read_ports}; see its available())")
    return tuple(cls for cls in ENGINES if cls.name in config.engines)


def supported_opcodes(config):
    """The opcodes a unit of ``config`` executes (every other known opcode answers ``UNSUPPORTED``): its
    engines' and the front end's own (:data:`rtl.isa.FRONT_END_OPCODES`, TSYNC); the set the golden
    model (``golden.Machine(config, supported=...)``) and coverage take."""
    return frozenset(op for cls in engines_for(config) for op in cls.opcodes) | FRONT_END_OPCODES


class VectorUnit(wiring.Component):
    """The tile vector unit.

    Parameters
    ----------
    config : :class:`rtl.config.Config`

    Ports (top-level Verilog names in brackets)
    -----
    s_axis_cmd : AXI4-Stream sink, ``tdata`` = one :data:`rtl.isa.Command` [``s_axis_cmd__tdata`` ...]
    m_axis_rsp : AXI4-Stream source, ``tdata`` = one :data:`rtl.isa.Response` per command, in order
    m_axi : AXI4 master to global memory [``m_axi__araddr`` ...]; ID 0 only, INCR bursts
    perf : per-pipe busy counters, :class:`rtl.frontend.counters.PerfSignature` [``perf__busy__0`` ...
        ``perf__busy__3``: GM -> UB, UB -> GM, vector, matrix]: the ``cycles`` of the pipe's executed
        instructions summed since reset, ``PipeCounters.LATENCY`` (2) cycles after their responses are taken
        (``Config.concurrent``: the cycles each pipe ran an instruction, ``perf__stalled__0..3`` the
        cycles its next instruction waited on a hazard, ``perf__early__0..3`` its instructions that started
        while its previous one was still in the engine)
    ub_dbg : UB debug port, flipped :class:`UbDebugSignature` (only with ``config.ub_debug_port``, the
        default) [``ub_dbg__valid``, ``ub_dbg__ready``, ``ub_dbg__we``, ``ub_dbg__addr`` (word address),
        ``ub_dbg__wdata``, ``ub_dbg__be``, ``ub_dbg__rdata``, ``ub_dbg__rvalid``]
    (plus ``clk`` and synchronous active-high ``rst`` from the default clock domain)

    UB debug port: reads and writes UB words directly, one per cycle, for testbenches (load a whole UB
    image, read it back) without going through TLOAD/TSTORE. ``ready`` is high exactly while the front
    end is idle (the cycles ``s_axis_cmd.tready`` is high: no command in flight), so it can never
    disturb an instruction; an access in the cycle a command is accepted takes effect before that
    command. It shares UB read port 0 and the write port with the engines (no extra RAM port); a read
    returns ``rdata`` with ``rvalid`` ``UnifiedBuffer.READ_LATENCY`` (3) cycles after the transfer, and
    reads may follow each other every cycle. Tie ``valid`` low when unused.

    Behaviour: one instruction at a time. A command is accepted (``tready`` high) only when the unit
    is idle. TSYNC (:data:`rtl.isa.FRONT_END_OPCODES`), the barrier, goes to no engine: the checker passes
    it and the front end answers ``OK`` at the verdict (``cycles`` = :attr:`REJECT_CYCLES`); with one
    instruction at a time, everything before it has finished when it is accepted. The engine for its opcode gets ``start`` in the next cycle (speculatively, from a
    register) and owns the shared UB and AXI ports from then on, so it may read the UB at once; the
    checker (:class:`rtl.checker.checker.Checker`, ``LATENCY`` register stages) decides meanwhile. A passing
    verdict raises the engine's ``go`` from a register :attr:`GO_DELAY` cycles after ``start`` (its
    first UB write or AXI request may follow); a failing one resets the engine (from registers, in the
    second cycle after the verdict), which has touched nothing, and answers the checker's status (``cycles`` =
    :attr:`REJECT_CYCLES`). ``cycles`` in the response counts clock cycles from the acceptance edge to
    the edge that raises ``tvalid``; ``queued`` those before the engine's ``start`` (1; for a command no
    engine runs, a rejected one or TSYNC, all of them), as on the concurrent unit, where it is the wait in
    the checker, the pipe's queue and on hazards.

    Timing: every multiplexer over the engines is an AND-OR of a one-hot select held in registers, and
    the UB registers what it is given (rtl/ub/buffer.py), so the front end adds one LUT level between an
    engine's UB port and a register.
    """

    def __init__(self, config):
        self.config = config
        ports = {
            "s_axis_cmd": In(AxiStreamSignature(COMMAND_BITS)),
            "m_axis_rsp": Out(AxiStreamSignature(RESPONSE_BITS)),
            "m_axi": Out(Axi4Signature(addr_width=config.gm_addr_bits, data_width=config.axi_data_bits,
                                       id_width=config.axi_id_bits)),
            "perf": Out(PerfSignature(stalled=config.concurrent)),
        }
        if config.ub_debug_port:
            ports["ub_dbg"] = In(UbDebugSignature(config))
        super().__init__(ports)

    #: Cycles from an engine's ``start`` to its ``go`` for a command the checker passes: the checker's
    #: pipeline, then one register (``go`` reaches every engine from a flip-flop); the engine contract's
    #: ``rtl.engines.base.GO_DELAY``.
    GO_DELAY = GO_DELAY
    #: ``cycles`` of a response to a command the checker rejects: the verdict, then the response's register.
    REJECT_CYCLES = Checker.LATENCY + GO_REGISTER_CYCLES
    #: Cycles an engine's UB write spends in the front end before it reaches the UB's write port (one
    #: register per engine, :meth:`_write_register`).
    WRITE_DELAY = 1

    def elaborate(self, platform):
        cfg = self.config
        classes = engines_for(cfg)
        if cfg.concurrent:              # the pipes at once: another front end, the same ports
            return elaborate_concurrent(self, classes, platform)
        m = Module()
        engines = [cls(cfg) for cls in classes]
        m.submodules.ub = ub = UnifiedBuffer(cfg)
        m.submodules.checker = checker = Checker(cfg, classes)
        m.submodules.counters = counters = PipeCounters()
        wiring.connect(m, counters.perf, wiring.flipped(self.perf))

        cmd = Signal(Command)
        tag = Signal(Command["tag"].shape)
        status = Signal(Status)
        # A rejected command answers the checker's status from a register of its own, loaded every cycle
        # (the checker holds its command until the front end is idle, so its status is the verdict's from
        # then on): the priority encoder over the checker's flags then ends in a register, not in the
        # front end's status multiplexer (a 10.7 ns path of the whole unit).
        chk_status = Signal(Status)
        rejected = Signal()
        m.d.sync += chk_status.eq(checker.status)
        cycles = Signal(Response["cycles"].shape)
        pipe = Signal(len(PIPES), name="cmd_pipe")       # one-hot pipe of the accepted command
        # One-hot engine select, a register per engine (all zero: no engine): every multiplexer over
        # the engines is an AND-OR of registers, and each engine's ``start`` is a flip-flop.
        sel = [Signal(name=f"sel_{type(e).__name__.lower()}") for e in engines]
        start = [Signal(name=f"start_{type(e).__name__.lower()}") for e in engines]
        wait = Signal(range(Checker.LATENCY + 1))    # CHECK cycles so far
        early_done = Signal()                        # the engine finished before the verdict
        early_status = Signal(Status)
        # The command reaches the checker and every engine through a private copy, loaded from
        # ``s_axis_cmd.tdata`` at the same edge as ``cmd`` (timing: one held register drove thousands
        # of loads across the die; now each copy sits next to its consumer, see _held_copy).
        accept = Signal()                            # IDLE and tvalid: the command is taken at this edge
        opcode = Command(self.s_axis_cmd.tdata).opcode
        mines = [Signal(name=f"mine_{type(e).__name__.lower()}") for e in engines]   # tdata is for this engine
        m.d.comb += [mine.eq(Cat(opcode == op for op in e.opcodes).any()) for mine, e in zip(mines, engines)]
        ret = Signal()                               # RESPOND and the response taken: IDLE next
        # ``tready`` is a register of its own, high exactly in IDLE (a decode of the state register drove
        # the port and, through it, the wrapper's output register and the UB debug port's multiplexers)
        m.d.comb += self.s_axis_cmd.tready.eq(self._load_flag(m, "tready", accept, ret))
        # the checker holds its own copy; it takes the command at the accepting edge (its stage 1)
        checker_load = self._load_flag(m, "checker", accept, ret)
        m.d.comb += [checker.cmd.eq(self.s_axis_cmd.tdata), checker.load.eq(checker_load)]
        # ``go``, a register per engine; the abort decision per engine (the verdict cycle)
        gos = [Signal(name=f"go_{type(e).__name__.lower()}") for e in engines]
        aborts = [Signal(name=f"abort_{type(e).__name__.lower()}") for e in engines]
        loads = []
        for engine, st, g, ab in zip(engines, start, gos, aborts):
            name = type(engine).__name__.lower()
            copy, load = self._held_copy(m, name, accept, ret)
            loads.append(load)
            m.d.comb += [engine.cmd.eq(copy), engine.go.eq(g), engine.start.eq(st)]
            m.submodules[name] = engine_domain(m, engine, name, ab, platform)
        engine_done = Signal()
        engine_status = Signal(Status)
        m.d.comb += [engine_done.eq(Cat(e.done & s for e, s in zip(engines, sel)).any()),
                     engine_status.eq(and_or([(s, e.status) for e, s in zip(engines, sel)], len(Status)))]
        m.d.sync += [st.eq(0) for st in start]

        with m.FSM(name="frontend"):
            with m.State("IDLE"):
                m.d.comb += accept.eq(self.s_axis_cmd.tvalid)
                m.d.sync += [wait.eq(0), early_done.eq(0), rejected.eq(0)] + [g.eq(0) for g in gos] + \
                            [s.eq(0) for s in sel]
                with m.If(self.s_axis_cmd.tvalid):
                    m.d.sync += [cmd.eq(self.s_axis_cmd.tdata), cycles.eq(0),
                                 pipe.eq(pipe_select(m, opcode, "accept_pipe"))]
                    # The engine starts in the first CHECK cycle, while the checker decides (speculatively:
                    # it may read the UB, but it holds its UB writes and AXI requests until ``go``).
                    # MGATHER fetches its first index there.
                    for s, st, mine in zip(sel, start, mines):
                        m.d.sync += [s.eq(mine), st.eq(mine)]
                    m.next = "CHECK"
            with m.State("CHECK"):
                m.d.sync += [cycles.eq(cycles + 1), tag.eq(cmd.tag), wait.eq(wait + 1)]
                with m.If(engine_done):                 # e.g. an empty transfer is done as it starts
                    m.d.sync += [early_done.eq(1), early_status.eq(engine_status)]
                with m.If(wait == Checker.LATENCY):     # the checker's verdict
                    with m.If(~checker.ok):
                        m.d.comb += [ab.eq(s) for ab, s in zip(aborts, sel)]
                        m.d.sync += rejected.eq(1)
                        m.next = "RESPOND"
                    with m.Elif(early_done | engine_done):
                        m.d.sync += status.eq(Mux(early_done, early_status, engine_status))
                        m.next = "RESPOND"
                    with m.Elif(~Cat(sel).any()):       # a front-end opcode (TSYNC): no engine runs it
                        m.d.sync += status.eq(Status.OK)
                        m.next = "RESPOND"
                    with m.Else():
                        m.d.sync += [g.eq(s) for g, s in zip(gos, sel)]
                        m.next = "RUN"
            with m.State("RUN"):
                m.d.sync += cycles.eq(cycles + 1)
                with m.If(engine_done):
                    m.d.sync += [status.eq(engine_status)] + [g.eq(0) for g in gos]
                    m.next = "RESPOND"
            with m.State("RESPOND"):
                rsp = Signal(Response)
                m.d.comb += [
                    rsp.tag.eq(tag), rsp.status.eq(Mux(rejected, chk_status, status)), rsp.cycles.eq(cycles),
                    # the engine started in the cycle after the acceptance; a rejected command or TSYNC ran none
                    rsp.queued.eq(Mux(rejected | ~Cat(sel).any(), cycles, START_REGISTER_CYCLES)),
                    self.m_axis_rsp.tvalid.eq(1),
                    self.m_axis_rsp.tdata.eq(rsp),
                ]
                with m.If(self.m_axis_rsp.tready):
                    m.d.comb += ret.eq(1)
                    # the pipe's busy counter: an instruction the checker passed (TSYNC has no pipe)
                    m.d.comb += [counters.add.eq(~rejected), counters.pipe.eq(pipe), counters.amount.eq(cycles)]
                    m.next = "IDLE"

        # Copies of the engine select for the shared ports, each a register of its own next to its loads
        # (_select_copy): the UB port multiplexers, the AXI multiplexer.
        # (one for the UB write port's mux apart from the read ports', and the AXI inputs' gates apart
        # from the outputs' mux)
        whats = ["ubsel", "ubwr", "axisel", "axiin"]
        selects = {what: [self._select_copy(m, f"{type(e).__name__.lower()}_{what}", mine, accept, load)
                          for e, mine, load in zip(engines, mines, loads)]
                   for what in whats}
        # the UB debug port's grant: a register of its own, high while the front end is idle (``tready``
        # is a decode of the state register, which then drove the debug port's UB multiplexers)
        if self.config.ub_debug_port:
            selects["dbg"] = self._load_flag(m, "ubdbg", accept, ret)
        self._share(m, engines, selects, ub)
        return m

    def _held_copy(self, m, name, accept, ret):
        """A private copy of the accepted command for one consumer (the checker or an engine): it follows
        ``s_axis_cmd.tdata`` while the front end is idle and holds the command from the edge that accepts
        it until the front end is idle again, exactly like ``cmd``. Its load enable is a register of its
        own (``<name>_load``, high while idle), so neither the copy's data nor its enable has a fan-out
        beyond its consumer, and yosys cannot merge the copies (each enable feeds back on itself).
        Reset-less: only its value at ``start`` matters, and the idle copy is loaded every cycle."""
        load = self._load_flag(m, name, accept, ret)
        copy = Signal(Command, name=f"{name}_cmd", reset_less=True)
        with m.If(load):
            m.d.sync += copy.eq(self.s_axis_cmd.tdata)
        return copy, load

    @staticmethod
    def _load_flag(m, name, accept, ret):
        """``<name>_load``: high while the front end is idle (a register of its own for each consumer,
        written with its own output so that yosys keeps the copies apart)."""
        load = Signal(init=1, name=f"{name}_load")
        m.d.sync += load.eq((load & ~accept) | ret)
        return load

    @staticmethod
    def _select_copy(m, name, mine, accept, load):
        """A register equal to the engine select ``sel_<engine>`` (set when a command for the engine is
        accepted, cleared when the front end is idle again: ``load``, the engine's idle flag, see
        :meth:`_held_copy`), written as AND/OR of its own output so that yosys keeps each copy a
        flip-flop of its own (identical flip-flops are merged) and each drives only its own loads."""
        copy = Signal(name=name)
        m.d.sync += copy.eq((accept & mine) | (copy & ~load))
        return copy

    def _share(self, m, engines, selects, ub):
        """Give the UB ports and the AXI master to the selected engine; AXI inputs reach only that engine.

        The UB registers its port inputs (``UnifiedBuffer``: addresses, enables and write data go through
        one register before the block RAMs), so the engine multiplexers here are AND-OR gates of the
        one-hot select in front of those registers, and nothing else is between.

        UB read data goes to every engine on the port as it is, with no gate, as the two bank words
        (``even`` / ``odd``): each engine's first use of it is an input register of its own that orders
        them and loads only when that engine's read arrives (``rtl.ub.buffer.ordered_window``; rule 3 in
        docs/architecture.md "Timing"), so an idle engine's datapath (the local_gather shifters, for
        one) does not re-evaluate on reads another engine or the debug port makes (in Icarus that
        activity made a whole-UB TSTORE of random data ~10x slower). While the front end is idle the UB
        debug port, if present, owns read port 0 and the write port."""
        axi = self.m_axi
        ubsel, axisel, axiin = selects["ubsel"], selects["axisel"], selects["axiin"]
        writers = []
        for engine, s in zip(engines, selects["ubwr"]):
            if "ub_wr" in engine.signature.members:
                writers.append((s, self._write_register(m, engine)))
        wr = {name: Signal.like(getattr(ub.wr, name), name=f"ub_wr_{name}") for name in ("addr", "data", "be")}
        for name, sig in wr.items():
            m.d.comb += sig.eq(and_or([(s, p[name]) for s, p in writers], len(sig)))
        for i, port in enumerate(ub.rd):
            readers = [(s, e.ub_rd[i]) for e, s in zip(engines, ubsel)
                       if "ub_rd" in e.signature.members and i < len(e.ub_rd)]
            m.d.comb += [port.addr.eq(and_or([(s, p.addr) for s, p in readers], len(port.addr))),
                         port.en.eq(and_or([(s, p.en) for s, p in readers], 1))]
            # (the engines order the even / odd words themselves: rtl.ub.buffer.ordered_window)
            m.d.comb += [p.even.eq(port.even) for _, p in readers] + [p.odd.eq(port.odd) for _, p in readers]
        for engine, s, s_in in zip(engines, axisel, axiin):
            if "axi" in engine.signature.members:
                for name, member in engine.axi.signature.members.items():
                    ours, theirs = getattr(axi, name), getattr(engine.axi, name)
                    if member.flow == Out:
                        with m.If(s):
                            m.d.comb += ours.eq(theirs)
                    elif name in ("rvalid", "bvalid", "arready", "awready", "wready"):
                        m.d.comb += theirs.eq(ours & s_in)
                    else:
                        m.d.comb += theirs.eq(ours)
        if self.config.ub_debug_port:
            debug_port(m, self.ub_dbg, ub, wr, selects["dbg"])
        else:
            m.d.comb += [ub.wr.addr.eq(wr["addr"]), ub.wr.data.eq(wr["data"]), ub.wr.be.eq(wr["be"])]

    @staticmethod
    def _write_register(m, engine):
        """An engine's UB write port through one register of its own (``<engine>_wr_*``), before the
        multiplexer over the engines: the engine's byte-enable logic, the multiplexer and the UB's input
        register are then three register-to-register paths instead of one across the die. A write lands
        one cycle later than the engine offers it (``WRITE_DELAY``); the front end keeps the engine
        selected until then (an instruction ends in RESPOND, at least a cycle after ``done``)."""
        name = type(engine).__name__.lower()
        port = engine.ub_wr
        reg = {"addr": Signal.like(port.addr, name=f"{name}_wr_addr", reset_less=True),
               "data": Signal.like(port.data, name=f"{name}_wr_data", reset_less=True),
               "be": Signal.like(port.be, name=f"{name}_wr_be")}
        # One instruction at a time: the selected engine owns the write port, so ``ready`` is always high
        # (the handshake is for pipes that will share the port, rtl.engines.base.EngineSignature).
        m.d.comb += port.ready.eq(1)
        m.d.sync += [reg["addr"].eq(port.addr), reg["data"].eq(port.data),
                     reg["be"].eq(Mux(port.valid, port.be, 0))]
        return reg
