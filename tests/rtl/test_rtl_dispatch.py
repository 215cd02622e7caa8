"""The dispatcher (rtl/frontend/dispatch.py: per-pipe queues and the hazard scoreboard) running a program on
mock engines, against the program run one instruction at a time.

Programs: ``rtl_footprints.legal_commands`` (dense random programs: most instructions overlap an earlier
one's tiles or GM region). Each pipe has a mock engine that takes an instruction when idle (not always at
once), runs it for a random 1-16 cycles, reads every byte of its read ranges at one random cycle of that
run and writes its write ranges at a later one (``golden.access``: UB and GM), then raises ``done``.
Memory holds, per byte, which instruction wrote it last. Passing means: every read saw the writer that
program order gives, the memory ends as program order leaves it, each pipe ran its instructions in
program order, a pipe counted a stall only while an older instruction in flight had a hazard with its next
one, and the pipes overlapped (the run is not serial by accident); in every cycle ``queued`` says which pipes
hold an instruction not yet started (and so does each of its ``queued_copies``) and ``older`` orders every two
such pipes' oldest ones as the program does (what the front end's exclusion asks).

``test_each_rule_is_needed`` is the mutation check: with one hazard rule of the scoreboard disabled the
same runs must fail (``gm_waw`` only orders TSTOREs, one pipe, which runs in order anyway: disabling it
must change nothing).
"""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator
from rtl_footprints import legal_commands, set_footprint

from golden.access import access, hazards
from rtl.config import preset
from rtl.frontend.counters import PIPES
from rtl.frontend.dispatch import Dispatcher
from rtl.frontend.scoreboard import RULES
from rtl.isa import INSTRUCTIONS, Pipe


class _Space:
    """One address space (UB or GM) cut at every range boundary of the program: a writer per segment."""

    def __init__(self, ranges):
        self.cuts = np.array(sorted({x for r in ranges for x in r}), dtype=np.int64)
        self.mem = np.full(max(len(self.cuts) - 1, 0), -1, dtype=np.int64)

    def segs(self, ranges):
        out = [np.arange(np.searchsorted(self.cuts, lo), np.searchsorted(self.cuts, hi)) for lo, hi in ranges]
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def run_mock(cmds, config_name, seed, *, disable=(), depth=3, entries=6):
    """Run ``cmds`` through a Dispatcher on mock engines; returns a dict of findings and statistics."""
    acc = [access(c) for c in cmds]
    pipes = [INSTRUCTIONS[c["opcode"]].pipe for c in cmds]
    spaces = {s: _Space([r for a in acc for r in getattr(a, f"{s}_reads") + getattr(a, f"{s}_writes")])
              for s in ("ub", "gm")}
    reads = [{s: spaces[s].segs(getattr(a, f"{s}_reads")) for s in spaces} for a in acc]
    writes = [{s: spaces[s].segs(getattr(a, f"{s}_writes")) for s in spaces} for a in acc]
    # program order: what each instruction reads (segment -> writer), and the memory at the end
    want_reads = []
    for i in range(len(cmds)):
        want_reads.append({s: spaces[s].mem[reads[i][s]].copy() for s in spaces})
        for s in spaces:
            spaces[s].mem[writes[i][s]] = i
    want_end = {s: spaces[s].mem.copy() for s in spaces}
    for s in spaces:
        spaces[s].mem[:] = -1

    dut = Dispatcher(preset(config_name), range(len(cmds)), depth=depth, entries=entries, disable=disable)
    rng = random.Random(seed)
    out = {"bad_reads": [], "bad_stalls": [], "order": {p: [] for p in PIPES}, "overlap": 0, "busy": 0,
           "stalled": 0, "bad_heads": [], "ordered": 0}
    P = len(PIPES)
    finished = set()

    async def bench(ctx):
        nxt, cycle = 0, 0
        run = {}            # pipe index -> (instruction, read cycle, write cycle, done cycle)
        while nxt < len(cmds) or run or not ctx.get(dut.empty):
            offer = nxt < len(cmds) and rng.random() < 0.8
            ctx.set(dut.push.valid, offer)
            if offer:
                ctx.set(dut.push.payload.pipe, 1 << PIPES.index(pipes[nxt]))
                ctx.set(dut.push.payload.payload, nxt)
                set_footprint(ctx, dut.push.payload.footprint, cmds[nxt])
            done, ending = 0, []
            for k in range(len(PIPES)):
                if k in run:
                    i, tr, tw, td = run[k]
                    if cycle == tr:
                        for s in spaces:
                            seen = spaces[s].mem[reads[i][s]]
                            if not np.array_equal(seen, want_reads[i][s]):
                                out["bad_reads"].append((i, cmds[i]["opcode"].name, s))
                    if cycle == tw:
                        for s in spaces:
                            spaces[s].mem[writes[i][s]] = i
                    if cycle == td:
                        done |= 1 << k
                        del run[k]
                        ending.append(i)        # in flight until the edge (the scoreboard retires it there)
                ctx.set(dut.issue[k].ready, k not in run and rng.random() < 0.7)
            ctx.set(dut.done, done)
            ctx.set(dut.retire, done)     # (nothing drains: the front end's draining is its test's)
            pushed = offer and ctx.get(dut.push.ready)
            started = {}
            for k in range(len(PIPES)):
                if ctx.get(dut.issue[k].valid) and ctx.get(dut.issue[k].ready):
                    started[k] = ctx.get(dut.issue[k].payload)
            # a pipe stalls only behind an older instruction in flight (pushed, not done) that conflicts
            stalled = ctx.get(dut.stalled)
            for k in range(len(PIPES)):
                if stalled >> k & 1:
                    head = next(i for i in range(nxt) if pipes[i] == PIPES[k] and i not in out["order"][PIPES[k]])
                    if not any(pipes[j] != pipes[head] and hazards(acc[j], acc[head])
                               for j in range(head) if j not in finished):
                        out["bad_stalls"].append((cycle, head))
            # each pipe's oldest instruction pushed and not started; ``older`` orders every two of them
            heads = {k: next((i for i in range(nxt) if pipes[i] == PIPES[k] and i not in out["order"][PIPES[k]]),
                             None) for k in range(P)}
            queued, older = ctx.get(dut.queued), ctx.get(dut.older)
            copies = ctx.get(dut.queued_copies)
            G = dut.copies
            for k in range(P):
                if bool(queued >> k & 1) != (heads[k] is not None):
                    out["bad_heads"].append((cycle, k, "queued"))
                if (copies >> (k * G)) & ((1 << G) - 1) != ((1 << G) - 1 if heads[k] is not None else 0):
                    out["bad_heads"].append((cycle, k, "queued_copies"))
                for j in range(P):
                    if j != k and heads[k] is not None and heads[j] is not None:
                        out["ordered"] += 1
                        if bool(older >> (k * P + j) & 1) != (heads[k] < heads[j]):
                            out["bad_heads"].append((cycle, k, j, "older"))
            busy = ctx.get(dut.busy)
            out["overlap"] += bin(busy).count("1") > 1
            out["busy"] += busy != 0
            out["stalled"] += ctx.get(dut.stalled) != 0
            await ctx.tick()
            cycle += 1
            finished.update(ending)
            if pushed:
                nxt += 1
            for k, i in started.items():
                tr = cycle + rng.randrange(16)
                tw = rng.randrange(tr, cycle + 16)
                run[k] = (i, tr, tw, tw + 1)
                out["order"][PIPES[k]].append(i)
            assert cycle < 100 * len(cmds) + 100, "the dispatcher deadlocked"
        out["end_ok"] = all(np.array_equal(spaces[s].mem, want_end[s]) for s in spaces)
        out["cycles"] = cycle

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    out["in_order"] = all(out["order"][p] == [i for i in range(len(cmds)) if pipes[i] == p] for p in PIPES)
    return out


def _failed(r):
    return bool(r["bad_reads"]) or not r["end_ok"]


@pytest.mark.parametrize("config_name", ["small", "default"])
def test_programs_equal_sequential_execution(config_name):
    cmds = legal_commands(config_name, programs=30, variants=False)
    assert {INSTRUCTIONS[c["opcode"]].pipe for c in cmds} == set(Pipe)
    for seed in range(2):
        r = run_mock(cmds, config_name, seed)
        assert not r["bad_reads"], f"reads that saw another writer than program order's: {r['bad_reads'][:5]}"
        assert r["end_ok"], "the memory ends differently from program order"
        assert r["in_order"], "a pipe ran its instructions out of program order"
        assert not r["bad_stalls"], f"stalls without a hazard (cycle, instruction): {r['bad_stalls'][:5]}"
        assert not r["bad_heads"], f"queued / older wrong (cycle, pipes): {r['bad_heads'][:5]}"
        assert r["ordered"] > 100, r["ordered"]
        # the check means something only if pipes ran at once and hazards held instructions back
        assert r["overlap"] > r["busy"] // 8, r
        assert r["stalled"] > 0, r


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_is_needed(rule):
    """Mutation check: the dispatcher with ``rule`` disabled (every pipe pair) must fail on these runs
    (``gm_waw`` excepted: it orders TSTOREs alone, which their pipe runs in order)."""
    cmds = legal_commands("small", programs=30, variants=False)
    failed = any(_failed(run_mock(cmds, "small", seed, disable=(rule,))) for seed in range(2 if rule == "gm_waw" else 4))
    assert failed == (rule != "gm_waw"), f"disabling {rule}: failed={failed}"


def possible_rule_pairs():
    """Every (rule, older pipe, younger pipe) of two different pipes that the instruction table allows (a
    destination counts as read, as in golden.access; only TSTORE writes GM, only GM -> UB reads it)."""
    reads_ub = {p for p in Pipe}                                       # every pipe reads (or owns) a tile
    writes_ub = {INSTRUCTIONS[op].pipe for op in INSTRUCTIONS if any(s.writes for s in INSTRUCTIONS[op].slots)}
    gm_w = {INSTRUCTIONS[op].pipe for op in INSTRUCTIONS if INSTRUCTIONS[op].gm_writes}
    gm_r = {INSTRUCTIONS[op].pipe for op in INSTRUCTIONS if INSTRUCTIONS[op].gm and not INSTRUCTIONS[op].gm_writes}
    pairs = {"ub_raw": (writes_ub, reads_ub), "ub_war": (reads_ub, writes_ub), "gm_raw": (gm_w, gm_r),
             "gm_war": (gm_r, gm_w), "gm_waw": (gm_w, gm_w)}
    return [(rule, o, y) for rule, (olders, youngers) in pairs.items()
            for o in PIPES if o in olders for y in PIPES if y in youngers and y != o]


@pytest.mark.slow
@pytest.mark.parametrize("rule,older,younger", possible_rule_pairs(),
                         ids=lambda x: x.name if isinstance(x, Pipe) else x)
def test_each_rule_and_pipe_pair_is_needed(rule, older, younger):
    """Mutation check, finer: one rule between one ordered pair of pipes disabled; dense programs of every
    size (seeds until a run fails, at most 12) must catch it."""
    cmds = legal_commands("small", programs=60, variants=False)
    for seed in range(12):
        if _failed(run_mock(cmds, "small", seed, disable=((rule, older, younger),))):
            return
    pytest.fail(f"disabling {rule} from {older.value} to {younger.value}: 12 runs passed")
