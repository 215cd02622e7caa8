"""The hazard scoreboard: which in-flight instructions must wait for an older one (issue #33).

Every instruction enters with its footprint (:class:`rtl.frontend.footprint.Footprint`) in program order and
leaves when it has finished. An entry is *blocked* while an older entry of another pipe that is still in
flight has a read-after-write, write-after-read or write-after-write overlap with it, the hazards of
``golden.access.hazards``, so that pipes running at once compute what one instruction at a time computes.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.frontend.counters import PIPES
from rtl.frontend.footprint import WRITE_SLOT, FootprintLayout
from rtl.isa import TILE_SLOTS

__all__ = ["RULES", "InsertLayout", "Scoreboard", "conflicts"]


def InsertLayout(config):
    """An instruction entering the scoreboard: its one-hot ``pipe`` (:data:`rtl.frontend.counters.PIPES`)
    and its ``footprint``."""
    return data.StructLayout({"pipe": len(PIPES), "footprint": FootprintLayout(config)})


def _overlap(a, b):
    """Two ranges (:func:`rtl.frontend.footprint.RangeLayout` views) share a byte."""
    return a.valid & b.valid & (a.lo < b.hi) & (b.lo < a.hi)


#: The hazard rules, the terms of :func:`conflicts`: ``ub_raw`` the older instruction writes a UB byte the
#: younger reads (its destination counts as read: WAW on the UB too), ``ub_war`` the younger writes a UB byte
#: the older reads, ``gm_raw`` / ``gm_war`` / ``gm_waw`` the same over their GM ranges.
RULES = ("ub_raw", "ub_war", "gm_raw", "gm_war", "gm_waw")


def conflicts(older, younger):
    """The hazards between two instructions' footprints (views of
    :func:`rtl.frontend.footprint.FootprintLayout`), ``older`` first in program order: a dict from each of
    :data:`RULES` to its condition. Seven UB range pairs (the written slot against every slot, both ways)
    and one GM pair, two comparators each; the younger must wait for the older when any is true (the
    hazards of ``golden.access.hazards``)."""
    w = WRITE_SLOT
    gm = _overlap(older.gm, younger.gm)
    return {
        "ub_raw": older.ub_write & Cat(_overlap(older.ub[w], younger.ub[k]) for k in range(len(TILE_SLOTS))).any(),
        "ub_war": younger.ub_write & Cat(_overlap(older.ub[k], younger.ub[w])
                                         for k in range(len(TILE_SLOTS)) if k != w).any(),
        "gm_raw": older.gm_write & ~younger.gm_write & gm,
        "gm_war": ~older.gm_write & younger.gm_write & gm,
        "gm_waw": older.gm_write & younger.gm_write & gm,
    }


class Scoreboard(wiring.Component):
    """In-flight instructions and the hazards between them.

    Parameters: ``config`` (:class:`rtl.config.Config`); ``entries``, how many instructions can be in
    flight; ``same_pipe`` (default False): also hold an instruction behind an older one *of its own pipe*
    that it conflicts with (a pipe that runs its instructions in order, one after another, needs no such
    rule; one that overlaps consecutive instructions does); ``disable``: for the mutation checks only, rules
    left out, each a rule of :data:`RULES` (every pipe pair) or ``(rule, older pipe, younger pipe)`` with
    :class:`rtl.isa.Pipe` members (default: none; a unit never disables one).

    Ports
    -----
    insert : In(stream.Signature(:func:`InsertLayout`))
        An instruction enters at an edge where ``valid`` and ``ready`` are high (``ready``, a register: an
        entry was free in the last cycle and not taken at the last edge), in program order (the command
        stream's).
    slot : Out(range(entries))
        The entry an instruction offered on ``insert`` takes (a register, valid while ``insert.ready``: the
        lowest of those ``ready`` counts; an entry retired at an edge is taken from the cycle after the next).
    retire : In(entries)
        The entries that leave at this edge (their instructions have finished; several pipes may finish
        in one cycle).
    busy : Out(entries)
        The entries in flight.
    blocked : Out(entries)
        Entry ``k`` is in flight and must not start yet: an older entry still in flight conflicts with it
        (:func:`conflicts`), or its own comparison is not finished (in the :attr:`INSERT_LATENCY` cycles
        after the edge it entered at).
    hazard : Out(entries)
        Entry ``k`` waits on an older entry (``blocked`` without the cycles of its own comparison): what a
        stalled-on-hazard counter counts, zero for an instruction that conflicts with nothing.
    older : Out(entries * entries)
        Bit ``k * entries + j``: entry ``j`` entered before entry ``k`` (meaningful while both are in
        flight; a register, exact from the cycle after the edge that inserts the younger). The age of two
        entries without a stamp compare: what the front end's exclusion asks of two pipes' heads.
    empty : Out(1)
        No entry in flight (what a barrier waits for).

    Latency: an entry's ``blocked`` is exact from :attr:`INSERT_LATENCY` (2) edges after the edge it entered
    at (high in between); a retire lowers the ``blocked`` of the entries that waited only for it in the next
    cycle. The incoming instruction is registered at the edge that takes it (``stage``, its entry's one-hot
    ``staged``), compared in the next cycle with every older entry in flight (registers on both sides of
    one comparator level and an OR tree), the comparisons registered (``hit_r``), and its row of
    dependencies (``deps``) written one edge later; ``blocked`` and ``hazard`` are registers, loaded with the
    AND-OR of the next ``valid``, rows and ``pending`` (a retire's and an insert's effect comes with the edge,
    as it would from an AND-OR of the registers).
    """

    #: Edges after the one that inserts an entry to the one that writes its row of dependencies, from which its
    #: ``blocked`` is exact: one registers the instruction (``stage``), one its comparisons (``hit_r``). (With
    #: one, the comparisons read the incoming footprint, which fanned out from the check stage's queue to
    #: every entry's comparators and registers: the front end's worst routed path at a seed,
    #: docs/synthesis.md "Concurrency control". The cycle it costs is hidden while instructions wait in
    #: their pipe's queue; an instruction alone starts speculatively, without the scoreboard.)
    INSERT_LATENCY = 2

    def __init__(self, config, entries=8, *, same_pipe=False, disable=()):
        if entries < 1:
            raise ValueError(f"Scoreboard: entries={entries} must be at least 1")
        self._disable = []
        for d in disable:
            rule, older, younger = (d, None, None) if isinstance(d, str) else d
            if rule not in RULES:
                raise ValueError(f"Scoreboard: {rule!r} is no rule; rules: {', '.join(RULES)}")
            self._disable.append((rule, older, younger))
        self._config, self._entries, self._same_pipe = config, entries, same_pipe
        super().__init__({
            "insert": In(stream.Signature(InsertLayout(config))),
            "slot": Out(range(entries)),
            "retire": In(entries),
            "busy": Out(entries),
            "blocked": Out(entries),
            "hazard": Out(entries),
            "older": Out(entries * entries),
            "empty": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._entries
        layout = InsertLayout(self._config)
        entry = [Signal(layout, name=f"entry{k}", reset_less=True) for k in range(n)]
        valid = Signal(n, name="valid")
        pending = Signal(n, name="pending")
        deps = [Signal(n, name=f"deps{k}") for k in range(n)]

        # The free entry an incoming instruction takes: the lowest of those free in the last cycle and not
        # taken at the last edge, and ``ready`` whether there is one: registers, chosen a cycle ahead, so that
        # an insert's ``ready`` does not start at ``valid`` (~200 loads: their routing and the OR of them began
        # the front end's worst routed path at a placement seed, 10.7 ns, docs/synthesis.md "Concurrency
        # control"). An entry that retires at an edge is taken from the edge after the next one on (a cycle
        # late: only while every entry is in flight does an insert wait for it).
        taking = Signal(n, name="taking")       # one-hot: the entry taken at this edge
        retiring = Signal(n, name="retiring")   # one-hot: the entry leaving at this edge
        free = ~valid & ~taking
        slot = Signal(range(n), name="free_slot")
        ready = Signal(init=1, name="free_any")
        for k in reversed(range(n)):
            with m.If(free[k]):
                m.d.sync += slot.eq(k)
        m.d.sync += ready.eq(free.any())
        m.d.comb += [self.slot.eq(slot), self.insert.ready.eq(ready)]
        fire = self.insert.valid & self.insert.ready
        m.d.comb += [taking.eq(Mux(fire, 1 << slot, 0)),
                     retiring.eq(self.retire)]

        # (1) the instruction taken at the last edge (``stage``, in entry ``staged``) against every other entry
        # in flight (older by construction: one is taken per edge), registered
        stage = Signal(layout, name="stage", reset_less=True)
        staged = Signal(n, name="staged")
        m.d.sync += [stage.eq(self.insert.payload), staged.eq(taking)]
        new = stage
        hit = Signal(n, name="hit")
        for k in range(n):
            other = C(1, 1) if self._same_pipe else ~(entry[k].pipe & new.pipe).any()
            rules = conflicts(entry[k].footprint, new.footprint)
            for rule, older, younger in self._disable:
                pair = C(1, 1)
                if older is not None:
                    pair = entry[k].pipe[PIPES.index(older)] & new.pipe[PIPES.index(younger)]
                rules[rule] = rules[rule] & ~pair
            m.d.comb += hit[k].eq(valid[k] & ~staged[k] & other & Cat(rules.values()).any())
        hit_r = Signal(n, name="hit_r")
        row = Signal(n, name="row")             # one-hot: the entry whose row is written next
        m.d.sync += [hit_r.eq(hit), row.eq(staged)]
        # An entry holds its instruction from the edge after the one that takes it (``staged``, a register:
        # its ~150 enables are not the end of the front end's push logic, docs/synthesis.md "Concurrency
        # control"); nothing reads it before (its own comparison is the stage's); its bits in every row (its
        # column) and its own rows stay clear while it is free, so the rows' enables are the ``valid``
        # registers.
        for k in range(n):
            with m.If(staged[k]):
                m.d.sync += entry[k].eq(stage)
        # (2) the row of dependencies. A bit of an entry that has left meanwhile is harmless: ``blocked``
        # reads ``deps & valid``, and an entry's column is cleared in every row while it is free, after
        # this write (so also at the edge that takes it).
        for k in range(n):
            with m.If(row[k]):
                m.d.sync += deps[k].eq(hit_r)
            for j in range(n):
                with m.If(~valid[j]):
                    m.d.sync += deps[k][j].eq(0)
            # and its own row is empty until written (``hazard`` is zero in the cycle of its comparison)
            with m.If(~valid[k]):
                m.d.sync += deps[k].eq(0)
        # (3) ages: the entry taken at an edge is younger than every entry in flight then (its row, which
        # follows ``valid`` while it is free) and older than none (its column, cleared in every row while
        # it is free)
        older = [Signal(n, name=f"older{k}") for k in range(n)]
        for k in range(n):
            with m.If(~valid[k]):
                m.d.sync += older[k].eq(valid)
            with m.Else():
                m.d.sync += older[k].eq(older[k] & valid)
        m.d.comb += self.older.eq(Cat(older))
        m.d.sync += [valid.eq((valid | taking) & ~retiring),
                     pending.eq((pending & ~row) | taking)]

        # ``hazard`` and ``blocked`` are registers, loaded with what they would be in the next cycle (from
        # the next ``valid``, rows and ``pending``: the same values in every cycle as the AND-OR of the
        # registers), so that the take of an instruction starts at a flip-flop: the AND-OR of ``valid`` and a
        # row began the front end's worst routed path, 9.8-10.4 ns through 8-9 cells (docs/synthesis.md
        # "Concurrency control"). An entry ``j`` in a row counts in the next cycle if it stays in flight
        # (``valid`` and not retiring: one taken now has an empty column), the row's own entry too.
        stays = valid & ~retiring
        hazard_r = Signal(n, name="hazard_r")
        blocked_r = Signal(n, name="blocked_r")
        for k in range(n):
            row_next = Mux(row[k], hit_r, deps[k])
            waits = stays[k] & (row_next & stays).any()
            m.d.sync += [hazard_r[k].eq(waits),
                         blocked_r[k].eq(waits | ((valid[k] | taking[k]) & ~retiring[k]
                                                  & ((pending[k] & ~row[k]) | taking[k])))]
        m.d.comb += [self.busy.eq(valid), self.empty.eq(~valid.any()),
                     self.hazard.eq(hazard_r), self.blocked.eq(blocked_r)]
        return m
