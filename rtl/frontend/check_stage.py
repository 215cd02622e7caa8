"""The concurrent front end's check stage (:class:`rtl.frontend.pipe_front.PipeFrontEnd`): a command per cycle
in, each checked (a pipelined :class:`rtl.checker.checker.Checker`) and measured (the
:class:`rtl.frontend.footprint.Footprint`), then, in program order, answered (rejected; TSYNC once everything
before it is answered) or passed to the dispatcher with its footprint; and the speculative start of a command
that arrives while nothing is in flight.

The checker and the footprint are pipelines of registers that run free: the verdict on the command accepted
at edge ``t`` is on the checker's ``status`` in the cycle after edge ``t + Checker.LATENCY`` whatever came
after it, the footprint in the cycle after ``t + Footprint.LATENCY``, and then they are gone. So nothing in
them stalls: the stage keeps every accepted command (its tag, stamp and speculative flag) in a queue of
:data:`CHECK_DEPTH` entries, each verdict and footprint in a queue of its own as it arrives (or straight to
the head when its queue is empty and the head takes it then: a command alone is answered, or enters the
dispatcher, in the cycle its verdict or footprint arrives, as before this stage was a pipeline), and takes a
command only while the command queue has room, which is room for its verdict and footprint too. A rejected
command or a TSYNC leaves before its footprint arrives: the stage counts such footprints and drops them.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data

from rtl.checker.checker import Checker
from rtl.frontend.counters import PIPES, pipe_select
from rtl.frontend.engine_domain import ABORT_RESET_CYCLES
from rtl.frontend.footprint import Footprint
from rtl.isa import FRONT_END_OPCODES, Command, Status
from rtl.lib.delay import delay
from rtl.lib.fifo import LutFifo, RegFifo, pointer_groups

__all__ = ["CHECK_DEPTH", "VERDICT_AT", "FOOTPRINT_AT", "check_stage"]

#: Edges from a command's acceptance to its verdict on the checker's ``status`` (read in the cycle after).
VERDICT_AT = Checker.LATENCY
#: ... and to its footprint on the :class:`Footprint`'s output.
FOOTPRINT_AT = Footprint.LATENCY
#: Commands in the check stage at most (accepted, neither answered nor in the dispatcher). A command that
#: enters the dispatcher at once is in the stage from the edge that accepts it to the edge ``FOOTPRINT_AT + 1``
#: later, so this many keep a command per cycle coming.
CHECK_DEPTH = max(VERDICT_AT, FOOTPRINT_AT) + 1


def check_stage(m, front, checker, footprint, dispatch, now, rsp, queues, classes, *, footprint_at=None):
    """Build the stage of ``front`` (a :class:`PipeFrontEnd`: its ``cmd`` stream and ``abort`` flags) around
    ``checker`` (pipelined), ``footprint`` and ``dispatch``; ``rsp`` = (``w_en``, ``w_data``, ``w_rdy``) of the
    check stage's response queue, ``queues`` every response queue (0: the stage's, ``1 + k``: pipe ``k``'s),
    ``classes`` the engine classes. ``footprint_at`` (default :data:`FOOTPRINT_AT`): for a test that shows
    the wait is needed. Returns the stage's flags for the pipes (a namespace): ``idle`` (no command in the
    stage), ``spec`` (the command accepted at this edge starts its engine at once: :func:`_speculate`),
    ``verdict`` (the checker's verdict on a speculatively started command, one cycle) and ``ok`` (the
    checker passes it), ``pushed`` (the speculative command enters the dispatcher at this edge)."""
    footprint_at = FOOTPRINT_AT if footprint_at is None else footprint_at
    w_en, w_data, w_rdy = rsp
    # The command and its stamp in LUT RAM; beside them, written and read with them, its pipe and whether
    # the front end answers it (decoded at the acceptance) in a queue whose head is a register: those bits
    # decide where the head goes, so a take does not begin at a LUT-RAM read (the check stage's head to the
    # dispatcher's queue was among the concurrent unit's worst routed paths at placement seeds 1 and 2 in the
    # eighteenth session, 10.4-10.7 ns). The two queues have the same capacity and timing (``RegFifo``).
    Entry = data.StructLayout({"cmd": Command, "stamp": 32})
    Flags = data.StructLayout({"started": 1, "pipe": len(PIPES), "sync": 1})
    cq = m.submodules.check_cmds = LutFifo(Entry.size, CHECK_DEPTH, groups=pointer_groups(Entry.size))
    gq = m.submodules.check_flags = RegFifo(Flags.size, CHECK_DEPTH)
    # (each verdict with its "rejected" bit: the checker's ``ok``, a register of its own; the head a
    # register, for the same reason)
    Verdict = data.StructLayout({"status": Status, "rejected": 1})
    sq = m.submodules.check_verdicts = RegFifo(Verdict.size, CHECK_DEPTH)
    fq = m.submodules.check_footprints = LutFifo(footprint.footprint.shape().size, CHECK_DEPTH,
                                                  groups=pointer_groups(footprint.footprint.shape().size))
    held = Signal(Command, reset_less=True)       # the footprint's input: the command of the last acceptance
    accept = Signal()
    offered_pipe = pipe_select(m, front.cmd.payload.opcode, "offered_pipe")
    offered_sync = Cat(front.cmd.payload.opcode == op for op in FRONT_END_OPCODES).any()
    spec = _speculate(m, front, dispatch, queues, classes, accept, ~cq.r_rdy, offered_pipe)
    room = cq.w_rdy & gq.w_rdy
    m.d.comb += [front.cmd.ready.eq(room), accept.eq(front.cmd.valid & room),
                 checker.cmd.eq(front.cmd.payload), checker.load.eq(accept), footprint.cmd.eq(held),
                 cq.w_en.eq(accept), cq.w_data.eq(Cat(front.cmd.payload, now)),
                 gq.w_en.eq(accept), gq.w_data.eq(Cat(spec, offered_pipe, offered_sync))]
    with m.If(accept):
        m.d.sync += held.eq(front.cmd.payload)
    # (each high in the cycle after edge ``t + edges`` for an acceptance at edge ``t``)
    verdict_now = delay(m, accept, VERDICT_AT + 1, "verdict_at", reset_less=False)
    footprint_now = delay(m, accept, footprint_at + 1, "footprint_at", reset_less=False)

    # the head: the oldest command, its verdict from its queue or arriving now, its footprint likewise
    # unless footprints of answered commands are still to come (``drop``: those arrive first)
    head = Entry(cq.r_data)
    flags = Flags(gq.r_data)
    take = Signal()                               # the head leaves the stage at this edge
    drop = Signal(range(CHECK_DEPTH + 1))
    fp_head = footprint_now & (drop == 0)         # the arriving footprint is the head's if its queue is empty
    has_verdict = sq.r_rdy | verdict_now
    has_footprint = fq.r_rdy | fp_head
    status, rejected = Signal(Status), Signal()
    queued_verdict = Verdict(sq.r_data)
    m.d.comb += [status.eq(Mux(sq.r_rdy, queued_verdict.status, checker.status)),
                 rejected.eq(Mux(sq.r_rdy, queued_verdict.rejected, ~checker.ok)),
                 sq.w_en.eq(verdict_now & ~(~sq.r_rdy & take)), sq.w_data.eq(Cat(checker.status, ~checker.ok)),
                 sq.r_en.eq(take & sq.r_rdy),
                 fq.w_en.eq(fp_head & ~(~fq.r_rdy & take)), fq.w_data.eq(footprint.footprint),
                 fq.r_en.eq(take & fq.r_rdy), cq.r_en.eq(take), gq.r_en.eq(take)]
    m.d.sync += drop.eq(drop + (take & ~has_footprint) - (footprint_now & (drop != 0)))

    sync = flags.sync
    # TSYNC waits until every command before it has finished and been answered (its own queue is in order:
    # earlier rejections are ahead of it)
    settled = dispatch.empty & ~Cat(q.r_rdy for q in queues[1:]).any()
    pushed = Signal()
    # (no engine runs a rejected command or TSYNC: all of its cycles were spent waiting)
    waited = now - head.stamp
    m.d.comb += [w_data.tag.eq(head.cmd.tag), w_data.cycles.eq(waited), w_data.queued.eq(waited)]
    m.d.comb += [dispatch.push.payload.pipe.eq(flags.pipe),
                 dispatch.push.payload.footprint.eq(Mux(fq.r_rdy, fq.r_data, footprint.footprint.as_value())),
                 dispatch.push.payload.payload.cmd.eq(head.cmd),
                 dispatch.push.payload.payload.stamp.eq(head.stamp),
                 dispatch.push.payload.started.eq(flags.started)]
    with m.If(cq.r_rdy & has_verdict):
        with m.If(rejected):
            m.d.comb += [w_data.status.eq(status), w_en.eq(w_rdy), take.eq(w_rdy)]
        with m.Elif(sync):
            m.d.comb += [w_data.status.eq(Status.OK), w_en.eq(w_rdy & settled), take.eq(w_rdy & settled)]
        with m.Elif(has_footprint):
            m.d.comb += [dispatch.push.valid.eq(1), take.eq(dispatch.push.ready),
                         pushed.eq(dispatch.push.ready & flags.started)]
    # the verdict on a speculatively started command (it is alone in the stage: see _speculate)
    spec_verdict = delay(m, spec, VERDICT_AT + 1, "spec_verdict_at", reset_less=False)
    return SimpleNamespace(idle=~cq.r_rdy, spec=spec, verdict=spec_verdict, ok=checker.ok, pushed=pushed)


def _speculate(m, front, dispatch, queues, classes, accept, empty, pipe):
    """Whether the command offered on ``front.cmd`` starts its engine at the edge that accepts it, before the
    checker's verdict (the one-instruction-at-a-time unit's speculative start, so that an instruction alone
    does not pay the check): when nothing is in flight (the check stage is ``empty`` and the scoreboard too,
    so nothing older can conflict and no pipe runs), its pipe's response queue has room, no engine is being
    reset, and an engine of the unit runs its opcode. Until the verdict its engine may read the UB but not
    write or use the AXI master (no ``go``: the engine contract); a rejected command's engine is reset
    (``abort``). ``pipe``: the offered command's (one-hot)."""
    opcode = front.cmd.payload.opcode
    mine = Cat(opcode == op for cls in classes for op in cls.opcodes).any()
    room = (pipe & Cat(q.w_rdy for q in queues[1:])).any()
    # an aborted engine is in reset ABORT_RESET_CYCLES cycles after its ``abort`` (rtl.frontend.
    # engine_domain): a start given in a cycle before that would reach it while it is being reset
    delayed, late = [], front.abort.any()
    for d in range(1, ABORT_RESET_CYCLES):
        r = Signal(name="aborting" if d == 1 else f"aborting{d}")
        m.d.sync += r.eq(late)
        delayed.append(r)
        late = r
    aborting = Cat(delayed).any()
    spec = Signal(name="speculate")
    m.d.comb += spec.eq(accept & empty & dispatch.empty & room & mine & ~aborting)
    return spec
