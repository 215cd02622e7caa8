"""The UB write port shared by several writers (:class:`UbWriteArbiter`): a two-entry slot per writer and a
round-robin grant held in a register, so that every path ends in a register and a writer alone keeps the
latency of today's per-engine write register."""

import functools
import operator

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from rtl.ub.buffer import UbWriteSignature

__all__ = ["UbWriteArbiter"]


class UbWriteArbiter(wiring.Component):
    """Shares the UB write port between ``writers`` engines, a word per cycle.

    Each writer's words enter a slot of two entries (registers) through its handshake; the UB's port
    takes the head of the slot the grant names. The grant is a register, chosen one cycle ahead among the
    slots that will hold a word (round robin from the writer after the one granted last), so the
    multiplexer over the writers is an AND-OR of registers, and a writer's ``ready`` is a register too
    ("its slot has room for a word in this cycle"): no combinational path crosses from one writer to
    another, or from the UB's side back to a writer.

    Parameters
    ----------
    config : :class:`rtl.config.Config` (``ub_words``, ``ub_word_bytes``)
    writers : the number of writers (at least 1)
    banks : grant per UB bank (``UnifiedBuffer(write_banks=True)``): in a cycle, one slot whose head is an
        even word and one whose head is an odd word, each on its bank's port (``ub_bank``), each bank with a
        round robin of its own. Two writers then move a word each per cycle once their words' parities
        differ (two sequential writers fall into opposite phases after one collision).

    Ports
    -----
    wr : ``writers`` flipped :class:`rtl.ub.buffer.UbWriteSignature` with ``handshake=True``: a word is taken
        at an edge where ``valid`` and ``ready`` are both high; ``ready`` is a register, high while the
        writer's slot can take a word in this cycle (it holds at most two)
    ub : :class:`rtl.ub.buffer.UbWriteSignature` (no handshake) to ``UnifiedBuffer.wr``: the granted head
        (``be`` zero when no slot is granted), an AND-OR of registers
    ub_bank : (``banks``, instead of ``ub``) two, to ``UnifiedBuffer.wr_bank``: the head granted to the even
        bank and the one granted to the odd bank
    drained : ``writers`` bits out: the writer's slot is empty and nothing of it is on ``ub`` now, i.e.
        every word the writer has handed over is in the UB's input register or further (its last word
        is readable ``UnifiedBuffer``'s write latency later). What a scoreboard's retire waits for: an
        engine's ``done`` means its last word was *taken*.
    fence : ``writers`` bits in: the writer's instruction is done (a pulse; its last word taken at this edge
        or before), so that ``fenced`` can tell when that instruction's words have left while the writer's
        next instruction already hands over words
    fenced : ``writers`` bits out: every word the writer handed over up to its last ``fence`` before this
        cycle has left the slot (as ``drained``, for those words only; high from reset). A ``fence`` counts
        from the next cycle on: in its own cycle ``fenced`` still tells of the fences before it. A register:
        no path from a writer's ``valid`` or a ``fence``. What a pipe that takes its next instruction at
        ``done`` retires the previous one on.
    busy : out, some slot holds a word

    Latency: a word taken at edge ``t`` is on ``ub`` in the cycle after it (``LATENCY`` = 1, the slot's
    register, as the front end's per-engine write register) when its slot is granted then: always for a
    writer alone, and for each of several writers at least one cycle in ``writers``. Throughput: a word per
    cycle in total; a writer alone a word per cycle (its slot drains as it fills).
    """

    #: Cycles from a word taken (the edge) to the cycle it is on ``ub`` when its slot is granted.
    LATENCY = 1
    #: Entries of a writer's slot: two, so that ``ready`` can be a register and a writer alone still
    #: moves a word per cycle.
    SLOT_DEPTH = 2

    def __init__(self, config, writers, *, banks=False):
        assert writers >= 1
        self._config, self.writers, self._banks = config, writers, banks
        port = UbWriteSignature(config, handshake=True)
        out = {"ub_bank": Out(UbWriteSignature(config)).array(2)} if banks else {"ub": Out(UbWriteSignature(config))}
        super().__init__({
            "wr": In(port).array(writers),
            **out,
            "drained": Out(writers),
            "fence": In(writers),
            "fenced": Out(writers),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, n = self._config, self.writers
        Word = data.StructLayout({"addr": range(cfg.ub_words), "data": 8 * cfg.ub_word_bytes,
                                  "be": cfg.ub_word_bytes})
        outs = list(self.ub_bank) if self._banks else [self.ub]
        # per output port (one, or a bank each): one-hot (or zero), the slot whose head is on it now
        grants = [Signal(n, name=f"grant{'_' + str(b) if self._banks else ''}") for b in range(len(outs))]
        pops = Signal(n, name="pops")
        m.d.comb += pops.eq(functools.reduce(operator.or_, grants))
        heads, heads_next, parity_next = [], [], []
        for k, port in enumerate(self.wr):
            head, second = Signal(Word, name=f"head{k}"), Signal(Word, name=f"second{k}")
            hv, sv = Signal(name=f"head{k}_valid"), Signal(name=f"second{k}_valid")
            ready = Signal(init=1, name=f"ready{k}")
            word = Signal(Word)
            m.d.comb += [word.addr.eq(port.addr), word.data.eq(port.data), word.be.eq(port.be),
                         port.ready.eq(ready)]
            push = port.valid & ready
            pop = pops[k]                         # (a grant names a slot with a head)
            # the slot after this cycle: the head leaves on a pop, the second (or the word now) moves up.
            # The entries' words load by the slot's registers alone, whether a word is pushed or not (an
            # entry's word means something only while its valid bit is set): with ``push`` in their enables,
            # a writer's ``valid`` drove the enables of both entries' ~300 flip-flops from across the die
            # (12.3 ns, 11.2 of it routing, 265 endpoints over 10 ns, ``ecp5_concurrent`` at a placement seed).
            # The head takes the second on a pop, else the word now while it is free or leaves; the second
            # takes the word now when a pushed word would land there (the head stays, or moves up from it).
            with m.If(pop | ~hv):
                m.d.sync += head.eq(Mux(sv, second, word))
            with m.If((pop & sv) | (~pop & hv & ~sv)):
                m.d.sync += second.eq(word)
            with m.If(pop):
                with m.If(sv):
                    m.d.sync += sv.eq(push)
                with m.Else():
                    m.d.sync += hv.eq(push)
            with m.Elif(push):
                with m.If(hv):
                    m.d.sync += sv.eq(1)
                with m.Else():
                    m.d.sync += hv.eq(1)
            # entries next cycle: (hv + sv) - pop + push; ready next cycle: at most one of them
            count_next = hv + sv - pop + push
            m.d.sync += ready.eq(count_next <= self.SLOT_DEPTH - 1)
            heads_next.append(count_next != 0)
            # the next head's word parity (the bank it goes to), following the moves above
            parity_next.append(Mux(pop, Mux(sv, second.addr[0], word.addr[0]), Mux(hv, head.addr[0], word.addr[0])))
            m.d.comb += self.drained[k].eq(~hv & ~sv)
            # the words owed to the last fence: those in the slot after the fence's edge, which leave first
            # (the slot is in order), one per pop
            owed = Signal(range(self.SLOT_DEPTH + 1), name=f"owed{k}")
            # ``fenced`` is a register of its own, ``owed == 0`` from the next state: the retire it starts
            # crosses the front end to the scoreboard's ``valid``. (A fence counts from the next cycle on: the
            # words then in the slot or taken now. Deciding it in the fence's cycle took the writer's
            # ``valid`` through the slot's state into the front end's retire, and a ``fenced`` low in the
            # fence's cycle took the engine's ``done`` there: the concurrent unit's worst routed paths at
            # placement seeds, docs/synthesis.md "Concurrency control".)
            owed_zero = Signal(init=1, name=f"owed{k}_zero")
            with m.If(self.fence[k]):
                m.d.sync += [owed.eq(count_next), owed_zero.eq(count_next == 0)]
            with m.Elif(pop & (owed != 0)):
                m.d.sync += [owed.eq(owed - 1), owed_zero.eq(owed == 1)]
            m.d.comb += self.fenced[k].eq(owed_zero)
            heads.append(head)
        # the ports: the granted head, an AND-OR of registers
        for out, grant in zip(outs, grants):
            for name in ("addr", "data", "be"):
                width = len(getattr(out, name))
                value = C(0, width)
                for k, head in enumerate(heads):
                    value = value | (getattr(head, name) & grant[k].replicate(width))
                m.d.comb += getattr(out, name).eq(value)
        # the next grants: per port, the first slot after the one it granted last (in round-robin order)
        # that will hold a head (of the port's bank)
        for b, grant in enumerate(grants):
            want = [heads_next[k] & ((parity_next[k] == b) if self._banks else 1) for k in range(n)]
            last = Signal(range(max(n, 2)), name=f"last{'_' + str(b) if self._banks else ''}")
            nxt = Signal(n, name=f"next_grant{'_' + str(b) if self._banks else ''}")
            for start in range(n):
                with m.If(last == start):
                    order = [(start + 1 + j) % n for j in range(n)]
                    taken = C(0, 1)
                    for k in order:
                        m.d.comb += nxt[k].eq(want[k] & ~taken)
                        taken = taken | want[k]
            m.d.sync += grant.eq(nxt)
            if n > 1:
                with m.If(nxt.any()):
                    m.d.sync += last.eq(_index(nxt, n))
        m.d.comb += self.busy.eq(~self.drained.all())
        return m


def _index(onehot, n):
    """The index of the set bit of a one-hot value of ``n`` bits (an OR of the indices, no priority)."""
    out = C(0, max(1, (n - 1).bit_length()))
    for k in range(n):
        out = out | Mux(onehot[k], k, 0)
    return out
