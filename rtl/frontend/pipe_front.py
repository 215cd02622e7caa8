"""The front end of a unit whose pipes run at once (issue #33): each command checked, queued in its pipe behind
the hazard scoreboard, started on its engine when nothing older conflicts with it, and answered when it ends,
in completion order. Tested alone on mock engines (tests/rtl/test_rtl_pipe_front.py); the front end of the
concurrent unit (``Config.concurrent``, :mod:`rtl.concurrent`; docs/architecture.md, "The concurrent
unit")."""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.checker.checker import Checker
from rtl.engines.base import START_REGISTER_CYCLES, EngineSignature
from rtl.frontend.counters import PIPES, pipe_select
from rtl.frontend.dispatch import Dispatcher
from rtl.frontend.check_stage import FOOTPRINT_AT, check_stage
from rtl.frontend.footprint import Footprint
from rtl.frontend.responses import merge_responses
from rtl.isa import INSTRUCTIONS, Command, Response, Status
from rtl.lib.fifo import LutFifo, bit_slices, ring_index, ring_push

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
        instructions in flight: by default ``Config.pipe_queue_depth`` and ``Config.pipe_entries``; hazard
        rules left out for mutation checks).
    exclusive : groups of pipes (:class:`rtl.isa.Pipe`) that never run at once, e.g. vector and matrix when
        they share the UB's read ports: of two heads ready in the same cycle the older command starts.

    Ports
    -----
    cmd : In(stream.Signature(:data:`rtl.isa.Command`))
        The host's commands; ``ready`` while the check stage has room (``rtl.frontend.check_stage.CHECK_DEPTH``
        commands: one per cycle while they leave it as fast).
    rsp : Out(stream.Signature(:data:`rtl.isa.Response`))
        One response per command: a rejected command's as soon as the checker answers, an executed one's when
        its engine is done, TSYNC's when every command before it has been answered. Responses of different
        pipes come in the order they finish (round robin among those ready in the same cycle), not in
        command order. ``cycles``: from the cycle the command is accepted to the cycle its response is
        queued; ``queued``: of them, those before the cycle its engine's ``start`` is high in (1 for a
        speculative start; all of them for a command no engine runs: a rejected one, TSYNC).
    engines : In(:class:`rtl.engines.base.EngineSignature`).array(len(engines))
        Per engine: ``cmd`` (held from its ``start`` to its ``done``), ``start`` (a one-cycle pulse), ``go``
        (high until ``done``: the command is checked and nothing older conflicts, so the engine may write;
        with ``start`` for an instruction the dispatcher offers, ``GO_DELAY`` cycles after it for a
        speculative start), ``done`` and ``status`` from the engine.
    release : In(len(engines)), default all low
        Engine ``e``'s ``release`` (:class:`rtl.engines.base.EngineSignature`, an engine built with
        ``overlap``): it has finished with its command, so the pipe may start the next instruction on it while
        it finishes this one. The front end then holds the finishing one aside (``pipeK_released`` counts them:
        tag, stamp and response each; they free the pipe and drain first, in order) and takes the next one in
        that same cycle (its ``start`` the cycle after the release), if
        it runs on the same engine (the read ports stay that engine's until its last ``done``), is one of the
        opcodes the engine takes early (``Engine.overlap_opcodes``) and the response
        queue has room for every response owed. Up to :attr:`RELEASED` released instructions per pipe.
    abort : Out(len(engines))
        Engine ``e`` started speculatively on a command the checker rejects (one cycle, at the verdict):
        reset it (:func:`rtl.frontend.engine_domain.engine_domain`; the front end starts no engine in the
        cycle after an abort).
    owner : Out(len(engines))
        Engine ``e`` runs a command, from its ``start`` (a register, high with ``start``) to its ``done``:
        the select of the UB read ports it shares (its reads may come before ``go``).
    fence : Out(len(PIPES))
        Pipe ``k``'s engine is done (a pulse): the words it handed over so far are its instruction's last
        (``rtl.ub.write_arbiter.UbWriteArbiter.fence``).
    drained : In(len(PIPES)), default all high
        The words pipe ``k`` handed over up to its last ``fence`` before this cycle (a ``fence`` counts from
        the next cycle on) have all landed (``rtl.ub.write_arbiter.UbWriteArbiter.fenced``: an engine's
        ``done`` says its last word was *taken*). A pipe whose engines write the UB (``Engine.UB_WRITE``)
        takes its next instruction at its engine's ``done`` (with the response queued and the instruction in
        the scoreboard); the finished one *drains*, staying in the scoreboard (holding back every younger
        instruction that conflicts with it, of its own pipe too) until ``drained``, at most one per pipe
        (none if ``drained`` is high at once).
        A pipe whose engines do not write the UB (UB -> GM: its ``done`` comes after the last write
        response) retires its instruction at ``done``.
    early : Out(len(PIPES))
        Pipe ``k`` starts an instruction while its previous one is still in the engine (released, its ``done``
        not yet come): a pulse, with the take.
    busy, stalled : Out(len(PIPES))
        Pipe ``k`` runs an instruction (from its start, speculative or not, until it frees the pipe); its
        next one waits on an older one (a hazard; the dispatcher's).
    empty : Out(1)
        No command in the check stage, the pipes or the response queues.

    Latency: a command accepted at edge ``t`` has the checker's verdict in the cycle after edge ``t +
    Checker.LATENCY`` (a rejected command and TSYNC are answered from then, once the commands before it
    have left the check stage) and its footprint in the cycle after edge ``t + Footprint.LATENCY``; a passed
    command enters the dispatcher then (:func:`rtl.frontend.check_stage.check_stage`, in program order). The
    check stage takes a command in every cycle while it has room: the checker is pipelined
    (``Checker(pipelined=True)``) and the footprint a pipeline. Its engine gets ``start`` and ``go`` one
    edge after the dispatcher offers it (``Dispatcher``: an instruction pushed at edge ``u`` into an idle
    pipe with no hazard is offered from the cycle after edge ``u + Scoreboard.INSERT_LATENCY``).

    Speculative start: a command accepted while nothing is in flight (the check stage and the scoreboard empty:
    no pipe runs, nothing is queued or being checked, so nothing older can conflict), whose pipe's response
    queue has room and whose opcode an engine runs, starts that engine at once, as the one-instruction-at-a-time
    unit does: ``start`` in the cycle after the acceptance, ``go`` ``GO_DELAY`` cycles later if the checker
    passes it (the engine may read the UB meanwhile, nothing more: the engine contract), ``abort`` at the
    verdict if it rejects it (and no speculative start in the next cycle, while the engine's reset is on its
    way). The command enters the scoreboard and its pipe as running when its footprint is ready
    (``DispatchLayout.started``); it retires only after that. So an instruction alone takes the serial unit's
    cycles (in the concurrent unit one more: ``rtl.concurrent`` registers the engines' ``done`` on their way
    here).
    """

    #: Edges from the acceptance to the footprint (``rtl.frontend.check_stage.FOOTPRINT_AT``; a class
    #: attribute so that a test can show the wait is needed).
    FOOTPRINT_AT = FOOTPRINT_AT
    #: Entries of each response queue (per pipe, and the check stage's for rejected commands and TSYNC).
    RESPONSE_DEPTH = 4
    #: Released instructions a pipe holds at most (``release``: its engine still owes their ``done``), so
    #: that an engine whose pipeline is longer than its instructions (the elementwise engine on ``fullrate``:
    #: 16-cycle TPARTADDs, ~25 cycles from the walker to the last write) keeps three in flight.
    RELEASED = 2

    def __init__(self, config, engines, *, depth=None, entries=None, disable=(), exclusive=()):
        # (default: the configuration's ``pipe_queue_depth`` and ``pipe_entries``)
        depth = config.pipe_queue_depth if depth is None else depth
        entries = config.pipe_entries if entries is None else entries
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
            "release": In(len(self._classes)),
            "drained": In(len(PIPES), init=(1 << len(PIPES)) - 1),
            "abort": Out(len(self._classes)), "owner": Out(len(self._classes)), "fence": Out(len(PIPES)),
            "busy": Out(len(PIPES)), "stalled": Out(len(PIPES)), "early": Out(len(PIPES)), "empty": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        Payload = data.StructLayout({"cmd": Command, "stamp": 32})
        m.submodules.checker = checker = Checker(cfg, self._classes, pipelined=True)
        m.submodules.footprint = footprint = Footprint(cfg)
        m.submodules.dispatch = dispatch = Dispatcher(cfg, Payload, depth=self._depth, entries=self._entries,
                                                      disable=self._disable, released=self.RELEASED)
        now = Signal(32)                      # cycles since reset (wrapping): the commands' stamps
        m.d.sync += now.eq(now + 1)
        queues = self._response_queues(m)
        rsp_in = [(q.w_en, Response(q.w_data), q.w_rdy, q.level) for q in queues]
        stage = check_stage(m, self, checker, footprint, dispatch, now, rsp_in[0][:3], queues, self._classes,
                            footprint_at=self.FOOTPRINT_AT)
        running = self._pipes(m, dispatch, now, rsp_in[1:], stage)
        merge_responses(m, queues, self.rsp)
        m.d.comb += [self.busy.eq(Cat(running)), self.stalled.eq(dispatch.stalled),
                     self.empty.eq(stage.idle & dispatch.empty & ~Cat(q.r_rdy for q in queues).any())]
        return m

    def _response_queues(self, m):
        """Queue 0: the check stage's responses (rejected commands, TSYNC); queue ``1 + k``: pipe ``k``'s."""
        queues = []
        for k in range(1 + len(PIPES)):
            q = m.submodules[f"rsp_q{k}"] = LutFifo(Response.size, self.RESPONSE_DEPTH)
            queues.append(q)
        return queues

    def _pipes(self, m, dispatch, now, rsps, stage):
        """Per pipe: the dispatcher's offer (or a speculative start, ``stage.spec``) starts the engine of its
        opcode (``start`` from a register, ``go`` from a register too: with ``start`` for an offer, at the
        checker's verdict for a speculative start; the command held in a register of the engine's own), the
        engine's ``done`` queues the response once the command is known to pass and, once the instruction is in
        the scoreboard, frees its pipe; the instruction leaves the scoreboard once its writes have drained
        (``drained``). An engine's ``release`` moves the running instruction aside (``pipeK_released``: it still
        owes its ``done``) so the pipe can start the next one on the same engine. Returns the pipes' ``busy``
        flags."""
        n = len(PIPES)
        free = [Signal(name=f"pipe{k}_free") for k in range(n)]
        retire = [Signal(name=f"pipe{k}_retire") for k in range(n)]
        running = [Signal(name=f"pipe{k}_running") for k in range(n)]     # from take to free (or release)
        D = self.RELEASED
        # released instructions, oldest first (from release to free)
        nrel = [Signal(range(D + 1), name=f"pipe{k}_released") for k in range(n)]
        allowed = self._exclusion(m, dispatch, [running[k] | (nrel[k] != 0) for k in range(n)])
        rels = []
        offered = self.cmd.payload
        for k in range(n):
            w_en, w_data, w_rdy, level = rsps[k]
            issue = dispatch.issue[k]
            mine = [e for e, p in enumerate(self._pipe_of) if p == k]
            # (the records of an instruction -- stamp, tag, ``queued``, a released one's, the ended status --
            # are read only while their instruction is in the pipe: reset-less, so that the unit's reset,
            # routed over the fabric, reaches ~960 fewer of the front end's ~1,730 reset flip-flop bits; it
            # reached a tag register in 10.3 ns at a placement seed, docs/synthesis.md "Concurrency
            # control")
            stamp = Signal(32, name=f"pipe{k}_stamp", reset_less=True)
            tag = Signal(16, name=f"pipe{k}_tag", reset_less=True)
            # the response's ``queued``: from the acceptance to the cycle of the engine's ``start`` (a register:
            # ``start`` is high in the cycle after the take)
            queued = Signal(32, name=f"pipe{k}_queued", reset_less=True)
            take = Signal(name=f"pipe{k}_take")
            # a speculative start: the offered command is this pipe's (``spec``: no pipe runs)
            spec = Signal(name=f"pipe{k}_spec")
            m.d.comb += spec.eq(stage.spec & Cat(offered.opcode == op for e in mine
                                                 for op in self._classes[e].opcodes).any())
            checked = Signal(name=f"pipe{k}_checked")     # the running command passed the checker
            inserted = Signal(name=f"pipe{k}_inserted")   # ... and is in the scoreboard
            passed = stage.verdict & stage.ok & running[k] & ~checked
            aborted = stage.verdict & ~stage.ok & running[k] & ~checked
            # the released instructions, a ring from the oldest at ``rel_head``: their tags and stamps; the
            # first ``rel_ended`` of them are done (and answered then: the queue kept room for them; dones
            # come in order)
            any_rel = nrel[k] != 0
            rel_head = Signal(range(D), name=f"pipe{k}_rel_head")
            rel_tag = [Signal(16, name=f"pipe{k}_rel{i}_tag", reset_less=True) for i in range(D)]
            rel_stamp = [Signal(32, name=f"pipe{k}_rel{i}_stamp", reset_less=True) for i in range(D)]
            rel_queued = [Signal(32, name=f"pipe{k}_rel{i}_queued", reset_less=True) for i in range(D)]
            rel_ended = Signal(range(D + 1), name=f"pipe{k}_rel_ended")
            rel_owes = Signal(name=f"pipe{k}_rel_owes")          # a released one's ``done`` has not come yet
            m.d.comb += rel_owes.eq(rel_ended < nrel[k])
            # the one released now (``rel``, below): the next one is taken in the same cycle
            rel = Signal(name=f"pipe{k}_release")
            rels.append(rel)
            # the response queue has room for the next instruction's response and the released ones' not yet
            # answered (the one released now included: ``rel`` selects between two compares of registers, so
            # that the release's logic, from the engine's ``done`` and ``release``, meets no adder on its way
            # to the take)
            owed = level + (nrel[k] - rel_ended)
            room = w_rdy & Mux(rel, owed + 1 < self.RESPONSE_DEPTH, owed < self.RESPONSE_DEPTH)
            # while one is released, the next goes to the same engine (its ``sel``: the read ports it shares)
            same = []               # (and of the opcodes the engine takes while one is released)
            for e in mine:
                cls = self._classes[e]
                if len(mine) == 1 and set(cls.overlap_opcodes()) == set(cls.opcodes):
                    same.append(C(1))           # (every instruction of the pipe: no decode on the take's path)
                else:
                    same.append(Cat(issue.payload.cmd.opcode == op for op in cls.overlap_opcodes()).any())
            sels = {}
            for e in mine:
                sels[e] = Signal(name=f"sel_{self._classes[e].name}")
            same_engine = Cat(sels[e] & c for e, c in zip(mine, same)).any()
            m.d.comb += [issue.ready.eq((~running[k] | rel) & room & allowed[k] & (~(any_rel | rel) | same_engine)),
                         take.eq(issue.valid & issue.ready), self.early[k].eq(take & (rel_owes | rel))]
            with m.If(take):
                m.d.sync += [running[k].eq(1), checked.eq(1), inserted.eq(1)]
            with m.If(spec):
                m.d.sync += [running[k].eq(1), checked.eq(0), inserted.eq(0)]
            # The running instruction's stamp, tag and ``queued`` follow the pipe's head (or, while nothing
            # is queued, the offered command, which a speculative start takes) in every cycle the pipe
            # could take one, so they hold the taken one's from the edge of the take on: their enables are
            # not the end of the take's hazard, exclusion and room logic (the front end's worst routed path
            # at a placement seed, docs/synthesis.md "Concurrency control").
            with m.If(~running[k] | rel):
                with m.If(dispatch.queued[k]):
                    m.d.sync += [stamp.eq(issue.payload.stamp), tag.eq(issue.payload.cmd.tag),
                                 queued.eq(now + START_REGISTER_CYCLES - issue.payload.stamp)]
                with m.Else():
                    m.d.sync += [stamp.eq(now), tag.eq(offered.tag), queued.eq(START_REGISTER_CYCLES)]
            with m.If(passed):
                m.d.sync += checked.eq(1)
            with m.If(stage.pushed & running[k] & ~inserted):
                m.d.sync += inserted.eq(1)
            finish, status = Signal(name=f"pipe{k}_done"), Signal(Status, name=f"pipe{k}_status")
            releasing = Signal(name=f"pipe{k}_releasing")         # an engine of the pipe has ``release``
            for e in mine:
                port, cls = self.engines[e], self._classes[e]
                sel = sels[e]
                ecmd = Signal(Command, name=f"{cls.name}_cmd", reset_less=True)
                start, go = Signal(name=f"start_{cls.name}"), Signal(name=f"go_{cls.name}")
                # (the pipe's only engine runs every instruction in its queue: no opcode decode on the take's
                # path from the queue's LUT RAM to the start)
                if len(mine) == 1:
                    for_me, spec_me = take, spec
                else:
                    for_me = take & Cat(issue.payload.cmd.opcode == op for op in cls.opcodes).any()
                    spec_me = spec & Cat(offered.opcode == op for op in cls.opcodes).any()
                m.d.comb += [port.cmd.eq(ecmd), port.start.eq(start), port.go.eq(go), self.owner[e].eq(sel)]
                m.d.sync += start.eq(for_me | spec_me)
                with m.If(for_me):
                    m.d.sync += [sel.eq(1), go.eq(1)]
                with m.If(spec_me):
                    m.d.sync += [sel.eq(1), go.eq(0)]
                # The command follows the pipe's head in every cycle the pipe runs nothing, or its engine has
                # finished with its command (``release``, a level, low in a ``start`` cycle: whether the pipe
                # releases the instruction now or not, no later take needs more), so that it holds the
                # taken command from the edge of the take on; while the pipe's queue is empty (no head: a take
                # needs one, and a speculative start comes only while every queue is empty) it follows the
                # offered command instead. (Loaded at the take or the speculative start, its ~600 enables and
                # selects hung on the end of the hazard, exclusion and queue logic or on the offered
                # command's decode: 6.8-7.1 ns of fan-out on the front end's worst paths; selected by "nothing
                # in the check stage or the dispatcher", 8 ns: the select is now the queue's own register,
                # docs/synthesis.md "Concurrency control"; an engine reads ``cmd`` only from its ``start`` to
                # its ``done`` or ``release``.)
                # (In parts, each selected by its own copy of the queue's "not empty" register: one copy
                # to all ~640 selects was 11.8 ns of fan-out at a placement seed, docs/synthesis.md. A part
                # loads at a release only if something is queued -- no take without a head -- so that each
                # part's enable has an input of its own and synthesis keeps the enables apart: one net from
                # the engine's ``release`` to all ~640 enables was 7.2 ns of fan-out at a seed.)
                G = dispatch.copies
                copies = dispatch.queued_copies[k * G:(k + 1) * G]
                for g, (lo, hi) in enumerate(bit_slices(Command.size, G)):
                    with m.If(~running[k] | (releasing & copies[g])):
                        m.d.sync += ecmd.as_value()[lo:hi].eq(Mux(copies[g], issue.payload.cmd.as_value()[lo:hi],
                                                                  offered.as_value()[lo:hi]))
                with m.If(passed & sel):
                    m.d.sync += go.eq(1)
                with m.If(aborted & sel):
                    m.d.comb += self.abort[e].eq(1)
                    m.d.sync += [sel.eq(0), go.eq(0)]
                # (an engine may be done before ``go``, e.g. on an empty region: then ``go`` never rises.) A
                # released instruction's ``done`` leaves the engine its ports and ``go`` while another released
                # one, the running one or one taken now still needs them.
                keep = rel_owes & ((nrel[k] - rel_ended != 1) | running[k] | for_me)
                with m.If(sel & port.done & ~keep):
                    m.d.sync += [sel.eq(0), go.eq(0)]
                with m.If(sel & port.done):
                    m.d.comb += [finish.eq(1), status.eq(port.status)]
                with m.If(sel & self.release[e]):
                    m.d.comb += releasing.eq(1)
            # the response: at ``done``, or at the verdict if the engine was done before it. (The queue had
            # room when the instruction was taken, and holds at most one response per instruction of its
            # pipe in flight: ``room``.) The released instruction's ``done`` comes first.
            ended = Signal(name=f"pipe{k}_ended")             # done seen before
            ended_status = Signal(Status, name=f"pipe{k}_ended_status", reset_less=True)
            answered = Signal(name=f"pipe{k}_answered")       # response queued
            answer = Signal(name=f"pipe{k}_answer")
            rel_answer = finish & rel_owes
            answering = ring_index(rel_head, rel_ended, D)      # the released one a ``done`` now is for
            m.d.comb += [answer.eq(((finish & ~rel_owes) | ended) & (checked | passed) & ~aborted & ~answered),
                         w_en.eq(answer | rel_answer),
                         w_data.tag.eq(Mux(rel_owes, Array(rel_tag)[answering], tag)),
                         w_data.status.eq(Mux(ended & ~rel_owes, ended_status, status)),
                         w_data.cycles.eq(now - Mux(rel_owes, Array(rel_stamp)[answering], stamp)),
                         w_data.queued.eq(Mux(rel_owes, Array(rel_queued)[answering], queued))]
            # release: the running instruction, checked and in the scoreboard, neither done nor answered, while
            # fewer than ``RELEASED`` are
            m.d.comb += rel.eq(releasing & running[k] & checked & inserted & ~ended & ~finish & (nrel[k] < D))
            # free the pipe: done seen (now or before), answered, in the scoreboard (and the pipe's previous
            # instruction drained, or draining now: one drains at a time); the instruction retires then (no
            # UB writes) or once the words it handed over have landed (``drained`` after its ``fence``). The
            # released one first.
            rel_fin = rel_ended != 0                      # the oldest released one is done
            run_fin = (finish | ended) & (answered | answer) & inserted & ~any_rel
            finished = rel_fin | run_fin
            m.d.comb += self.fence[k].eq(finish)
            if any(self._classes[e].UB_WRITE for e in mine):
                # (the dispatcher holds the draining instruction and retires one of a pipe per cycle: the
                # draining one, or else the finishing one if nothing is owed for it.) ``drained`` tells of the
                # fences before this cycle, so an instruction finishing at its ``done`` now (``finish``, its
                # fence) drains, and only one whose ``done`` came earlier may retire at once: ``run_fin``
                # with ``finish`` low (``answer`` then needs ``ended``). So no ``done`` reaches the retire,
                # which crosses the front end to the scoreboard's ``valid`` (docs/synthesis.md
                # "Concurrency control"). The draining one may retire in the cycle of a ``done``: its words
                # are the older fence's.
                draining = dispatch.draining[k]
                run_fin_before = ended & inserted & ~any_rel & (answered | ((checked | passed) & ~aborted))
                m.d.comb += [retire[k].eq(self.drained[k] & (draining | rel_fin | run_fin_before)),
                             free[k].eq(finished & (~draining | self.drained[k]))]
            else:
                m.d.comb += [free[k].eq(finished), retire[k].eq(finished)]
            # the released list: the oldest leaves when it frees the pipe, the running one joins at ``rel``
            pop = free[k] & any_rel
            m.d.sync += [nrel[k].eq(nrel[k] + rel - pop), rel_ended.eq(rel_ended + rel_answer - pop)]
            with m.If(pop):
                m.d.sync += rel_head.eq(ring_index(rel_head, 1, D))
            ring_push(m, rel_tag, rel_head, nrel[k], rel, tag)
            ring_push(m, rel_stamp, rel_head, nrel[k], rel, stamp)
            ring_push(m, rel_queued, rel_head, nrel[k], rel, queued)
            with m.If((free[k] & ~any_rel) | aborted | rel):
                m.d.sync += [ended.eq(0), answered.eq(0)]
                with m.If(~take):           # (the next one taken in the cycle of a release runs from now)
                    m.d.sync += running[k].eq(0)
            with m.Else():
                with m.If(finish & ~rel_owes):
                    m.d.sync += [ended.eq(1), ended_status.eq(status)]
                with m.If(answer):
                    m.d.sync += answered.eq(1)
        m.d.comb += [dispatch.done.eq(Cat(free)), dispatch.retire.eq(Cat(retire)), dispatch.release.eq(Cat(rels))]
        return [running[k] | (nrel[k] != 0) for k in range(n)]

    def _exclusion(self, m, dispatch, running):
        """Per pipe, whether it may take an instruction now as far as ``exclusive`` goes: no other pipe of its
        groups runs, and of the heads offered in this cycle in a group its command is the oldest (the
        scoreboard's ages of the two heads, ``Dispatcher.older``: a select of registers by the heads' slots,
        where a compare of their 32-bit stamps was a carry chain on the take's path)."""
        P = len(PIPES)
        allowed = [C(1) for _ in PIPES]
        for group in self._exclusive:
            for k in group:
                others = [j for j in group if j != k]
                # (pipe ``j``'s head as offered were ``j`` idle, ``Dispatcher.offered``: ``j`` runs nothing
                # whenever this matters, and ``issue[j].valid`` would bring ``j``'s release into ``k``'s take)
                older = [~dispatch.offered[j] | dispatch.older[k * P + j] for j in others]
                a = Signal(name=f"pipe{k}_allowed")
                m.d.comb += a.eq(allowed[k] & ~Cat(running[j] for j in others).any() & Cat(older).all())
                allowed[k] = a
        return allowed
