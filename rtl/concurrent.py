"""The unit with its pipes running at once (``Config.concurrent``; issue #33): the
:class:`rtl.frontend.pipe_front.PipeFrontEnd` around the engines (each in a reset domain of its own, for the
speculative start's abort), the transfer engine as its two halves, a UB read port per transfer half and two
shared by vector and matrix, the write port (one, or one per UB bank with ``Config.ub_write_banks``)
arbitrated between the writers. :class:`rtl.top.VectorUnit` builds this instead of its
one-instruction-at-a-time front end when the configuration asks for it; the ports are the same."""

from dataclasses import replace

from amaranth import *
from amaranth.lib import wiring

from rtl.config import CONCURRENT_READ_PORTS
from rtl.engines.transfer.pipes import GmToUbEngine, UbToGmEngine
from rtl.frontend.counters import PIPES, PipeCounters
from rtl.frontend.engine_domain import engine_domain
from rtl.frontend.pipe_front import PipeFrontEnd
from rtl.frontend.scoreboard import RULES
from rtl.isa import INSTRUCTIONS, Pipe, Status
from rtl.lib.mux import and_or
from rtl.ub.buffer import UnifiedBuffer
from rtl.ub.debug import debug_port
from rtl.ub.write_arbiter import UbWriteArbiter

__all__ = ["concurrent_engines", "front_end", "elaborate_concurrent", "EXCLUSIVE",
           "ENGINE_OUTPUT_REGISTER_CYCLES"]

#: Pipes that never run at once: vector and matrix share two read ports.
EXCLUSIVE = ((Pipe.VECTOR, Pipe.MATRIX),)
#: Cycles from an engine's ``done``, ``status`` and ``release`` to the front end's (registers: ``_engine_port``).
ENGINE_OUTPUT_REGISTER_CYCLES = 1
#: The first read port of the shared compute ports.
_COMPUTE_PORT = 2


def concurrent_engines(classes):
    """The engine classes of a concurrent unit: ``classes`` (``rtl.top.engines_for``) with the transfer
    engine replaced by its halves (one per pipe)."""
    out = []
    for cls in classes:
        out += [GmToUbEngine, UbToGmEngine] if cls.name == "transfer" else [cls]
    return tuple(out)


def front_end(cfg, classes):
    """The front end of a concurrent unit of ``cfg`` whose engines are ``classes`` (``concurrent_engines``):
    what :func:`elaborate_concurrent` builds, and what ``python -m flow.blocks frontend --what front``
    synthesises alone."""
    return PipeFrontEnd(cfg, classes, exclusive=EXCLUSIVE, disable=cfg.scoreboard_disable)


def _pipe(cls):
    return INSTRUCTIONS[cls.opcodes[0]].pipe


def elaborate_concurrent(unit, classes, platform):
    """The module of a concurrent ``unit`` (a :class:`rtl.top.VectorUnit`, whose ports it drives) with the
    engines ``classes`` (``rtl.top.engines_for``)."""
    cfg = unit.config
    # (the configuration is checked before anything is built: a rejected one leaves no unused elaboratable;
    # the read ports and write queues are ``Config``'s own check)
    unknown = [r for r in cfg.scoreboard_disable if r not in RULES]
    if unknown:
        raise ValueError(f"Config.scoreboard_disable: {unknown} are no rules; rules: {', '.join(RULES)}")
    m = Module()
    classes = concurrent_engines(classes)
    # the compute engines see the two ports they share (their read_ports follow the configuration)
    compute_cfg = replace(cfg, ub_read_ports=CONCURRENT_READ_PORTS - _COMPUTE_PORT, concurrent=False,
                          scoreboard_disable=(), ub_write_banks=False)
    # (engines that can take their next instruction early do so: ``Config.pipe_overlap``)
    engines = [cls(compute_cfg if _pipe(cls) in (Pipe.VECTOR, Pipe.MATRIX) else cfg,
                   **({"overlap": True} if cfg.pipe_overlap and cls.OVERLAP else {})) for cls in classes]
    m.submodules.ub = ub = UnifiedBuffer(cfg, write_banks=cfg.ub_write_banks)
    m.submodules.front = front = front_end(cfg, classes)
    for k, (e, cls) in enumerate(zip(engines, classes)):
        # each engine in a clock domain of its own: the front end resets it when it started speculatively
        # on a command the checker rejects
        name = type(e).__name__.lower()
        m.submodules[name] = engine_domain(m, e, name, front.abort[k], platform)
        _engine_port(m, e, name, front.engines[k], front.release[k])
    # commands and responses
    m.d.comb += [front.cmd.valid.eq(unit.s_axis_cmd.tvalid), front.cmd.payload.eq(unit.s_axis_cmd.tdata),
                 unit.s_axis_cmd.tready.eq(front.cmd.ready),
                 unit.m_axis_rsp.tvalid.eq(front.rsp.valid), unit.m_axis_rsp.tdata.eq(front.rsp.payload),
                 front.rsp.ready.eq(unit.m_axis_rsp.tready)]
    # the per-pipe counters: a cycle for every cycle the pipe runs an instruction, and for every cycle its
    # next instruction waits on a hazard (each from a register of the dispatcher's flags)
    m.submodules.counters = counters = PipeCounters()
    m.d.comb += [unit.perf.busy[k].eq(counters.perf.busy[k]) for k in range(len(PIPES))]
    m.d.comb += [counters.add.eq(1), counters.pipe.eq(front.busy), counters.amount.eq(1)]
    stalled_q = Signal(len(PIPES), name="stalled_q")
    early_q = Signal(len(PIPES), name="early_q")
    m.d.sync += [stalled_q.eq(front.stalled), early_q.eq(front.early)]
    for k, counter in enumerate(unit.perf.stalled):
        with m.If(stalled_q[k]):
            m.d.sync += counter.eq(counter + 1)
    # and an instruction for every one that started while its pipe's previous one was still in the engine
    for k, counter in enumerate(unit.perf.early):
        with m.If(early_q[k]):
            m.d.sync += counter.eq(counter + 1)
    # the UB debug port's grant: the unit holds nothing, and takes no command at this edge (an engine
    # started speculatively may read the UB in the next cycle)
    grant = Signal(name="ubdbg_grant")
    m.d.sync += grant.eq(front.empty & ~(front.cmd.valid & front.cmd.ready))
    # engines by pipe, with ``go`` (what gates their writes and AXI requests) and ``owner`` (their reads,
    # which may come before ``go``: the speculative start)
    by_pipe = {p: [(e, front.engines[k].go) for k, e in enumerate(engines) if _pipe(classes[k]) == p] for p in Pipe}
    _read_ports(m, ub, {p: [(e, front.owner[k]) for k, e in enumerate(engines) if _pipe(classes[k]) == p]
                        for p in Pipe}, grant)
    wr = _write_port(m, cfg, front, by_pipe)
    _axi(m, unit.m_axi, by_pipe)
    _ub_write(m, unit, ub, wr, grant)
    return m


def _engine_port(m, e, name, port, release):
    """Engine ``e`` (in clock domain ``name``) on the front end's ``port`` and ``release``: ``cmd``, ``start``
    and ``go`` as they are; ``done``, ``status`` and ``release`` through registers of the engine's domain
    (:data:`ENGINE_OUTPUT_REGISTER_CYCLES`), so that no path runs from an engine's state through its
    combinational ``done`` or ``release`` into the front end's take (the concurrent unit's worst routed
    paths before, 12.9-13.5 ns: docs/architecture.md "The concurrent unit"). In the engine's domain, they
    are cleared with it when the front end aborts a speculative start: no stale ``done`` reaches an engine
    started again. A registered ``release`` is one cycle old: the front end must not act on it in a
    ``start`` cycle (the engine drives ``release`` low then, and the register still shows the cycle before),
    and it needs every engine's ``release`` to stay high, once high, until the next ``start``
    (``rtl.engines.base.EngineSignature``; the engine bench checks it,
    ``tests/rtl/rtl_engine_bench.py``'s ``execute_overlapped``)."""
    done, release_r = Signal(name=f"{name}_done_r"), Signal(name=f"{name}_release_r")
    status = Signal(Status, name=f"{name}_status_r")
    m.d[name] += [done.eq(e.done), status.eq(e.status)]
    m.d.comb += [e.cmd.eq(port.cmd), e.start.eq(port.start), e.go.eq(port.go),
                 port.done.eq(done), port.status.eq(status)]
    if "release" in e.signature.members:
        m.d[name] += release_r.eq(e.release)
        m.d.comb += release.eq(release_r & ~port.start)


def _read_ports(m, ub, by_pipe, grant):
    """Port 0: GM -> UB's engine (the debug port while granted); port 1: UB -> GM's; ports 2-3: the vector and
    matrix engines', an AND-OR of their ``owner`` flags (one runs at a time: ``EXCLUSIVE``). Read data to every
    engine on the port (each orders the words itself)."""
    owners = {0: by_pipe[Pipe.GM_TO_UB], 1: by_pipe[Pipe.UB_TO_GM]}
    for i in range(_COMPUTE_PORT, CONCURRENT_READ_PORTS):
        owners[i] = by_pipe[Pipe.VECTOR] + by_pipe[Pipe.MATRIX]
    for i, port in enumerate(ub.rd):
        j = i - _COMPUTE_PORT if i >= _COMPUTE_PORT else 0
        readers = [(sel, e.ub_rd[j]) for e, sel in owners.get(i, []) if "ub_rd" in e.signature.members
                   and j < len(e.ub_rd)]
        if len(owners.get(i, [])) == 1 and readers:     # a port of its own: no multiplexer
            m.d.comb += [port.addr.eq(readers[0][1].addr), port.en.eq(readers[0][1].en)]
        else:
            m.d.comb += [port.addr.eq(and_or([(s, p.addr) for s, p in readers], len(port.addr))),
                         port.en.eq(and_or([(s, p.en) for s, p in readers], 1))]
        for _, p in readers:
            m.d.comb += [p.even.eq(port.even), p.odd.eq(port.odd)]    # (rtl.ub.buffer.ordered_window)


def _write_port(m, cfg, front, by_pipe):
    """The write port's arbiter over the writers (GM -> UB's engine, the vector engines as one, the matrix
    engine), the front end's ``fence`` into it and its ``fenced`` back as the front end's ``drained``, per
    pipe. Returns the arbiter's UB side: a list of one port, or of the even and odd bank's
    (``Config.ub_write_banks``).

    A writer's ``valid`` is the OR of its engines' ``valid``: the engine contract keeps an engine's ``valid``
    low before its ``go`` and while it is idle (``rtl.engines.base.EngineSignature``; the engine bench checks
    it on every command), and a pipe starts another of its engines only once the previous one is done, so
    at most one engine of a writer offers a word. ``go`` selects the word of a writer of several engines
    (an AND-OR into the slot's registers) and gates nothing else: ANDed into ``valid`` as well, the front
    end's ``go`` register reached the arbiter's grant through the slot's count (11.7 ns, 9.9 of it routing,
    the concurrent unit's worst path at placement seed 2 in the eighteenth session)."""
    groups = [[(e, go) for e, go in by_pipe[p] if "ub_wr" in e.signature.members] for p in Pipe]
    writers = [(p, g) for p, g in zip(Pipe, groups) if g]
    m.submodules.ub_arbiter = arb = UbWriteArbiter(cfg, len(writers), banks=cfg.ub_write_banks)
    drained = {p: C(1) for p in Pipe}
    for k, (p, group) in enumerate(writers):
        slot = arb.wr[k]
        m.d.comb += slot.valid.eq(Cat(e.ub_wr.valid for e, _ in group).any())
        for name in ("addr", "data", "be"):
            width = len(getattr(slot, name))
            if len(group) == 1:     # (one engine: its word as it is)
                m.d.comb += getattr(slot, name).eq(getattr(group[0][0].ub_wr, name))
            else:
                m.d.comb += getattr(slot, name).eq(and_or([(go, getattr(e.ub_wr, name)) for e, go in group], width))
        m.d.comb += [e.ub_wr.ready.eq(slot.ready) for e, _ in group]
        m.d.comb += arb.fence[k].eq(front.fence[PIPES.index(p)])
        drained[p] = arb.fenced[k]
    m.d.comb += front.drained.eq(Cat(drained[p] for p in PIPES))
    return list(arb.ub_bank) if cfg.ub_write_banks else [arb.ub]


def _axi(m, axi, by_pipe):
    """AR / R to GM -> UB's engine, AW / W / B to UB -> GM's: no arbitration."""
    load = [e for e, _ in by_pipe[Pipe.GM_TO_UB] if "axi" in e.signature.members]
    store = [e for e, _ in by_pipe[Pipe.UB_TO_GM] if "axi" in e.signature.members]
    for name, member in axi.signature.members.items():
        owner = load if name.startswith(("ar", "r")) else store
        if not owner:
            continue
        ours, theirs = getattr(axi, name), getattr(owner[0].axi, name)
        m.d.comb += ours.eq(theirs) if member.flow == wiring.Out else theirs.eq(ours)


def _ub_write(m, unit, ub, wr, grant):
    """The UB's write ports (one, or one per bank): the arbiter's, or the debug port's while granted
    (:func:`rtl.ub.debug.debug_port`)."""
    wr = [{"addr": w.addr, "data": w.data, "be": w.be} for w in wr]
    if unit.config.ub_debug_port:
        debug_port(m, unit.ub_dbg, ub, wr, grant)
    else:
        for port, w in zip(ub.write_ports, wr):
            m.d.comb += [port.addr.eq(w["addr"]), port.data.eq(w["data"]), port.be.eq(w["be"])]
