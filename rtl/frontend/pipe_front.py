"""The front end of a unit whose pipes run at once (issue #33): each command checked, queued in its pipe behind
the hazard scoreboard, started on its engine when nothing older conflicts with it, and answered when it ends,
in completion order. Built and tested alone (tests/rtl/test_rtl_pipe_front.py, on mock engines);
:class:`rtl.top.VectorUnit` still runs one instruction at a time (docs/architecture.md, "Pipes and
footprints")."""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.checker.checker import Checker
from rtl.engines.base import EngineSignature
from rtl.frontend.counters import PIPES, pipe_select
from rtl.frontend.dispatch import Dispatcher
from rtl.frontend.footprint import Footprint
from rtl.isa import FRONT_END_OPCODES, INSTRUCTIONS, Command, Response, Status
from rtl.lib.fifo import LutFifo

__all__ = ["PipeFrontEnd"]

class PipeFrontEnd(wiring.Component):
    """Commands in, one response per command out, the engines of every pipe started as soon as program order
    allows.

    Parameters
    ----------
    config : :class:`rtl.config.Config`
    engines : the engine classes (``rtl.top.engines_for``); each runs in the pipe of its opcodes
        (``rtl.isa.INSTRUCTIONS[op].pipe``), one instruction at a time per pipe.
    depth, entries, disable : the :class:`rtl.frontend.dispatch.Dispatcher`'s (per-pipe queue entries,
        instructions in flight, hazard rules left out for mutation checks).
    exclusive : groups of pipes (:class:`rtl.isa.Pipe`) that never run at once, e.g. vector and matrix when
        they share the UB's read ports: of two heads ready in the same cycle the older command starts.

    Ports
    -----
    cmd : In(stream.Signature(:data:`rtl.isa.Command`))
        The host's commands; ``ready`` while the check stage is free (below).
    rsp : Out(stream.Signature(:data:`rtl.isa.Response`))
        One response per command: a rejected command's as soon as the checker answers, an executed one's when
        its engine is done, TSYNC's when every command before it has been answered. Responses of different
        pipes come in the order they finish (round robin among those ready in the same cycle), not in
        command order. ``cycles``: from the cycle the command is accepted to the cycle its response is
        queued.
    engines : In(:class:`rtl.engines.base.EngineSignature`).array(len(engines))
        Per engine: ``cmd`` (held from its ``start`` to its ``done``), ``start`` (a one-cycle pulse), ``go``
        (with ``start``, high until ``done``: the command is checked and nothing older conflicts, so the engine
        may write at once), ``done`` and ``status`` from the engine.
    drained : In(len(PIPES)), default all high
        Pipe ``k``'s UB writes have all landed (``rtl.ub.write_arbiter.UbWriteArbiter.drained``: an engine's
        ``done`` says its last word was *taken*). An instruction leaves the scoreboard, freeing the ones that
        wait on it and its pipe for the next, in the cycle after its ``done`` and ``drained`` have both been
        seen (its response is queued at ``done``).
    busy, stalled : Out(len(PIPES))
        The dispatcher's: pipe ``k`` runs an instruction; its next one waits on an older one (a hazard).
    empty : Out(1)
        No command in the check stage, the pipes or the response queues.

    Latency: a command accepted at edge ``t`` has its verdict and footprint in the cycle after edge ``t +
    VERDICT_WAIT`` (the :class:`rtl.checker.checker.Checker`'s and :class:`rtl.frontend.footprint.Footprint`'s
    latencies); the check stage takes the next command an edge after it has passed this one on (a command
    every ``VERDICT_WAIT + 2`` cycles at most). A passed command enters the dispatcher then; its engine gets
    ``start`` and ``go`` one edge after the dispatcher offers it (``Dispatcher``: from the cycle after the
    scoreboard's insert). Not yet: the speculative start of an engine while the checker decides (which the
    one-at-a-time unit has, so that an instruction alone does not pay the check).
    """

    #: Edges from the acceptance to a valid verdict and footprint (the slower of the two pipelines).
    VERDICT_WAIT = max(Checker.LATENCY, Footprint.LATENCY)
    #: Entries of each response queue (per pipe, and the check stage's for rejected commands and TSYNC).
    RESPONSE_DEPTH = 4

    def __init__(self, config, engines, *, depth=4, entries=8, disable=(), exclusive=()):
        self._config, self._classes = config, tuple(engines)
        self._depth, self._entries, self._disable = depth, entries, disable
        self._exclusive = [[PIPES.index(p) for p in group] for group in exclusive]
        self._pipe_of = []
        for cls in self._classes:
            pipes = {INSTRUCTIONS[op].pipe for op in cls.opcodes}
            if len(pipes) != 1 or None in pipes:
                raise ValueError(f"PipeFrontEnd: engine {cls.__name__} runs opcodes of pipes {pipes}: an engine "
                                 f"must run the instructions of one pipe")
            self._pipe_of.append(PIPES.index(pipes.pop()))
        super().__init__({
            "cmd": In(stream.Signature(Command)),
            "rsp": Out(stream.Signature(Response)),
            "engines": In(EngineSignature(config)).array(len(self._classes)),
            "drained": In(len(PIPES), init=(1 << len(PIPES)) - 1),
            "busy": Out(len(PIPES)), "stalled": Out(len(PIPES)), "empty": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        Payload = data.StructLayout({"cmd": Command, "stamp": 32})
        m.submodules.checker = checker = Checker(cfg, self._classes)
        m.submodules.footprint = footprint = Footprint(cfg)
        m.submodules.dispatch = dispatch = Dispatcher(cfg, Payload, depth=self._depth, entries=self._entries,
                                                      disable=self._disable)
        now = Signal(32)                      # cycles since reset (wrapping): the commands' stamps
        m.d.sync += now.eq(now + 1)
        queues = self._response_queues(m)
        rsp_in = [(q.w_en, Response(q.w_data), q.w_rdy) for q in queues]
        idle = self._check_stage(m, checker, footprint, dispatch, now, rsp_in[0], queues)
        self._pipes(m, dispatch, now, rsp_in[1:])
        self._merge(m, queues)
        m.d.comb += [self.busy.eq(dispatch.busy), self.stalled.eq(dispatch.stalled),
                     self.empty.eq(idle & dispatch.empty & ~Cat(q.r_rdy for q in queues).any())]
        return m

    def _response_queues(self, m):
        """Queue 0: the check stage's responses (rejected commands, TSYNC); queue ``1 + k``: pipe ``k``'s."""
        queues = []
        for k in range(1 + len(PIPES)):
            q = m.submodules[f"rsp_q{k}"] = LutFifo(Response.size, self.RESPONSE_DEPTH)
            queues.append(q)
        return queues

    def _check_stage(self, m, checker, footprint, dispatch, now, rsp, queues):
        """Accept a command, check it and compute its footprint (``VERDICT_WAIT`` edges), then answer it
        (rejected), wait for everything before it to be answered (TSYNC) or pass it to the dispatcher.
        Returns ``idle`` (no command in the stage)."""
        w_en, w_data, w_rdy = rsp
        held = Signal(Command, reset_less=True)
        stamp = Signal(32)
        wait = Signal(range(self.VERDICT_WAIT + 1))
        busy = Signal()
        accept = Signal()
        m.d.comb += [self.cmd.ready.eq(~busy), accept.eq(self.cmd.valid & ~busy),
                     checker.cmd.eq(self.cmd.payload), checker.load.eq(accept),
                     footprint.cmd.eq(held)]
        with m.If(accept):
            m.d.sync += [held.eq(self.cmd.payload), stamp.eq(now), wait.eq(0), busy.eq(1)]
        with m.Elif(busy & (wait != self.VERDICT_WAIT)):
            m.d.sync += wait.eq(wait + 1)
        verdict = busy & (wait == self.VERDICT_WAIT)
        sync = Cat(held.opcode == op for op in FRONT_END_OPCODES).any()
        # TSYNC waits until every command before it has finished and been answered (its own queue is
        # in order: earlier rejections are ahead of it)
        settled = dispatch.empty & ~Cat(q.r_rdy for q in queues[1:]).any()
        m.d.comb += [w_data.tag.eq(held.tag), w_data.cycles.eq(now - stamp)]
        m.d.comb += [dispatch.push.payload.pipe.eq(pipe_select(m, held.opcode, "held_pipe")),
                     dispatch.push.payload.footprint.eq(footprint.footprint),
                     dispatch.push.payload.payload.cmd.eq(held),
                     dispatch.push.payload.payload.stamp.eq(stamp)]
        with m.If(verdict):
            with m.If(~checker.ok):
                m.d.comb += [w_data.status.eq(checker.status), w_en.eq(w_rdy)]
                with m.If(w_rdy):
                    m.d.sync += busy.eq(0)
            with m.Elif(sync):
                m.d.comb += [w_data.status.eq(Status.OK), w_en.eq(w_rdy & settled)]
                with m.If(w_rdy & settled):
                    m.d.sync += busy.eq(0)
            with m.Else():
                m.d.comb += dispatch.push.valid.eq(1)
                with m.If(dispatch.push.ready):
                    m.d.sync += busy.eq(0)
        return ~busy

    def _pipes(self, m, dispatch, now, rsps):
        """Per pipe: the dispatcher's offer starts the engine of its opcode (``start`` and ``go`` from
        registers, the command held in a register of the engine's own), the engine's ``done`` queues the
        response, and the instruction retires once its writes have drained."""
        n = len(PIPES)
        retire = [Signal(name=f"pipe{k}_retire") for k in range(n)]
        running = [Signal(name=f"pipe{k}_running") for k in range(n)]     # from take to retire
        allowed = self._exclusion(m, dispatch, running)
        for k in range(n):
            w_en, w_data, w_rdy = rsps[k]
            issue = dispatch.issue[k]
            mine = [e for e, p in enumerate(self._pipe_of) if p == k]
            stamp = Signal(32, name=f"pipe{k}_stamp")
            tag = Signal(16, name=f"pipe{k}_tag")
            take = Signal(name=f"pipe{k}_take")
            m.d.comb += [issue.ready.eq(~running[k] & w_rdy & allowed[k]), take.eq(issue.valid & issue.ready)]
            with m.If(take):
                m.d.sync += [running[k].eq(1), stamp.eq(issue.payload.stamp), tag.eq(issue.payload.cmd.tag)]
            finish, status = Signal(name=f"pipe{k}_done"), Signal(Status, name=f"pipe{k}_status")
            for e in mine:
                port, cls = self.engines[e], self._classes[e]
                sel = Signal(name=f"sel_{cls.name}")
                ecmd = Signal(Command, name=f"{cls.name}_cmd", reset_less=True)
                start, go = Signal(name=f"start_{cls.name}"), Signal(name=f"go_{cls.name}")
                for_me = take & Cat(issue.payload.cmd.opcode == op for op in cls.opcodes).any()
                m.d.comb += [port.cmd.eq(ecmd), port.start.eq(start), port.go.eq(go)]
                m.d.sync += start.eq(for_me)
                with m.If(for_me):
                    m.d.sync += [ecmd.eq(issue.payload.cmd), sel.eq(1), go.eq(1)]
                with m.If(sel & port.done):
                    m.d.sync += [sel.eq(0), go.eq(0)]
                    m.d.comb += [finish.eq(1), status.eq(port.status)]
            # (the queue had room when the instruction was taken, and holds at most one response per
            # instruction of its pipe in flight: one)
            m.d.comb += [w_en.eq(finish), w_data.tag.eq(tag), w_data.status.eq(status),
                         w_data.cycles.eq(now - stamp)]
            # retire: done seen (now or before) and the writes drained
            ended = Signal(name=f"pipe{k}_ended")
            m.d.comb += retire[k].eq((finish | ended) & self.drained[k])
            with m.If(retire[k]):
                m.d.sync += [ended.eq(0), running[k].eq(0)]
            with m.Elif(finish):
                m.d.sync += ended.eq(1)
        m.d.comb += dispatch.done.eq(Cat(retire))

    def _exclusion(self, m, dispatch, running):
        """Per pipe, whether it may take an instruction now as far as ``exclusive`` goes: no other pipe of its
        groups runs, and of the heads offered in this cycle in a group its command is the oldest (the
        smallest acceptance stamp, compared modulo 2**32)."""
        allowed = [C(1) for _ in PIPES]
        for group in self._exclusive:
            for k in group:
                others = [j for j in group if j != k]
                older = []
                for j in others:
                    d = (dispatch.issue[k].payload.stamp - dispatch.issue[j].payload.stamp).as_signed()
                    # (stamps differ: one command is accepted per cycle at most; ties go to the lower pipe)
                    older.append(~dispatch.issue[j].valid | ((d < 0) if j > k else (d <= 0)))
                a = Signal(name=f"pipe{k}_allowed")
                m.d.comb += a.eq(allowed[k] & ~Cat(running[j] for j in others).any() & Cat(older).all())
                allowed[k] = a
        return allowed

    def _merge(self, m, queues):
        """The response queues into ``rsp``, round robin: after a queue has sent, the next queue in order
        has the first turn."""
        n = len(queues)
        turn = Signal(range(n))
        pick = Signal(range(n))
        found = Signal()
        # the first queue with a response at or after ``turn`` (a fixed loop: later assignments win, so
        # walk the candidates from the last to the first)
        for step in reversed(range(n)):
            for j in range(n):
                with m.If((turn == j) & queues[(j + step) % n].r_rdy):
                    m.d.comb += [pick.eq((j + step) % n), found.eq(1)]
        m.d.comb += [self.rsp.valid.eq(found),
                     self.rsp.payload.eq(Array(q.r_data for q in queues)[pick])]
        for j, q in enumerate(queues):
            m.d.comb += q.r_en.eq(found & self.rsp.ready & (pick == j))
        with m.If(found & self.rsp.ready):
            m.d.sync += turn.eq(Mux(pick == n - 1, 0, pick + 1))
