"""The concurrent front end (rtl/frontend/pipe_front.py: checker, footprint, dispatcher, engine starts,
responses in completion order) running dense random programs on mock engines, against the programs run one
instruction at a time.

Programs: ``sim.programs.fuzz`` dense programs as assembled, illegal instructions and TSYNC included; every
command gets its index as tag. Each engine of the unit (the transfer engine as its two halves, one per pipe)
is a mock that, on ``start``, runs for 1-16 cycles, reads every byte of its read ranges at one random cycle
and writes its write ranges at a later one (``golden.access``: UB and GM), then raises ``done``. Memory holds,
per byte, which instruction wrote it last. Passing means: every command is answered once, with the golden
checks' status (an illegal one never reaches an engine, TSYNC neither); every read saw the writer program
order gives and the memory ends as program order leaves it; each pipe ran its instructions in program order on
the engine of their opcode; TSYNC is answered only after every command before it; the pipes overlapped;
``cycles`` covers no more than the command's time in the unit.
"""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from golden.access import access
from golden.check import check
from rtl.config import preset
from rtl.engines.base import GO_DELAY
from rtl.concurrent import concurrent_engines
from rtl.frontend.counters import PIPES
from rtl.frontend.pipe_front import PipeFrontEnd
from rtl.isa import INSTRUCTIONS, Command, Opcode, Pipe, Response, Status, decode
from rtl.top import engines_for
from sim.programs.fuzz import random_program
from test_rtl_dispatch import _Space


def _program(config_name, seeds):
    cmds = []
    for s in seeds:
        p, inputs = random_program(s, config_name, n_instrs=8, dense=True)
        cmds += p.assemble(preset(config_name)).bind(inputs).commands
    cmds += [{"opcode": Opcode.TSYNC}]
    for k, c in enumerate(cmds):
        c["tag"] = k
    return cmds


#: Cycles after its ``done`` a mock UB writer's last writes may land: more than the front end takes from a
#: ``done`` to a dependent's start (3), so that retiring at ``done`` shows.
LATE = 5


def _early(rng):
    """A mock's read, in cycles after its start: at once half of the time (where a missing wait shows)."""
    return 0 if rng.random() < 0.5 else rng.randrange(16)


def run_front(cmds, config_name, seed, *, disable=(), exclusive=(), ignore_drained=False, one_at_a_time=False,
              overlap=True, rsp_ready=0.7):
    """Run ``cmds`` through a PipeFrontEnd on mock engines; returns findings. A UB writer's writes may land
    after its ``done`` (up to ``LATE`` cycles, while its pipe's next instruction runs), and its pipe's
    ``drained`` is low until they have (``ignore_drained``: held high instead, a mutation).
    ``one_at_a_time``: offer a command only when every earlier one has been answered. ``overlap``: the mocks
    of engines that can (``Engine.OVERLAP``) raise ``release`` at a random cycle after their start, and take
    their next instruction while the earlier ones run (``done`` in start order). ``rsp_ready``: the share of
    cycles the host takes a response."""
    cfg = preset(config_name)
    classes = concurrent_engines(engines_for(cfg))
    dut = PipeFrontEnd(cfg, classes, depth=3, entries=6, disable=disable, exclusive=exclusive)
    status = [check(c, cfg) for c in cmds]
    legal = [s == Status.OK and c["opcode"] != Opcode.TSYNC for c, s in zip(cmds, status)]
    acc = [access(c) if ok else None for c, ok in zip(cmds, legal)]
    spaces = {s: _Space([r for a in acc if a for r in getattr(a, f"{s}_reads") + getattr(a, f"{s}_writes")])
              for s in ("ub", "gm")}
    reads = [{s: spaces[s].segs(getattr(a, f"{s}_reads")) for s in spaces} if a else None for a in acc]
    writes = [{s: spaces[s].segs(getattr(a, f"{s}_writes")) for s in spaces} if a else None for a in acc]
    want_reads = [None] * len(cmds)
    for i, a in enumerate(acc):
        if a:
            want_reads[i] = {s: spaces[s].mem[reads[i][s]].copy() for s in spaces}
            for s in spaces:
                spaces[s].mem[writes[i][s]] = i
    want_end = {s: spaces[s].mem.copy() for s in spaces}
    for s in spaces:
        spaces[s].mem[:] = -1
    rng = random.Random(seed)
    out = {"bad_reads": [], "answers": {}, "starts": [], "overlap": 0, "problems": [], "both": 0,
           "speculative": 0, "aborted": [], "go_delay": [], "drain_overlap": 0, "engine_overlap": 0,
           "engine_flight": 0, "back_to_back": 0}
    overlapping = [overlap and cls.OVERLAP for cls in classes]
    rel_at = {}                          # (engine, instruction) -> the cycle its mock releases its command
    vm = (1 << PIPES.index(Pipe.VECTOR)) | (1 << PIPES.index(Pipe.MATRIX))     # "both": cycles both run
    accepted = {}                        # tag -> acceptance cycle
    started_at = {}                      # tag -> the cycle its engine's ``start`` was last high in

    async def bench(ctx):
        nxt, cycle = 0, 0
        run = {}                         # (engine, instruction) -> (read, write, done cycles)
        spec = {}                        # (engine, instruction) -> start cycle: started, no go yet

        def _schedule(e, i, t0, tgo, tr=None):
            """The mock's cycles from its start ``t0``: its reads (at ``tr``) may come before ``go`` (at
            ``tgo``), its writes and ``done`` not."""
            out["starts"].append((e, i))
            tr = t0 + _early(rng) if tr is None else tr
            td = max(rng.randrange(tr, t0 + 16) + 1, tgo + 1)
            if overlapping[e]:
                # done after the engine's earlier instructions' (in start order), release from the cycle after
                # the start up to done
                td = max([td] + [d + 1 for (f, _), (_, _, d) in run.items() if f == e])
                rel_at[(e, i)] = rng.randrange(t0 + 1, td + 1)
            # the writes of a UB writer land up to LATE cycles after done (half of them as late as that: its
            # words in the write port's arbiter), the others' by done (UB -> GM's done follows the write
            # responses)
            if classes[e].UB_WRITE:
                tw = td + LATE if rng.random() < 0.5 else rng.randrange(max(tr, tgo), td + LATE + 1)
            else:
                tw = rng.randrange(max(tr, tgo), td + 1)
            run[(e, i)] = (tr, tw, td)
        while len(out["answers"]) < len(cmds):
            offer = nxt < len(cmds) and rng.random() < 0.8 and (not one_at_a_time or len(out["answers"]) == nxt)
            ctx.set(dut.cmd.valid, offer)
            if offer:
                ctx.set(dut.cmd.payload, Command.const(cmds[nxt]))
            ctx.set(dut.rsp.ready, rng.random() < rsp_ready)
            # ``drained``: the writes of the pipe's instructions done before this cycle have landed (the
            # arbiter's ``fenced``: a ``done`` counts from the next cycle on; its next instruction may be
            # writing meanwhile)
            pending = [any(dut._pipe_of[e] == k and td < cycle <= tw for (e, _), (_, tw, td) in run.items())
                       for k in range(len(PIPES))]
            ctx.set(dut.drained, sum((ignore_drained or not p) << k for k, p in enumerate(pending)))
            done = [False] * len(classes)
            for (e, i), (_, tr) in spec.items():
                if cycle == tr and reads[i] is not None:        # a read before go
                    for s in spaces:
                        if not np.array_equal(spaces[s].mem[reads[i][s]], want_reads[i][s]):
                            out["bad_reads"].append((i, cmds[i]["opcode"].name, s))
            for (e, i), (tr, tw, td) in list(run.items()):
                if cycle == tr:
                    for s in spaces:
                        if not np.array_equal(spaces[s].mem[reads[i][s]], want_reads[i][s]):
                            out["bad_reads"].append((i, cmds[i]["opcode"].name, s))
                if cycle == tw:
                    for s in spaces:
                        spaces[s].mem[writes[i][s]] = i
                done[e] |= cycle == td
                if cycle >= max(tw, td):
                    del run[(e, i)]             # done, and its writes landed
            for e in range(len(classes)):
                ctx.set(dut.engines[e].done, done[e])
                ctx.set(dut.engines[e].status, Status.OK)
                if overlapping[e]:
                    # released: every instruction it runs has released its command (none started now or
                    # waiting for its verdict)
                    mine = [rel_at[(f, i)] for (f, i), (_, _, td) in run.items() if f == e and td >= cycle]
                    ctx.set(dut.release[e], not any(f == e for f, _ in spec) and all(t <= cycle for t in mine))
            taken = offer and ctx.get(dut.cmd.ready)
            if ctx.get(dut.rsp.valid) and ctx.get(dut.rsp.ready):
                r = decode(Response, ctx.get(dut.rsp.payload).as_value().value)
                tag = r["tag"]
                if tag in out["answers"] or tag not in accepted:
                    out["problems"].append(f"cycle {cycle}: response for tag {tag} (answered before, or never accepted)")
                out["answers"][tag] = (r["status"], r["cycles"], cycle - accepted.get(tag, cycle), cycle, r["queued"])
            busy = ctx.get(dut.busy)
            out["overlap"] += bin(busy).count("1") > 1
            out["both"] += busy & vm == vm
            await ctx.tick()
            cycle += 1
            if taken:
                accepted[nxt] = cycle - 1
                out["back_to_back"] += nxt > 0 and accepted[nxt - 1] == cycle - 2
                nxt += 1
            for e in range(len(classes)):
                port = dut.engines[e]
                go = ctx.get(port.go)
                if ctx.get(dut.abort[e]):
                    # the checker rejected the command the engine started on speculatively: it is reset
                    hit = [i for (f, i) in spec if f == e]
                    if not hit or go or legal[hit[0]]:
                        out["problems"].append(f"engine {classes[e].name}: abort of {hit} (go {go})")
                    for i in hit:
                        spec.pop((e, i))
                        out["aborted"].append(i)
                for (f, i), (t0, tr) in list(spec.items()):
                    if f == e and go:                  # the verdict: writes and done may follow
                        spec.pop((f, i))
                        out["go_delay"].append(cycle - t0)
                        _schedule(e, i, t0, cycle, tr)
                if ctx.get(port.start):
                    i = decode(Command, ctx.get(port.cmd).as_value().value)["tag"]
                    started_at[i] = cycle
                    # (a pipe's engine is busy until its done, or until it released the command; its writes may
                    # still be landing after it)
                    busy = [(f, j) for (f, j), (_, _, td) in run.items()
                            if dut._pipe_of[f] == dut._pipe_of[e] and cycle <= td]
                    out["engine_overlap"] += bool(busy)
                    out["engine_flight"] = max(out["engine_flight"], len(busy) + 1)
                    # (while one is in flight, only an opcode the engine takes early: Engine.overlap_opcodes;
                    # and only after a cycle of ``release``: the front end takes the next one in that cycle)
                    if any(f != e or not overlapping[e] or rel_at[(f, j)] >= cycle for f, j in busy) \
                            or Opcode(cmds[i]["opcode"]) not in classes[e].opcodes \
                            or (busy and Opcode(cmds[i]["opcode"]) not in classes[e].overlap_opcodes()):
                        out["problems"].append(f"engine {classes[e].name} started on {i} ({cmds[i]['opcode'].name})")
                        continue
                    # the pipe's previous instruction still draining (done, its writes on their way)
                    out["drain_overlap"] += any(dut._pipe_of[f] == dut._pipe_of[e] and td < cycle <= tw
                                                for (f, _), (_, tw, td) in run.items())
                    if go:
                        if not legal[i]:
                            out["problems"].append(f"engine {classes[e].name} got go for illegal {i}")
                            continue
                        _schedule(e, i, cycle, cycle)
                    else:
                        # a speculative start: only while nothing else is in flight (it may read at once)
                        if run or spec:
                            out["problems"].append(f"engine {classes[e].name}: speculative start of {i} while "
                                                   f"{sorted(run) + sorted(spec)} in flight")
                        out["speculative"] += 1
                        spec[(e, i)] = (cycle, cycle + _early(rng))
            assert cycle < 200 * len(cmds) + 200, "the front end deadlocked"
        out["end_ok"] = all(np.array_equal(spaces[s].mem, want_end[s]) for s in spaces)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # statuses, order within each pipe, TSYNC after everything before it
    for i, c in enumerate(cmds):
        got = out["answers"].get(i)
        want = Status.OK if c["opcode"] == Opcode.TSYNC and status[i] == Status.OK else status[i]
        if got is None or got[0] != want:
            out["problems"].append(f"command {i} ({c['opcode']}): answered {got and got[0]}, want {want}")
        elif not 0 < got[1] <= got[2]:
            out["problems"].append(f"command {i}: cycles {got[1]}, but {got[2]} from acceptance to response")
        else:
            # ``queued``: the cycles from its acceptance to its engine's start; all of them if none ran it
            ran = legal[i] and c["opcode"] != Opcode.TSYNC
            want_q = started_at[i] - accepted[i] if ran else got[1]
            if got[4] != want_q:
                out["problems"].append(f"command {i} ({c['opcode'].name}): queued {got[4]}, want {want_q} "
                                       f"(accepted {accepted[i]}, started {started_at.get(i)})")
        if c["opcode"] == Opcode.TSYNC and got is not None:
            late = [j for j in range(i) if out["answers"][j][3] > got[3]]
            if late:
                out["problems"].append(f"TSYNC {i} answered before commands {late[:5]}")
    for k, pipe in enumerate(PIPES):
        ran = [i for e, i in out["starts"] if INSTRUCTIONS[cmds[i]["opcode"]].pipe == pipe]
        if ran != [i for i in range(len(cmds)) if legal[i] and INSTRUCTIONS[cmds[i]["opcode"]].pipe == pipe]:
            out["problems"].append(f"pipe {pipe.value} ran {ran[:8]}... out of program order or incompletely")
    return out


@pytest.mark.parametrize("config_name,seed", [("small", 1), ("default", 2)])
def test_front_end_equals_sequential_execution(config_name, seed):
    cmds = _program(config_name, range(seed * 10, seed * 10 + 6))
    r = run_front(cmds, config_name, seed)
    assert not r["problems"], r["problems"][:6]
    assert not r["bad_reads"] and r["end_ok"], r["bad_reads"][:6]
    assert any(s != Status.OK for s, *_ in r["answers"].values())       # rejected commands among them
    assert r["overlap"] > 0                                             # pipes ran at once
    assert r["speculative"] > 0                                         # engines started before the verdict
    assert r["drain_overlap"] > 0                   # an instruction started while its pipe's previous drained
    assert r["engine_overlap"] > 0                  # ... while its engine still ran the previous one
    assert 2 <= r["engine_flight"] <= 1 + PipeFrontEnd.RELEASED
    assert r["back_to_back"] > 0                    # the check stage took commands in consecutive cycles


def test_front_end_checks_a_command_per_cycle():
    """The check stage takes a command in every cycle (a pipelined checker, the footprint pipeline, queues for
    their results): 24 commands rejected by the checker, each answered as soon as alone, then legal ones
    behind them, still equal to sequential execution."""
    cfg = preset("small")
    junk = [{"opcode": Opcode.TLOAD, "dst": {"base": 8, "rows": 1, "cols": 1, "valid_rows": 1, "valid_cols": 1},
             "gm": {"rows": 1, "cols": 1}} for _ in range(24)]
    assert all(check(c, cfg) == Status.UB_MISALIGNED for c in junk)
    cmds = junk + _program("small", range(10, 12))
    for k, c in enumerate(cmds):
        c["tag"] = k
    r = run_front(cmds, "small", 2, rsp_ready=1.0)
    assert not r["problems"] and not r["bad_reads"] and r["end_ok"], (r["problems"] + r["bad_reads"])[:6]
    assert r["back_to_back"] >= 23
    cycles = {r["answers"][k][1] for k in range(24)}
    assert len(cycles) == 1, cycles                 # none waits for the one before it


def test_front_end_slow_host():
    """A host that takes a response in one cycle of twenty: the response queues fill, and a pipe takes an
    instruction only while its queue has room for its response and for every released one's still owed, so
    no response is lost (with room for its own response only, a released one's is lost here and the run
    never ends)."""
    cmds = _program("small", range(30, 36))
    r = run_front(cmds, "small", 3, rsp_ready=0.05)
    assert not r["problems"] and not r["bad_reads"] and r["end_ok"], (r["problems"] + r["bad_reads"])[:6]
    assert r["engine_flight"] >= 2


def test_front_end_holds_released_instructions():
    """Up to ``RELEASED`` instructions per pipe wait for their ``done`` while the next one runs on the same
    engine (three in the engine at once), and everything still equals sequential execution."""
    cmds = _program("small", range(30, 36))
    # (a seed whose mocks release early enough for three; 1 until the GEMV engine's mock released too, which
    # changed the draws: seeds 1-24 then reached two; 25 until the front end took the next instruction in the
    # cycle of the release, which changed them again: seed 1 reaches two, 2 three; 1 again since the
    # scoreboard's insert takes two edges, INSERT_LATENCY 2: seed 2 reaches two)
    r = run_front(cmds, "small", 1)
    assert not r["problems"] and not r["bad_reads"] and r["end_ok"], (r["problems"] + r["bad_reads"])[:6]
    assert r["engine_flight"] == 1 + PipeFrontEnd.RELEASED


def test_front_end_without_overlap():
    """The same with engines that take an instruction only when done (``Config.pipe_overlap`` off)."""
    cmds = _program("small", range(40, 46))
    r = run_front(cmds, "small", 3, overlap=False)
    assert not r["problems"] and not r["bad_reads"] and r["end_ok"], (r["problems"] + r["bad_reads"])[:6]
    assert r["engine_overlap"] == 0 and r["overlap"] > 0


def test_front_end_speculative_start_alone():
    """A command that arrives while nothing is in flight starts its engine at once (``start`` in the cycle
    after its acceptance, ``go`` ``GO_DELAY`` cycles later: the one-instruction-at-a-time unit's timing); an
    illegal one is aborted and answered with its status, and the next command still runs."""
    cfg = preset("small")
    cmds = [dict(c) for c in _program("small", [0])[:-1]]     # (seed 0 has an illegal TSTORE)
    legal = [i for i, c in enumerate(cmds) if check(c, cfg) == Status.OK and c["opcode"] != Opcode.TSYNC]
    illegal = [i for i, c in enumerate(cmds) if check(c, cfg) != Status.OK
               and Opcode(c["opcode"]) in {op for cls in engines_for(cfg) for op in cls.opcodes}]
    assert legal and illegal
    picked = [cmds[illegal[0]], cmds[legal[0]], cmds[legal[1]]]
    for k, c in enumerate(picked):
        c["tag"] = k
    r = run_front(picked, "small", 4, one_at_a_time=True)
    assert not r["problems"] and not r["bad_reads"], r["problems"]
    # (the third starts speculatively only if the second's writes have drained when it arrives)
    assert r["aborted"] == [0] and r["speculative"] >= 2
    assert r["go_delay"] == [GO_DELAY] * (r["speculative"] - 1)


def test_front_end_exclusive_pipes():
    """Vector and matrix sharing the UB read ports (``exclusive``): never both busy, everything else holds."""
    cmds = _program("small", range(30, 38))
    free = run_front(cmds, "small", 5)
    assert free["both"] > 0 and not free["problems"]        # without the group they do run at once here
    r = run_front(cmds, "small", 5, exclusive=((Pipe.VECTOR, Pipe.MATRIX),))
    assert not r["problems"] and not r["bad_reads"] and r["end_ok"], (r["problems"] + r["bad_reads"])[:6]
    assert r["both"] == 0 and r["overlap"] > 0


def test_front_end_retires_after_drained():
    """An instruction leaves the scoreboard only once its writes have landed: retiring at ``done`` (``drained``
    held high while the mocks' writes are still on their way) lets a younger instruction read stale bytes."""
    cmds = _program("small", range(10, 16))
    assert not run_front(cmds, "small", 1)["bad_reads"]
    r = run_front(cmds, "small", 1, ignore_drained=True)
    assert r["bad_reads"] or not r["end_ok"]


def test_front_end_same_pipe_rule_is_needed():
    """A pipe takes its next instruction while the previous one drains: with the scoreboard's rules left out
    between instructions of one pipe (kept between pipes) a younger one reads bytes its pipe's previous
    instruction has not written yet."""
    cmds = _program("small", range(20, 28))
    same = [(rule, p, p) for rule in ("ub_raw", "ub_war") for p in (Pipe.GM_TO_UB, Pipe.VECTOR, Pipe.MATRIX)]
    r = run_front(cmds, "small", 1, disable=same)
    assert r["bad_reads"] or not r["end_ok"]


def test_front_end_hazard_rule_is_needed():
    """With the scoreboard's read-after-write rule left out the same kind of run reads stale bytes."""
    cmds = _program("small", range(10, 16))
    r = run_front(cmds, "small", 1, disable=("ub_raw",))
    assert r["bad_reads"] or not r["end_ok"]


def test_front_end_waits_for_the_footprint(monkeypatch):
    """The check stage takes a footprint ``FOOTPRINT_AT`` edges after the acceptance (the footprint pipeline):
    one edge less and an instruction enters the scoreboard with a stale footprint, and reads stale bytes."""
    monkeypatch.setattr(PipeFrontEnd, "FOOTPRINT_AT", PipeFrontEnd.FOOTPRINT_AT - 1)
    r = run_front(_program("small", range(10, 16)), "small", 1)
    assert r["bad_reads"] or not r["end_ok"]
