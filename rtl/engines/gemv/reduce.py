"""The GEMV reducer: the pairwise tree over a block's partial sums, then ``init + tree``.

:class:`Reducer` keeps ``BANKS`` = 2 banks of ``P`` partial sums per lane (``P = config.gemv_partial_sums``),
one per block in flight: the MAC array (:class:`rtl.engines.gemv.mac.MacArray`) writes a block's finished
sums into its bank while the reducer works on the other. For a bank whose block is complete it runs a
fixed schedule (:func:`schedule`) on one pipelined fp32 / int32 adder per lane: level by level
``(s0 + s1), (s2 + s3), ...``, then ``init + tree`` (docs/semantics.md, "TGEMV accumulation order",
steps 3 and 4). A partial sum that got no product (``q >= K``) is read as the identity (-0.0, integer 0).

The banks are LUT RAM, both in one memory per lane (``BANKS * P`` words of ``SUM_BITS``, the bank the top
address bit, so that ``fin_valid`` is the write enable; one write port, two asynchronous read ports),
not registers: the reducer reads two entries per cycle, which register banks would pay for in wide
multiplexers. Only the MAC array writes them: the tree's sums never go back into a bank.

Pipeline of one add (``ADD_LATENCY`` = 7 cycles from its operands' selection to its sum): the schedule's
control for the cycle (one-hot operand selects, bank addresses, hold captures) comes from registers
(decoded a cycle ahead from the schedule counter; a copy per group of lanes, for fan-out); the operands
are selected into the *operand registers* (``OPERAND_CYCLES``): a level-1 add reads two entries of the
bank (asynchronous LUT RAM; a partial sum that got no product is the identity instead), a later add
takes the adder's output of this cycle (forwarded) and the earlier of its two operands from a *hold*
register, and the final add the init; then the adder (``ADD_DEPTH`` registers: every stage boundary but
its output, as the MAC array's). So no read, select or schedule logic sits in front of the adder's first
stage. :func:`schedule` places the adds (one per cycle, deepest level first) and the holds (1 for P = 4 ..
16).

Parameters
----------
config : :class:`rtl.config.Config`
    ``gemv_lanes``, ``gemv_partial_sums``.
overlap : the engine overlaps instructions (``GemvEngine(overlap=True)``), so consecutive blocks may belong
    to instructions of different kinds: ``present``, ``acc_int`` and ``has_init`` are then the *next*
    reduction's (the engine's queue of block contexts, :mod:`rtl.engines.gemv.overlap`), read as they are in
    the cycle it starts (schedule cycle 0's control, ``can_start``) and copied then into registers that the
    rest of its schedule reads; ``started`` pulses in that cycle (the engine pops its queue). Without it they
    are constant during an instruction and the netlist is the serial one.

Ports
-----
fin_valid, fin_q, fin_bank, fin_last, fin_data : finished partial sums from the MAC array (registers);
    ``fin_last`` marks the block's last one (its bank is then complete) and is set only with
    ``fin_valid`` (the reducer takes the completion from it alone).
present : ``P`` bits, ``q < K``: which partial sums received products (constant during an instruction).
acc_int : integer accumulation (int32 wrap-around adds).
init : stream in (``lanes x SUM_BITS`` bits): the block's initial values (C_in or bias); ``has_init`` = 0
    (TGEMV): +0 instead, and ``init`` is not read.
result : stream out (``lanes x SUM_BITS`` bits): the block's outputs, in block order. It must be taken
    within ``INTERVAL`` cycles (at least ``MIN_INTERVAL`` = 6): the next block's result may be loaded
    then. (The engine requires it of its writer, :class:`rtl.engines.gemv.engine.GemvEngine`.)
bank_free : pulse when a bank has been read for the last time (the MAC array may start another block
    into it): in the schedule's cycle ``LAST_READ`` (3 for P = 8).
started : (``overlap`` only) pulse in the cycle a reduction starts (``present``, ``acc_int``, ``has_init`` taken).

Latency
-------
``START_CYCLES`` + ``CYCLES`` cycles (1 + 32 for P = 8) from the start of a reduction to ``result``: a
reduction starts in the cycle the bank's last partial sum is written (or later: the reducer busy, the
init not there), its first reads (schedule cycle 0) in the next cycle, and ``CYCLES`` =
``schedule(P)[1]`` counts from them: the final add's cycle ``FINAL``, ``ADD_LATENCY`` and the result
register (``RESULT_CYCLES``).

Throughput
----------
The next block's reduction may start after the final add of this one (``INTERVAL``, 26 cycles for P = 8,
from start to start; :func:`turnaround`), while this one's last sums are still in the adder; blocks of
fewer products than that wait for the reducer.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.engines.gemv.mac import NEG_ZERO, Q_BITS, SUM_BITS, MacArray, MacTag
from rtl.fp import FP32, FPAdd
from rtl.lib.contract import require

__all__ = ["Reducer", "schedule", "turnaround"]


def schedule(P, depth=None):
    """The reducer's static program for ``P`` partial sums on an adder whose sum is ready ``depth`` cycles
    after its operands are selected (one add per cycle; default ``Reducer.ADD_LATENCY``).

    The tree of docs/semantics.md: level 1 adds bank entries ``(2i, 2i + 1)``, level ``l + 1`` the pairs
    of level ``l``'s sums, the last add ``init + root``. A sum exists only in the cycle it leaves the adder
    (operand ``("sum", None)``, forwarded) or, when it is not used then, in a hold register from that cycle
    on (``("hold", h)``). Adds are placed cycle by cycle, the deepest ready one first.

    Returns ``(issues, cycles, captures, holds)``: ``issues[t] = (a, b, level1)``: the add whose operands
    are selected in cycle ``t``, each operand ``("bank", q)``, ``("hold", h)``, ``("sum", None)`` or
    ``("init", None)`` (``a`` is the left one of the pair; ``level1``: bank entries are partial sums straight
    from the MAC array, a missing one reads as the identity); ``captures[t] = h``: the sum leaving the
    adder in cycle ``t`` goes into hold ``h``; the final sum leaves in cycle ``cycles - RESULT_CYCLES``
    and is on ``result`` in cycle ``cycles``; ``holds``: the number of hold registers.
    """
    depth = Reducer.ADD_LATENCY if depth is None else depth

    class Node:
        def __init__(self, level, idx, kids):
            self.level, self.idx, self.kids, self.issue, self.hold = level, idx, kids, None, None

    cur, nodes, level = [("bank", q) for q in range(P)], [], 1
    while len(cur) > 1:
        cur = [Node(level, i, (cur[2 * i], cur[2 * i + 1])) for i in range(len(cur) // 2)]
        nodes += cur
        level += 1
    final = Node(level, 0, (("init", None), cur[0]))
    nodes.append(final)
    by_priority = sorted(nodes, key=lambda n: (-n.level, n.idx))
    issues, captures, free, holds, t = {}, {}, [], 0, 0
    while final.issue is None:
        leaving = next((n for n in nodes if n.issue is not None and n.issue + depth == t), None)

        def where(x):                   # the operand x in cycle t, or None if not there
            if isinstance(x, tuple):
                return x
            if x is leaving:
                return ("sum", None)
            return None if x.hold is None else ("hold", x.hold)

        used = ()
        for n in by_priority:
            ops = [where(x) for x in n.kids] if n.issue is None else [None]
            if None not in ops:
                n.issue, used = t, n.kids
                issues[t] = (ops[0], ops[1], n.level == 1 or (n is final and P == 1))
                for x in n.kids:
                    if not isinstance(x, tuple) and x.hold is not None:
                        free.append(x.hold)
                        x.hold = None
                break
        if leaving is not None and not any(x is leaving for x in used):
            if free:
                leaving.hold = min(free)
                free.remove(leaving.hold)
            else:
                leaving.hold, holds = holds, holds + 1
            captures[t] = leaving.hold
        t += 1
    return issues, final.issue + depth + Reducer.RESULT_CYCLES, captures, holds


def turnaround(P):
    """``(last_read, final, busy, interval)`` of the schedule for ``P``: the last cycle that reads the
    bank (it is free for the next block after it), the final add's cycle, the last busy cycle (the next
    reduction may start in the cycle after it, its first add a cycle later) and so the fewest cycles
    from one block's start to the next's: ``START_CYCLES`` + the busy cycles ``0 .. busy``, at least
    ``Reducer.MIN_INTERVAL`` (a short schedule's ``busy`` is padded)."""
    issues = schedule(P)[0]
    last_read = max(t for t, (a, b, _) in issues.items() if "bank" in (a[0], b[0]))
    final = max(issues)
    busy = max(final, Reducer.MIN_INTERVAL - Reducer.START_CYCLES - 1)
    return last_read, final, busy, Reducer.START_CYCLES + busy + 1


def _any_of(terms):
    """The AND-OR of ``(select, value)`` pairs of one-hot selects."""
    out = C(0, SUM_BITS)
    for sel, v in terms:
        out = out | (sel.replicate(SUM_BITS) & v)
    return out


class Reducer(wiring.Component):
    __doc__ = __doc__

    #: Banks of ``P`` partial sums per lane: one a block fills while the other is reduced (a tag's
    #: ``bank`` bit, the banks' memory's top address bit; the engine's credits start at it).
    BANKS = 2
    #: Pipeline registers of each lane's fp32 adder: the ring's (the same ``FPAdd`` depth, same timing).
    ADD_DEPTH = MacArray.ADD_DEPTH
    #: An add's operands selected (bank read, forwarded sum, hold, init) -> in the operand registers.
    OPERAND_CYCLES = 1
    #: Cycles from an add's operand selection (its bank read) to its sum on the adder's output.
    ADD_LATENCY = OPERAND_CYCLES + ADD_DEPTH
    #: The cycle a reduction starts in (``can_start``; schedule cycle 0's control is loaded) -> its first
    #: reads (schedule cycle 0).
    START_CYCLES = 1
    #: The final sum on the adder's output -> on ``result`` (the result register ``res``).
    RESULT_CYCLES = 1
    #: The fewest cycles from one reduction's start to the next's (:func:`turnaround` pads a shorter
    #: schedule to it): so ``result`` holds a block's outputs at least this long; the engine's writer
    #: needs up to a C line's words, one per cycle (at most 5; ``GemvEngine`` requires it of ``INTERVAL``).
    MIN_INTERVAL = 6
    #: Copies of the schedule's control registers (fan-out): lane ``j`` uses copy ``j % COPIES``.
    COPIES = 4

    def __init__(self, config, *, overlap=False):
        self._overlap = overlap
        self.lanes = config.gemv_lanes
        self.P = config.gemv_partial_sums
        self.issues, self.CYCLES, self.captures, self.holds = schedule(self.P)
        #: See :func:`turnaround`: the bank's last read, the final add, the last busy cycle, the fewest
        #: cycles from a block's start to the next's.
        self.LAST_READ, self.FINAL, self.BUSY, self.INTERVAL = turnaround(self.P)
        V = SUM_BITS * self.lanes
        super().__init__({
            "fin_valid": In(1), "fin_q": In(Q_BITS), "fin_bank": In(1), "fin_last": In(1), "fin_data": In(V),
            "present": In(self.P), "acc_int": In(1), "has_init": In(1),
            "init": In(stream.Signature(V)), "result": Out(stream.Signature(V)),
            "bank_free": Out(1), **({"started": Out(1)} if overlap else {}),
        })

    def elaborate(self, platform):
        m = Module()
        ready = Signal(self.BANKS)      # bank holds a complete block not yet reduced
        rb = Signal()                   # the bank being (or next to be) reduced
        busy = Signal()
        t = Signal(range(self.BUSY + 1))
        state = SimpleNamespace(ready=ready, rb=rb, busy=busy, t=t)
        prog = self._program(m, state)
        sums = self._lanes(m, prog)
        self._control(m, state, prog, sums)
        return m

    def _program(self, m, state):
        """The schedule as registers: the control of cycle ``t`` (one-hot operand selects with the bank
        ``rb`` and the float / integer choice ``acc_int`` folded in, bank addresses, hold captures) is
        decoded in cycle ``t - 1`` from the counter (for ``t`` = 0: in the cycle the reduction starts)
        into ``COPIES`` copies; the init's pop; the final add's flags delayed by ``ADD_LATENCY`` into the
        result token. Returns them (``copies``, ``can_start`` to drive, ``res_tok``, ``aw``)."""
        P, H = self.P, self.holds
        G = min(self.lanes, self.COPIES)   # copies of the control registers (fan-out), lane j uses copy j % G
        aw, hw = max(1, (P - 1).bit_length()), max(H, 1)
        # ra / rb: the read addresses (entry and bank); a_bank / b_bank: take the bank's entry
        fields = {"ra": aw + 1, "rb": aw + 1, "a_bank": 1, "b_bank": 1, "a_hold": hw, "b_hold": hw, "a_init": 1,
                  "b_sum_f": 1, "b_sum_i": 1, "a_ident": 1, "b_ident": 1, "cap_f": hw, "cap_i": hw}
        nxt = {k: Signal(v, name=f"n_{k}") for k, v in fields.items()}
        pop = Signal()                                  # the final add: take the init (init.ready)
        pop_n = Signal()
        fin_n = Signal(2)                               # the final add (float, integer)
        dec = SimpleNamespace(nxt=nxt, pop_n=pop_n, fin_n=fin_n, aw=aw, rb=state.rb,
                              fl=~self.acc_int, it=self.acc_int, has_init=self.has_init, present=self.present)
        can_start = Signal()
        run = dec
        if self._overlap:
            # the running reduction's own context, taken when it starts (the inputs are the next one's by then)
            acc_int = Signal(name="run_acc_int", reset_less=True)
            has_init = Signal(name="run_has_init", reset_less=True)
            present = Signal(P, name="run_present", reset_less=True)
            with m.If(can_start):
                m.d.sync += [acc_int.eq(self.acc_int), has_init.eq(self.has_init), present.eq(self.present)]
            m.d.comb += self.started.eq(can_start)
            run = SimpleNamespace(**dict(vars(dec), fl=~acc_int, it=acc_int, has_init=has_init, present=present))
        with m.If(state.busy):
            with m.Switch(state.t):
                for t0 in range(1, self.FINAL + 1):
                    body = self._decode(run, t0)
                    if body:
                        with m.Case(t0 - 1):
                            m.d.comb += body
        with m.Else():
            m.d.comb += self._decode(dec, 0, can_start)
        m.d.sync += pop.eq(pop_n)
        m.d.comb += self.init.ready.eq(pop)
        # the final add's sum leaves the adder ADD_LATENCY cycles after the add: then into ``res``
        fin_line = [Signal(2, name="fin_d0")]
        m.d.sync += fin_line[0].eq(fin_n)
        for i in range(self.ADD_LATENCY - 1):
            fin_line.append(Signal(2, name=f"fin_d{i + 1}"))
            m.d.sync += fin_line[-1].eq(fin_line[-2])
        res_tok = Signal()
        m.d.sync += res_tok.eq(fin_line[-1].any())
        copies = []
        for g in range(G):             # kept apart in synthesis by their reset / init variant
            c = {k: Signal(v, name=f"c{g}_{k}", init=-1 if g >> 1 else 0, reset_less=bool(g & 1))
                 for k, v in fields.items()}
            c["res"] = Signal(2, name=f"c{g}_res", init=-1 if g >> 1 else 0, reset_less=bool(g & 1))
            m.d.sync += [c[k].eq(nxt[k]) for k in fields] + [c["res"].eq(fin_line[-1])]
            copies.append(c)
        return SimpleNamespace(aw=aw, copies=copies, can_start=can_start, res_tok=res_tok)

    def _decode(self, dec, t0, start=C(1)):
        """The statements that load schedule cycle ``t0``'s control into ``dec.nxt`` (and the init's pop,
        the final add's flags). ``start`` qualifies what must not happen unless the reduction starts (the
        init's pop, the result token); the rest of cycle 0's control is loaded whenever the reducer is
        idle (reads, selects and captures then only fill registers nobody reads), so it does not wait for
        ``can_start``."""
        nxt, aw, rb, fl, it = dec.nxt, dec.aw, dec.rb, dec.fl, dec.it
        out = []
        if t0 in self.issues:
            (sa, qa), (sb, qb), lv1 = self.issues[t0]
            if sa == "bank":
                absent = ~dec.present[qa] if lv1 else C(0)
                out += [nxt["ra"].eq(Cat(C(qa, aw), rb)), nxt["a_bank"].eq(~absent), nxt["a_ident"].eq(absent & fl)]
            elif sa == "hold":
                out.append(nxt["a_hold"][qa].eq(1))
            else:                   # init: C_in / bias, or +0 (zero bits) for TGEMV
                out += [nxt["a_init"].eq(dec.has_init), dec.pop_n.eq(dec.has_init & start)]
            if sb == "bank":
                absent = ~dec.present[qb] if lv1 else C(0)
                out += [nxt["rb"].eq(Cat(C(qb, aw), rb)), nxt["b_bank"].eq(~absent), nxt["b_ident"].eq(absent & fl)]
            elif sb == "hold":
                out.append(nxt["b_hold"][qb].eq(1))
            else:
                out += [nxt["b_sum_f"].eq(fl), nxt["b_sum_i"].eq(it)]
        if t0 in self.captures:
            out += [nxt["cap_f"][self.captures[t0]].eq(fl), nxt["cap_i"][self.captures[t0]].eq(it)]
        if t0 == self.FINAL:
            out.append(dec.fin_n.eq(Cat(fl, it) & start.replicate(2)))
        return out

    def _lanes(self, m, prog):
        """Per lane: the banks (LUT RAM, both banks in one memory of ``BANKS * P`` entries, the bank the
        top address bit so that the write enable is ``fin_valid`` itself; written by the MAC array only,
        the engine starting a block only into a free bank; two asynchronous read ports), the hold
        registers, the operand registers (AND-OR of the one-hot selects), the fp32 adder and the int32
        add delayed to match it. Returns the lanes' float and integer sums (``sums_f``, ``sums_i``)."""
        HL, H, aw = self.lanes, self.holds, prog.aw
        G = len(prog.copies)
        require(self.BANKS == 1 << MacTag["bank"].width,
                f"Reducer: BANKS = {self.BANKS} banks, addressed by the tag's bank bits "
                f"({MacTag['bank'].width}) as the memory's top address bits")
        sums_f, sums_i = [], []
        for j in range(HL):
            c = prog.copies[j % G]
            mem = memory.Memory(shape=SUM_BITS, depth=self.BANKS << aw, init=[])
            m.submodules[f"banks_{j}"] = mem
            w = mem.write_port()
            lane = slice(SUM_BITS * j, SUM_BITS * (j + 1))
            m.d.comb += [w.en.eq(self.fin_valid), w.addr.eq(Cat(self.fin_q[:aw], self.fin_bank)),
                         w.data.eq(self.fin_data[lane])]
            pa, pb = mem.read_port(domain="comb"), mem.read_port(domain="comb")
            m.d.comb += [pa.addr.eq(c["ra"]), pb.addr.eq(c["rb"])]

            # ---- the operand registers: AND-OR of the one-hot selects -----------------------------------
            add = FPAdd(FP32, self.ADD_DEPTH)
            m.submodules[f"add{j}"] = add
            isum = Signal(SUM_BITS, name=f"isum{j}", reset_less=True)
            isum_out = isum
            for i in range(self.ADD_DEPTH - 1):
                r = Signal(SUM_BITS, name=f"isum{j}_d{i + 1}", reset_less=True)
                m.d.sync += r.eq(isum_out)
                isum_out = r
            fres = add.result
            hold = [Signal(SUM_BITS, name=f"hold{h}_{j}", reset_less=True) for h in range(H)]
            for h in range(H):
                with m.If(c["cap_f"][h]):
                    m.d.sync += hold[h].eq(fres)
                with m.If(c["cap_i"][h]):
                    m.d.sync += hold[h].eq(isum_out)

            a = Signal(SUM_BITS, name=f"op_a{j}", reset_less=True)
            b = Signal(SUM_BITS, name=f"op_b{j}", reset_less=True)
            m.d.sync += [
                a.eq(_any_of([(c["a_bank"], pa.data),
                              (c["a_init"], self.init.payload[lane]),
                              (c["a_ident"], C(NEG_ZERO, SUM_BITS))] + [(c["a_hold"][h], hold[h]) for h in range(H)])),
                b.eq(_any_of([(c["b_bank"], pb.data), (c["b_sum_f"], fres),
                              (c["b_sum_i"], isum_out), (c["b_ident"], C(NEG_ZERO, SUM_BITS))]
                             + [(c["b_hold"][h], hold[h]) for h in range(H)])),
            ]
            m.d.comb += [add.a.eq(a), add.b.eq(b)]
            m.d.sync += isum.eq(a + b)
            sums_f.append(fres)
            sums_i.append(isum_out)
        return SimpleNamespace(f=sums_f, i=sums_i)

    def _control(self, m, state, prog, sums):
        """The result register and its stream, the banks' ``ready`` flags, the start of a reduction
        (``can_start``), the schedule counter and ``bank_free``."""
        HL, G = self.lanes, len(prog.copies)
        ready, rb, busy, t = state.ready, state.rb, state.busy, state.t
        res_valid = Signal()
        res = Signal(SUM_BITS * HL, reset_less=True)
        for j in range(HL):
            c = prog.copies[j % G]
            lane = slice(SUM_BITS * j, SUM_BITS * (j + 1))
            with m.If(c["res"][0]):
                m.d.sync += res[lane].eq(sums.f[j])
            with m.If(c["res"][1]):
                m.d.sync += res[lane].eq(sums.i[j])
        m.d.comb += [self.result.valid.eq(res_valid), self.result.payload.eq(res)]
        with m.If(self.result.valid & self.result.ready):
            m.d.sync += res_valid.eq(0)
        with m.If(prog.res_tok):
            m.d.sync += res_valid.eq(1)
        done_fill = self.fin_last            # a bank's last partial sum, written now (fin_last implies fin_valid)
        set_ready = Mux(done_fill, Mux(self.fin_bank, 0b10, 0b01), 0)
        clr_ready = Signal(self.BANKS)
        # The previous result need not have left when a block starts: it stays on ``result`` until the
        # next one, INTERVAL cycles later at the earliest (the engine's writer takes it within a C line's
        # words; its C line is queued when the block starts).
        # The init must be there: the final add cannot wait (the previous block's has been taken by then).
        complete = ready.bit_select(rb, 1) | (done_fill & (self.fin_bank == rb))
        m.d.comb += prog.can_start.eq(~busy & complete & (~self.has_init | self.init.valid))
        with m.If(prog.can_start):
            m.d.sync += [busy.eq(1), t.eq(0)]
        with m.If(busy):
            m.d.sync += t.eq(t + 1)
            with m.If(t == self.LAST_READ):     # the bank is read for the last time: free it
                m.d.sync += rb.eq(~rb)
                m.d.comb += [self.bank_free.eq(1), clr_ready.eq(Mux(rb, 0b10, 0b01))]
            with m.If(t == self.BUSY):
                m.d.sync += busy.eq(0)
        m.d.sync += ready.eq((ready & ~clr_ready) | set_ready)
