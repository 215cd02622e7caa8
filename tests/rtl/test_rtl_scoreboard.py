"""The hazard scoreboard (rtl/frontend/scoreboard.py) against golden.access.hazards.

Legal commands in program order (``rtl_footprints.legal_commands``: dense random programs, whose results,
inputs and GM regions overlap earlier instructions', so most pairs conflict) enter the scoreboard with their
footprints (golden.access, as ``Footprint`` gives them: tests/rtl/test_rtl_footprint.py holds the two
equal) as fast as entries are free; random entries that are not blocked leave. Every cycle, every entry in
flight must be blocked exactly when an older entry still in flight, of another pipe (or of any pipe with
``same_pipe``), has a hazard with it (``golden.access.hazards``), once ``INSERT_LATENCY`` cycles have
passed since it entered (blocked before); ``hazard`` is the same without that first cycle (zero then).
``older`` must order every two entries in flight as their commands are ordered, from the cycle after the
younger entered.
"""

import random

import pytest
from amaranth.sim import Simulator
from rtl_footprints import legal_commands, set_footprint

from golden.access import access, hazards
from rtl.config import preset
from rtl.frontend.counters import PIPES
from rtl.frontend.scoreboard import Scoreboard
from rtl.isa import INSTRUCTIONS


@pytest.mark.parametrize("same_pipe", [False, True], ids=["other_pipes", "same_pipe"])
@pytest.mark.parametrize("config_name,entries", [("small", 4), ("default", 8)])
def test_scoreboard_matches_golden_hazards(config_name, entries, same_pipe):
    cmds = legal_commands(config_name, programs=40, variants=False)
    accesses = [access(c) for c in cmds]
    pipes = [INSTRUCTIONS[c["opcode"]].pipe for c in cmds]
    dut = Scoreboard(preset(config_name), entries, same_pipe=same_pipe)
    rng = random.Random(entries)
    seen = {"blocked": 0, "free": 0, "checked": 0, "ordered": 0, "late": 0}
    mismatches = []

    async def bench(ctx):
        flight = {}            # slot -> (index of its command, cycle it entered)
        nxt, cycle = 0, 0
        was_free = set(range(entries))      # the entries free in the last cycle (all, out of reset)
        while nxt < len(cmds) or flight:
            # what the scoreboard says now, against the reference
            blocked, hazard, older = ctx.get(dut.blocked), ctx.get(dut.hazard), ctx.get(dut.older)
            assert ctx.get(dut.busy) == sum(1 << s for s in flight)
            assert ctx.get(dut.empty) == (not flight)
            # an insert takes the lowest entry free in this cycle and the last (one retired at the last edge
            # is free a cycle later), and is refused only when there is none
            free_now = set(range(entries)) - set(flight)
            both = free_now & was_free
            assert ctx.get(dut.insert.ready) == bool(both), (cycle, sorted(both))
            if both:
                assert ctx.get(dut.slot) == min(both), (cycle, sorted(both))
                seen["late"] += len(free_now) > len(both)
            was_free = free_now
            for s, (i, t) in flight.items():
                got = bool(blocked >> s & 1)
                if cycle - t < Scoreboard.INSERT_LATENCY:
                    want = True
                else:
                    want = any(j < i and (same_pipe or pipes[j] != pipes[i]) and hazards(accesses[j], accesses[i])
                               for j, _ in flight.values())
                    seen["checked"] += 1
                    seen["blocked" if want else "free"] += 1
                if got != want:
                    mismatches.append((cycle, s, i, got, want))
                # ``hazard``: the same without the comparison's cycle (then zero: nothing is known yet)
                if bool(hazard >> s & 1) != (want and cycle - t >= Scoreboard.INSERT_LATENCY):
                    mismatches.append((cycle, s, i, "hazard", bool(hazard >> s & 1)))
            # ``older``: bit ``k * entries + j`` when entry ``j``'s command comes first
            for k, (i, t) in flight.items():
                for j, (i2, t2) in flight.items():
                    if j != k and cycle > max(t, t2):
                        seen["ordered"] += 1
                        if bool(older >> (k * entries + j) & 1) != (i2 < i):
                            mismatches.append((cycle, k, j, "older", i2 < i))
            # offer the next command (sometimes not); retire an unblocked entry (sometimes)
            insert = nxt < len(cmds) and rng.random() < 0.7
            ctx.set(dut.insert.valid, insert)
            if insert:
                ctx.set(dut.insert.payload.pipe, 1 << PIPES.index(pipes[nxt]))
                set_footprint(ctx, dut.insert.payload.footprint, cmds[nxt])
            ready = [s for s, (i, t) in flight.items() if cycle - t >= Scoreboard.INSERT_LATENCY and not blocked >> s & 1]
            gone = [s for s in ready if rng.random() < 0.3]        # several at once, sometimes
            ctx.set(dut.retire, sum(1 << s for s in gone))
            took = insert and ctx.get(dut.insert.ready)
            slot = ctx.get(dut.slot)
            await ctx.tick()
            cycle += 1
            for s in gone:
                del flight[s]
            if took:
                assert slot not in flight
                flight[slot] = (nxt, cycle)
                nxt += 1
            assert cycle < 50 * len(cmds), "the scoreboard deadlocked"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, f"{len(mismatches)} mismatches; first (cycle, slot, command, got, want): {mismatches[:5]}"
    # the test means something only if both answers were common
    assert seen["blocked"] > seen["checked"] // 10 and seen["free"] > seen["checked"] // 10, seen
    assert seen["ordered"] > 1000, seen
    assert seen["late"] > 10, seen          # entries retired at the last edge were seen not taken yet
