"""``VectorUnit``: the top level. Command front end, checker, engines, and the shared UB and AXI port."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .axi import Axi4Signature, AxiStreamSignature
from .checker import Checker
from .elementwise import ElementwiseEngine
from .gemv import GemvEngine
from .transfer import TransferEngine
from .local_gather import LocalGatherEngine
from .isa import COMMAND_BITS, RESPONSE_BITS, Command, Response
from .status import Status
from .ub import UnifiedBuffer

__all__ = ["VectorUnit", "ENGINES", "engines_for", "UbDebugSignature"]

#: Engine classes in the unit, in dispatch order. Each has an ``opcodes`` tuple and takes ``config``;
#: one that cannot be built in every configuration has ``available(config)`` (see :func:`engines_for`).
ENGINES = (TransferEngine, LocalGatherEngine, ElementwiseEngine, GemvEngine)


def engines_for(config):
    """The engines a unit of ``config`` has: those of :data:`ENGINES` whose ``available(config)`` (if they
    define it) is true. The opcodes of the others answer UNSUPPORTED (e.g. the elementwise engine needs
    two UB read ports)."""
    return tuple(cls for cls in ENGINES if getattr(cls, "available", lambda config: True)(config))


class UbDebugSignature(wiring.Signature):
    """The UB debug port, as seen by its user (the testbench): one word per transfer.

    A transfer happens at a clock edge where ``valid`` and ``ready`` are both high. ``we`` = 1: write
    ``wdata`` to word ``addr`` with byte enables ``be`` (bit ``i`` = byte ``i``, byte 0 = bits 7:0),
    effective at that edge. ``we`` = 0: read word ``addr``; ``rdata`` holds it in the next cycle, marked
    by ``rvalid`` (high for that one cycle). ``addr`` is a *word* address (byte address / word bytes).
    """

    def __init__(self, config):
        super().__init__({
            "valid": Out(1),
            "ready": In(1),
            "we": Out(1),
            "addr": Out(range(config.ub_words)),
            "wdata": Out(8 * config.ub_word_bytes),
            "be": Out(config.ub_word_bytes),
            "rdata": In(8 * config.ub_word_bytes),
            "rvalid": In(1),
        })


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
    ub_dbg : UB debug port, flipped :class:`UbDebugSignature` (only with ``config.ub_debug_port``, the
        default) [``ub_dbg__valid``, ``ub_dbg__ready``, ``ub_dbg__we``, ``ub_dbg__addr`` (word address),
        ``ub_dbg__wdata``, ``ub_dbg__be``, ``ub_dbg__rdata``, ``ub_dbg__rvalid``]
    (plus ``clk`` and synchronous active-high ``rst`` from the default clock domain)

    UB debug port: reads and writes UB words directly, one per cycle, for testbenches (load a whole UB
    image, read it back) without going through TLOAD/TSTORE. ``ready`` is high exactly while the front
    end is idle (the cycles ``s_axis_cmd.tready`` is high: no command in flight), so it can never
    disturb an instruction; an access in the cycle a command is accepted takes effect before that
    command. It shares UB read port 0 and the write port with the engines (no extra RAM port); a read
    returns ``rdata`` with ``rvalid`` one cycle after the transfer. Tie ``valid`` low when unused.

    Behaviour: one instruction at a time. A command is accepted (``tready`` high) only when the unit
    is idle. The engine for its opcode gets ``start`` in the next cycle (speculatively) and owns the
    shared UB and AXI ports from then on, so it may read the UB at once; the checker
    (:class:`rtl.checker.Checker`, ``LATENCY`` register stages) decides meanwhile. A passing verdict
    raises the engine's ``go`` (its first UB write or AXI request may follow); a failing one resets
    the engine, which has touched nothing, and answers the checker's status (``cycles`` =
    ``LATENCY + 1``). ``cycles`` in the response counts clock cycles from the acceptance edge to the
    edge that raises ``tvalid``.
    """

    def __init__(self, config):
        self.config = config
        ports = {
            "s_axis_cmd": In(AxiStreamSignature(COMMAND_BITS)),
            "m_axis_rsp": Out(AxiStreamSignature(RESPONSE_BITS)),
            "m_axi": Out(Axi4Signature(addr_width=config.gm_addr_bits, data_width=config.axi_data_bits,
                                       id_width=config.axi_id_bits)),
        }
        if config.ub_debug_port:
            ports["ub_dbg"] = In(UbDebugSignature(config))
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        classes = engines_for(cfg)
        engines = [cls(cfg) for cls in classes]
        m.submodules.ub = ub = UnifiedBuffer(cfg)
        m.submodules.checker = checker = Checker(cfg, classes)

        cmd = Signal(Command)
        tag = Signal(16)
        status = Signal(Status)
        cycles = Signal(32)
        active = Signal(range(len(engines) + 1))    # len(engines) = none
        start_pending = Signal()                     # start the active engine in the first CHECK cycle
        wait = Signal(range(Checker.LATENCY + 1))    # CHECK cycles so far
        early_done = Signal()                        # the engine finished before the verdict
        early_status = Signal(Status)
        go = Signal()                                # the checker passed the command: side effects allowed
        abort = Signal()                             # the checker failed it: reset the started engine
        m.d.comb += checker.cmd.eq(cmd)
        for engine in engines:
            m.d.comb += [engine.cmd.eq(cmd), engine.go.eq(go)]
            # An engine started on a command the checker then rejects is reset: it has only read the UB.
            m.submodules[type(engine).__name__.lower()] = ResetInserter(abort)(engine)
        engine_done = Signal()
        engine_status = Signal(Status)
        for index, engine in enumerate(engines):
            with m.If(active == index):
                m.d.comb += [engine_done.eq(engine.done), engine_status.eq(engine.status)]

        with m.FSM(name="frontend"):
            with m.State("IDLE"):
                m.d.comb += self.s_axis_cmd.tready.eq(1)
                m.d.sync += [active.eq(len(engines)), start_pending.eq(0), wait.eq(0), early_done.eq(0)]
                with m.If(self.s_axis_cmd.tvalid):
                    m.d.sync += [cmd.eq(self.s_axis_cmd.tdata), cycles.eq(0)]
                    # The engine starts in the first CHECK cycle, while the checker decides (speculatively:
                    # it may read the UB, but it holds its UB writes and AXI requests until ``go``).
                    # MGATHER fetches its first index there.
                    opcode = Command(self.s_axis_cmd.tdata).opcode
                    for index, engine in enumerate(engines):
                        with m.If(Cat(opcode == op for op in engine.opcodes).any()):
                            m.d.sync += [active.eq(index), start_pending.eq(1)]
                    m.next = "CHECK"
            with m.State("CHECK"):
                m.d.sync += [cycles.eq(cycles + 1), tag.eq(cmd.tag), wait.eq(wait + 1), start_pending.eq(0)]
                for index, engine in enumerate(engines):
                    with m.If(active == index):
                        m.d.comb += engine.start.eq(start_pending)
                with m.If(engine_done):                 # e.g. an empty transfer is done as it starts
                    m.d.sync += [early_done.eq(1), early_status.eq(engine_status)]
                with m.If(wait == Checker.LATENCY):     # the checker's verdict
                    with m.If(~checker.ok):
                        m.d.comb += abort.eq(1)
                        m.d.sync += status.eq(checker.status)
                        m.next = "RESPOND"
                    with m.Else():
                        m.d.comb += go.eq(1)
                        m.next = "RUN"
                        with m.If(early_done | engine_done):
                            m.d.sync += status.eq(Mux(early_done, early_status, engine_status))
                            m.next = "RESPOND"
            with m.State("RUN"):
                m.d.comb += go.eq(1)
                m.d.sync += cycles.eq(cycles + 1)
                with m.If(engine_done):
                    m.d.sync += status.eq(engine_status)
                    m.next = "RESPOND"
            with m.State("RESPOND"):
                rsp = Signal(Response)
                m.d.comb += [
                    rsp.tag.eq(tag), rsp.status.eq(status), rsp.cycles.eq(cycles),
                    self.m_axis_rsp.tvalid.eq(1),
                    self.m_axis_rsp.tdata.eq(rsp),
                ]
                with m.If(self.m_axis_rsp.tready):
                    m.next = "IDLE"

        self._share(m, engines, active, ub)
        return m

    def _share(self, m, engines, active, ub):
        """Give the UB ports and the AXI master to the active engine; inputs reach only that engine.

        UB read data is gated to zero for engines that are not active: an idle engine's datapath (the
        local_gather shifters, for one) then sees constant inputs instead of re-evaluating on every read
        another engine or the debug port makes (in Icarus that activity made a whole-UB TSTORE of random
        data ~10x slower). While the front end is idle the UB debug port, if present, owns read port 0
        and the write port."""
        axi = self.m_axi
        # The engines' UB writes go through one register: the engine-select multiplexer and the block
        # RAMs' write inputs are then separate timing paths (a write lands one cycle later than the
        # engine issued it; nothing reads a word in the cycle after writing it: engines read ahead of
        # their writes, the next instruction starts cycles after ``done``, the debug port only when idle).
        wr_addr = Signal.like(ub.wr.addr, name="ub_wr_addr_r")
        wr_data = Signal.like(ub.wr.data, name="ub_wr_data_r")
        wr_be = Signal.like(ub.wr.be, name="ub_wr_be_r")
        m.d.comb += [ub.wr.addr.eq(wr_addr), ub.wr.data.eq(wr_data), ub.wr.be.eq(wr_be)]
        m.d.sync += wr_be.eq(0)             # no engine selected: no write
        for index, engine in enumerate(engines):
            sel = active == index
            members = engine.signature.members
            if "axi" in members:
                for name, member in engine.axi.signature.members.items():
                    ours, theirs = getattr(axi, name), getattr(engine.axi, name)
                    if member.flow == Out:
                        with m.If(sel):
                            m.d.comb += ours.eq(theirs)
                    elif name in ("rvalid", "bvalid", "arready", "awready", "wready"):
                        m.d.comb += theirs.eq(ours & sel)
                    else:
                        m.d.comb += theirs.eq(ours)
            if "ub_wr" in members:
                with m.If(sel):
                    m.d.sync += [wr_addr.eq(engine.ub_wr.addr), wr_data.eq(engine.ub_wr.data),
                                 wr_be.eq(engine.ub_wr.be)]
            if "ub_rd" in members:
                for port, theirs in zip(ub.rd, engine.ub_rd):
                    with m.If(sel):
                        m.d.comb += [port.addr.eq(theirs.addr), port.en.eq(theirs.en)]
                    m.d.comb += [theirs.data.eq(port.data & sel.replicate(len(port.data))),
                                 theirs.next.eq(port.next & sel.replicate(len(port.next)))]
        if self.config.ub_debug_port:
            self._debug_port(m, ub)

    def _debug_port(self, m, ub):
        """The UB debug port: granted while the front end is idle (``s_axis_cmd.tready``); it drives UB
        read port 0 and the write port then (the engines are idle: their write enables are zero)."""
        dbg, rd = self.ub_dbg, ub.rd[0]
        grant = self.s_axis_cmd.tready
        fire = dbg.valid & grant
        m.d.comb += dbg.ready.eq(grant)
        with m.If(grant):
            m.d.comb += [rd.addr.eq(dbg.addr), rd.en.eq(fire & ~dbg.we),
                         ub.wr.addr.eq(dbg.addr), ub.wr.data.eq(dbg.wdata),
                         ub.wr.be.eq(Mux(fire & dbg.we, dbg.be, 0))]
        m.d.sync += dbg.rvalid.eq(fire & ~dbg.we)
        m.d.comb += dbg.rdata.eq(rd.data)
