"""Per-pipe queues and issue: checked instructions wait in their pipe's queue and start when the scoreboard
lets them (issue #33's pipes: the concurrent unit's, :class:`rtl.frontend.pipe_front.PipeFrontEnd`; the serial
``VectorUnit`` runs one instruction at a time without it)."""

import functools
import operator
from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.frontend.counters import PIPES
from rtl.frontend.footprint import FootprintLayout
from rtl.frontend.scoreboard import Scoreboard
from rtl.lib.fifo import LutFifo, RegFifo, oldest_first, pointer_groups

__all__ = ["DispatchLayout", "Dispatcher"]


def DispatchLayout(config, payload):
    """An instruction entering the dispatcher: its one-hot ``pipe`` (:data:`rtl.frontend.counters.PIPES`),
    its ``footprint``, ``payload`` (what its engine gets: the command, in a unit) and ``started``: its engine
    runs it already (the front end's speculative start, allowed only while nothing is in flight), so it
    enters the scoreboard and its pipe as running, and never its queue."""
    return data.StructLayout({"pipe": len(PIPES), "footprint": FootprintLayout(config), "payload": payload,
                              "started": 1})


class Dispatcher(wiring.Component):
    """In-order queues, one per pipe, in front of a :class:`rtl.frontend.scoreboard.Scoreboard`.

    Parameters: ``config``; ``payload``, the shape of what an engine gets; ``depth``, entries of each
    pipe's queue (at least 2); ``entries``, instructions in flight in all pipes together (the scoreboard's
    entries; queued and running ones); ``disable``, the scoreboard's (mutation checks only); ``released``,
    released instructions per pipe at most (``release``).

    Ports
    -----
    push : In(stream.Signature(:func:`DispatchLayout`))
        A checked instruction, in program order; taken (``ready``) when its pipe's queue and the scoreboard
        have room. Every instruction has a pipe (the barrier waits for ``empty`` instead). One with
        ``started`` (:func:`DispatchLayout`) may be pushed only while nothing is queued or running
        (``empty``): it runs from the edge that takes it, until its ``done``.
    issue : Out(stream.Signature(payload)).array(len(PIPES))
        Pipe ``k``'s oldest instruction, offered when the pipe runs nothing and no older instruction in
        flight in another pipe conflicts with it; its engine takes it (``ready``) when idle.
    release : In(len(PIPES))
        Pipe ``k``'s running instruction is *released* (a pulse; its engine has finished with its command,
        ``rtl.engines.base.EngineSignature``'s ``release``): the pipe may issue its next instruction in this
        cycle already while it finishes (``issue.valid`` follows ``release`` combinationally). At most
        ``released`` (a parameter) per pipe at a time.
    done : In(len(PIPES))
        Pipe ``k``'s oldest unfinished instruction (the released one, else the running one) has finished (a
        pulse; not with ``release``): the pipe may issue its next instruction in the next cycle. The instruction stays in the scoreboard, *draining* (its last words may still be on
        their way to the UB), until ``retire``.
    retire : In(len(PIPES))
        Pipe ``k``'s draining instruction leaves the scoreboard at this edge (a pulse), freeing the ones that
        wait on it; with ``done`` and nothing draining, the finishing one does (it never drains). A pipe
        drains one instruction at a time: ``done`` while one drains needs ``retire`` in the same cycle.
        Only while one drains or with ``done`` (the front end's contract; not checked here).
    busy : Out(len(PIPES))
        Pipe ``k`` runs an instruction (or has a released one).
    draining : Out(len(PIPES))
        Pipe ``k`` has a finished instruction waiting for ``retire`` (a register).
    stalled : Out(len(PIPES))
        Pipe ``k`` runs nothing and its oldest instruction waits on an older one, of any pipe (the
        scoreboard's ``hazard``, with ``same_pipe``: the older one of its own pipe may be draining; not the
        cycle of its own comparison): the stalled-on-hazard cycles, none for an instruction that conflicts
        with nothing.
    offered : Out(len(PIPES))
        Pipe ``k``'s oldest instruction would be offered on ``issue`` were the pipe idle: its queue holds one
        and the scoreboard does not block it (``issue[k].valid`` without the pipe's running and ``release``).
    queued : Out(len(PIPES))
        Pipe ``k``'s queue holds an instruction (a register: the queue's "not empty"); ``issue[k].valid``
        only while it is high.
    queued_copies : Out(len(PIPES) * copies)
        Bit ``k * copies + g``: ``queued[k]`` again, one register per slice of the queue
        (``LutFifo.r_rdy_slices``; ``copies``, an attribute, is the queue's ``pointer_groups``), for a
        reader that selects the head's ~700 bits by it in ``copies`` parts.
    older : Out(len(PIPES) * len(PIPES))
        Bit ``k * len(PIPES) + j``: pipe ``k``'s oldest queued instruction was pushed before pipe ``j``'s
        (meaningful while both queues hold one): the scoreboard's ages of the two heads' entries
        (``Scoreboard.older``), so that the front end orders two pipes' heads without comparing stamps.
    empty : Out(1)
        No instruction queued or running.

    Latency: an instruction pushed at edge ``t`` into an idle pipe with no hazard is offered on ``issue``
    from the cycle after edge ``t + Scoreboard.INSERT_LATENCY`` (its scoreboard row; the queue has it from
    the cycle after ``t``); a ``done`` at edge ``t`` frees its dependents' ``issue`` from the cycle after
    ``t``.
    """

    def __init__(self, config, payload, *, depth=4, entries=8, disable=(), released=1):
        if depth < 2:
            raise ValueError(f"Dispatcher: depth={depth} must be at least 2")
        self._config, self._payload, self._depth, self._entries = config, payload, depth, entries
        self._released = released
        self._disable = disable
        #: copies of each pipe's ``queued`` (``queued_copies``): the queue's slices
        self.copies = pointer_groups(Shape.cast(payload).width)
        super().__init__({
            "push": In(stream.Signature(DispatchLayout(config, payload))),
            "issue": Out(stream.Signature(payload)).array(len(PIPES)),
            "release": In(len(PIPES)),
            "done": In(len(PIPES)),
            "retire": In(len(PIPES)),
            "busy": Out(len(PIPES)),
            "draining": Out(len(PIPES)),
            "stalled": Out(len(PIPES)),
            "offered": Out(len(PIPES)), "queued": Out(len(PIPES)), "queued_copies": Out(len(PIPES) * self.copies),
            "older": Out(len(PIPES) * len(PIPES)),
            "empty": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._entries
        # (same_pipe: a pipe's next instruction may start while the previous one drains, ``retire``)
        m.submodules.scoreboard = sb = Scoreboard(self._config, n, same_pipe=True, disable=self._disable)
        push = self.push
        room = Signal(len(PIPES))
        started = push.payload.started
        m.d.comb += push.ready.eq(sb.insert.ready & ((room & push.payload.pipe).any() | started))
        fire = push.valid & push.ready
        m.d.comb += [sb.insert.valid.eq(fire), sb.insert.payload.pipe.eq(push.payload.pipe),
                     sb.insert.payload.footprint.eq(push.payload.footprint)]
        retire = []
        heads = []
        for k in range(len(PIPES)):
            # The payloads in LUT RAM; their scoreboard slots beside them in a queue whose head is a register,
            # written and read with it (the same capacity and timing: one entry per cycle each way, an entry
            # at the head in the cycle after its write), so that the head's ``blocked`` and ``older`` are
            # selected by flip-flops, not by a LUT-RAM read (a take's path began there,
            # docs/synthesis.md "Concurrency control").
            q = m.submodules[f"queue{k}"] = LutFifo(Shape.cast(self._payload).width, self._depth, groups=self.copies)
            sq = m.submodules[f"slots{k}"] = RegFifo(len(sb.slot), self._depth)
            m.d.comb += [room[k].eq(q.w_rdy), q.w_en.eq(fire & push.payload.pipe[k] & ~started),
                         q.w_data.eq(push.payload.payload),
                         sq.w_en.eq(q.w_en), sq.w_data.eq(sb.slot)]
            head = SimpleNamespace(payload=q.r_data, slot=sq.r_data)
            heads.append(head.slot)
            running = Signal(name=f"running{k}")
            slot = Signal(range(n), name=f"running_slot{k}")
            # the released instructions, oldest first
            nrel = Signal(range(self._released + 1), name=f"released{k}")
            rel_slot = [Signal(range(n), name=f"released{k}_slot{i}") for i in range(self._released)]
            released = nrel != 0
            # (a pipe whose running instruction is released now offers its next one in the same cycle)
            offered = q.r_rdy & ~sb.blocked.bit_select(head.slot, 1)
            ready = offered & (~running | self.release[k])
            m.d.comb += self.offered[k].eq(offered)
            out = self.issue[k]
            m.d.comb += [out.valid.eq(ready), out.payload.eq(head.payload), q.r_en.eq(ready & out.ready),
                         sq.r_en.eq(q.r_en),
                         self.queued[k].eq(q.r_rdy),
                         self.queued_copies[k * self.copies:(k + 1) * self.copies].eq(q.r_rdy_slices)]
            with m.If(ready & out.ready):
                m.d.sync += [running.eq(1), slot.eq(head.slot)]
            with m.Elif(fire & started & push.payload.pipe[k]):      # (the pipe runs nothing: ``empty``)
                m.d.sync += [running.eq(1), slot.eq(sb.slot)]
            with m.Elif(self.release[k] | (self.done[k] & ~released)):
                m.d.sync += running.eq(0)
            # the released instructions finish before the running one, in order
            pop = self.done[k] & released
            m.d.sync += nrel.eq(nrel + self.release[k] - pop)
            oldest_first(m, rel_slot, nrel, self.release[k], pop, slot)
            # the finished instruction drains until ``retire`` (unless it retires at once)
            draining = Signal(name=f"draining{k}")
            drain_slot = Signal(range(n), name=f"draining_slot{k}")
            finishing = self.done[k] & (running | released)
            fin_slot = Mux(released, rel_slot[0], slot)
            leaving = Mux(draining, drain_slot, fin_slot)
            with m.If(finishing & ~(self.retire[k] & ~draining)):
                m.d.sync += [draining.eq(1), drain_slot.eq(fin_slot)]
            with m.Elif(self.retire[k]):
                m.d.sync += draining.eq(0)
            # (``retire`` comes only while one drains or with ``done``: no gate here, so that the front end's
            # finish logic does not reach the scoreboard's ``valid`` a second time)
            retire.append(Mux(self.retire[k], 1 << leaving, 0))
            m.d.comb += [self.busy[k].eq(running | released), self.draining[k].eq(draining),
                         self.stalled[k].eq(q.r_rdy & ~running & sb.hazard.bit_select(head.slot, 1))]
        m.d.comb += sb.retire.eq(functools.reduce(operator.or_, retire))
        P = len(PIPES)
        for k in range(P):
            for j in range(P):
                if j != k:
                    # (entry ``heads[k]`` is older than ``heads[j]``: bit ``heads[k]`` of row ``heads[j]``)
                    m.d.comb += self.older[k * P + j].eq(sb.older.bit_select(heads[j] * n + heads[k], 1))
        m.d.comb += self.empty.eq(sb.empty)
        return m

