"""rtl.ub.write_arbiter.UbWriteArbiter: several writers share the UB write port a word per cycle; every word
reaches the port once, in its writer's order; a writer alone keeps the latency of one register and a word
per cycle; grants rotate; ``drained`` says when a writer's words have all left, ``fenced`` when the words
handed over up to a ``fence`` have."""

import random

import pytest
from amaranth.sim import Simulator

from rtl.config import preset
from rtl.ub.write_arbiter import UbWriteArbiter

CONFIG = preset("small")


def _run(writers, *, offer, words=60, seed=0, hold_check=True, banks=False, fence=0.0):
    """``writers`` writers, each offering its ``words`` words (a count, or one per writer) (data = writer << 32 | sequence) with
    probability ``offer[k]`` per cycle and holding a refused word as the handshake says. Returns per
    writer the cycles its words were taken, the words on the port with their cycle, and per cycle the
    ``drained`` bits and what each writer still had to hand over. ``fence``: the probability per cycle and
    writer of a ``fence`` pulse (logged with the cycle, as are the ``fenced`` bits per cycle)."""
    rng = random.Random(seed)
    words = words if isinstance(words, list) else [words] * writers
    dut = UbWriteArbiter(CONFIG, writers, banks=banks)
    outs = list(dut.ub_bank) if banks else [dut.ub]
    log = {"taken": [[] for _ in range(writers)], "port": [], "drained": [], "fences": [], "fenced": []}
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def bench(ctx):
        sent = [0] * writers
        offering = [False] * writers
        cycle, idle_since = 0, None
        while True:
            for k, port in enumerate(dut.wr):
                if not offering[k] and sent[k] < words[k] and rng.random() < offer[k]:
                    offering[k] = True
                ctx.set(port.valid, offering[k])
                ctx.set(port.data, k << 32 | sent[k])
                ctx.set(port.addr, (k * 97 + sent[k]) % CONFIG.ub_words)
                ctx.set(port.be, 1 + (sent[k] % ((1 << CONFIG.ub_word_bytes) - 1)))
            for b, out in enumerate(outs):
                be, data = ctx.get(out.be), ctx.get(out.data)
                if be:
                    log["port"].append((data >> 32, data & 0xFFFFFFFF, cycle, ctx.get(out.addr), be))
                    if banks:
                        log.setdefault("bank", []).append((b, ctx.get(out.addr)))
            log["drained"].append((ctx.get(dut.drained), [s for s in sent]))
            pulses = [rng.random() < fence for _ in range(writers)]
            ctx.set(dut.fence, sum(p << k for k, p in enumerate(pulses)))
            log["fences"] += [(k, cycle) for k, p in enumerate(pulses) if p]
            log["fenced"].append(ctx.get(dut.fenced))
            for k, port in enumerate(dut.wr):
                if offering[k] and ctx.get(port.ready):
                    log["taken"][k].append(cycle)
                    sent[k] += 1
                    offering[k] = False
            if sent == words and not ctx.get(dut.busy):
                idle_since = cycle if idle_since is None else idle_since
                if cycle - idle_since > 3:
                    break
            await ctx.tick()
            cycle += 1
            assert cycle < 40 * sum(words) + 100, "the arbiter stopped"

    sim.add_testbench(bench)
    sim.run()
    return log


@pytest.mark.parametrize("writers", [1, 2, 3, 4])
@pytest.mark.parametrize("offer", [0.3, 1.0])
def test_every_word_once_in_order(writers, offer):
    log = _run(writers, offer=[offer] * writers, seed=writers)
    for k in range(writers):
        mine = [(seq, cycle, addr, be) for w, seq, cycle, addr, be in log["port"] if w == k]
        assert [seq for seq, *_ in mine] == list(range(60)), f"writer {k}"
        for seq, cycle, addr, be in mine:
            assert addr == (k * 97 + seq) % CONFIG.ub_words and be == 1 + seq % ((1 << CONFIG.ub_word_bytes) - 1)
            assert cycle >= log["taken"][k][seq] + UbWriteArbiter.LATENCY
    cycles = [c for *_, c, _, _ in log["port"]]
    assert len(cycles) == len(set(cycles))          # one word per cycle on the port


def test_a_writer_alone_keeps_one_register_of_latency_and_full_rate():
    log = _run(1, offer=[1.0], words=50)
    assert log["taken"][0] == list(range(50))                       # ready never fell
    assert [c for *_, c, _, _ in log["port"]] == [t + UbWriteArbiter.LATENCY for t in log["taken"][0]]


def test_others_idle_a_writer_is_not_slowed():
    """Writer 2 of 4 alone (the others never offer): as a writer alone."""
    log = _run(4, offer=[0.0, 0.0, 1.0, 0.0], words=[0, 0, 40, 0])
    assert log["taken"][2] == list(range(40))
    assert [c for *_, c, _, _ in log["port"]] == [t + UbWriteArbiter.LATENCY for t in log["taken"][2]]


@pytest.mark.parametrize("writers", [2, 3])
def test_grants_rotate(writers):
    """Every writer always offering: the port is busy every cycle and the writers take turns, so none
    is ahead of another by more than one word at any time."""
    log = _run(writers, offer=[1.0] * writers, words=60)
    port = log["port"]
    first, last = port[0][2], port[-1][2]
    assert last - first == len(port) - 1                            # no idle cycle on the port
    counts = [0] * writers
    for w, *_ in port:
        counts[w] += 1
        assert max(counts) - min(counts) <= 1


def test_drained():
    """``drained[k]``: writer k has nothing in its slot; low from the edge that takes a word until the
    cycle after that word was on the port."""
    log = _run(2, offer=[0.5, 0.5], words=40, seed=5)
    on_port = {}
    for w, seq, cycle, *_ in log["port"]:
        on_port[(w, seq)] = cycle
    for k in range(2):
        for seq, t in enumerate(log["taken"][k]):
            for cycle in range(t + 1, on_port[(k, seq)] + 1):
                assert not (log["drained"][cycle][0] >> k) & 1, (k, seq, cycle)
    assert log["drained"][-1][0] == 0b11


@pytest.mark.parametrize("banks", [False, True])
def test_fenced(banks):
    """``fenced[k]`` in a cycle: every word writer ``k`` handed over at or before its last ``fence`` before
    this cycle (at an earlier edge) has been on the port in an earlier cycle, exactly, while the writer goes
    on handing over words (its next instruction's); a ``fence`` counts from the next cycle on."""
    log = _run(3, offer=[0.9, 0.6, 0.3], words=80, seed=7 + banks, banks=banks, fence=0.15)
    on_port = {(w, seq): cycle for w, seq, cycle, *_ in log["port"]}
    checked = 0
    for k in range(3):
        fences = sorted(c for w, c in log["fences"] if w == k)
        for cycle, bits in enumerate(log["fenced"]):
            last = max((f for f in fences if f < cycle), default=None)
            owed = [seq for seq, t in enumerate(log["taken"][k]) if last is not None and t <= last]
            want = all(on_port[(k, seq)] < cycle for seq in owed)
            assert bool(bits >> k & 1) == want, (k, cycle, last)
            checked += not want
    assert checked > 20        # cycles with words owed to a fence


@pytest.mark.parametrize("writers", [1, 2, 3])
@pytest.mark.parametrize("offer", [0.3, 1.0])
def test_banks_every_word_once_in_order_on_its_bank(writers, offer):
    """With a port per UB bank: every word once, in its writer's order, on the port of its address's parity,
    a word per cycle on each port."""
    log = _run(writers, offer=[offer] * writers, seed=10 + writers, banks=True)
    for k in range(writers):
        mine = [(seq, cycle, addr) for w, seq, cycle, addr, be in log["port"] if w == k]
        assert [seq for seq, *_ in mine] == list(range(60)), f"writer {k}"
        assert all(cycle >= log["taken"][k][seq] + UbWriteArbiter.LATENCY for seq, cycle, _ in mine)
    assert all(addr % 2 == b for b, addr in log["bank"])
    per_port = [(b, c) for (b, _), (*_, c, _, _) in zip(log["bank"], log["port"])]
    assert len(per_port) == len(set(per_port))


def test_banks_two_sequential_writers_both_at_full_rate():
    """Two writers of consecutive words (as a TLOAD and an elementwise engine write): after at most a
    collision they alternate banks and each moves a word per cycle; on one port they share it."""
    for banks, most in ((True, 60 + 3), (False, 2 * 60 + 3)):
        log = _run(2, offer=[1.0, 1.0], banks=banks)
        last = max(log["taken"][0][-1], log["taken"][1][-1])
        assert last <= most and (banks or last >= 2 * 60 - 4), (banks, last)
