"""The GEMV reducer: the pairwise tree over a block's partial sums, then ``init + tree``.

:class:`Reducer` keeps two banks of ``P`` partial sums per lane (``P = config.gemv_partial_sums``), one
per block in flight: the MAC array (:class:`rtl.gemv_mac.MacArray`) writes a block's finished sums
into its bank while the reducer works on the other. For a bank whose block is complete it runs a
fixed schedule (:func:`schedule`) on one pipelined fp32 / int32 adder per lane, in place in the bank:
level by level ``(s0 + s1), (s2 + s3), ...`` into ``s0, s1, ...``, then ``init + s0``
(docs/semantics.md, "TGEMV accumulation order", steps 3 and 4). A partial sum that got no product
(``q >= K``) is read as the identity (-0.0, integer 0).

Parameters: ``config`` (``gemv_lanes``, ``gemv_partial_sums``).

Ports
-----
fin_valid, fin_q, fin_bank, fin_last, fin_data : finished partial sums from the MAC array;
    ``fin_last`` marks the block's last one (its bank is then complete).
present : ``P`` bits, ``q < K``: which partial sums received products (constant during an instruction).
acc_int : integer accumulation (int32 wrap-around adds).
init : stream in (``lanes x 32`` bits): the block's initial values (C_in or bias); ``has_init`` = 0
    (TGEMV): +0 instead, and ``init`` is not read.
result : stream out (``lanes x 32`` bits): the block's outputs, in block order.
bank_free : pulse when a bank has been reduced (the MAC array may start another block into it).

Latency: ``schedule(P)[1]`` cycles (``CYCLES``) from a complete bank (and its init) to ``result``;
one block at a time, so a block of fewer than that many products waits for the reducer.
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .fp import FP32, FPAdd
from .gemv_mac import ADD_DEPTH, NEG_ZERO

__all__ = ["Reducer", "schedule"]


def schedule(P, depth=ADD_DEPTH):
    """The reducer's static program for ``P`` partial sums on an adder of ``depth`` registers.

    Returns ``(issues, cycles)``: ``issues[t] = (a, b, dst, level1)`` adds entries ``a`` and ``b`` of the
    bank into entry ``dst`` (its result is written ``depth`` cycles later); ``a = None`` is the last
    add, ``init + entry b``, whose result is the block's output at cycle ``cycles - 1``. ``level1``: the
    operands are partial sums straight from the MAC array (a missing one reads as the identity).
    """
    issues, t, n, level1 = {}, 0, P, True
    while n > 1:
        for i in range(n // 2):
            issues[t + i] = (2 * i, 2 * i + 1, i, level1)
        t += n // 2 - 1 + depth + 1     # the next level reads after the last write of this one
        n //= 2
        level1 = False
    issues[t] = (None, 0, None, level1)
    return issues, t + depth + 1


class Reducer(wiring.Component):
    __doc__ = __doc__

    def __init__(self, config):
        self.lanes = config.gemv_lanes
        self.P = config.gemv_partial_sums
        self.issues, self.CYCLES = schedule(self.P)
        V = 32 * self.lanes
        super().__init__({
            "fin_valid": In(1), "fin_q": In(6), "fin_bank": In(1), "fin_last": In(1), "fin_data": In(V),
            "present": In(self.P), "acc_int": In(1), "has_init": In(1),
            "init": In(stream.Signature(V)), "result": Out(stream.Signature(V)),
            "bank_free": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        HL, P = self.lanes, self.P
        V = 32 * HL
        banks = [[Signal(V, name=f"bank{b}_{q}") for q in range(P)] for b in range(2)]
        ready = Signal(2)               # bank holds a complete block not yet reduced
        rb = Signal()                   # the bank being (or next to be) reduced
        busy = Signal()
        t = Signal(range(self.CYCLES + 1))

        # ---- the program: operands of the add issued in cycle t, the entry written in cycle t --------
        zero = Mux(self.acc_int, 0, NEG_ZERO)
        op_a, op_b = Signal(V), Signal(V)
        wr_en, wr_dst = Signal(), Signal(range(P))
        pop_init = Signal()
        writes = {t0 + ADD_DEPTH: dst for t0, (a, b, dst, _) in self.issues.items() if dst is not None}
        bank = [Mux(rb, banks[1][q], banks[0][q]) for q in range(P)]

        def entry(q, level1):           # a bank entry as an operand, the identity where it had no products
            if not level1:
                return bank[q]
            ident = Cat(zero for _ in range(HL))
            return Mux(self.present[q], bank[q], ident)

        with m.Switch(t):
            for t0, (a, b, dst, level1) in self.issues.items():
                with m.Case(t0):
                    m.d.comb += op_b.eq(entry(b, level1))
                    if a is None:
                        init = Mux(self.has_init, self.init.payload, 0)
                        m.d.comb += [op_a.eq(init), pop_init.eq(busy & self.has_init)]
                    else:
                        m.d.comb += op_a.eq(entry(a, level1))
        with m.Switch(t):
            for t0, dst in writes.items():
                with m.Case(t0):
                    m.d.comb += [wr_en.eq(busy), wr_dst.eq(dst)]

        # ---- the adders ----------------------------------------------------------------------------------
        sums = []
        for j in range(HL):
            a, b = op_a[32 * j:32 * j + 32], op_b[32 * j:32 * j + 32]
            add = FPAdd(FP32, ADD_DEPTH)
            m.submodules[f"add{j}"] = add
            m.d.comb += [add.a.eq(a), add.b.eq(b)]
            isum = Signal(32, name=f"isum{j}")
            m.d.sync += isum.eq(a + b)
            for i in range(ADD_DEPTH - 1):
                r = Signal(32, name=f"isum{j}_d{i + 1}")
                m.d.sync += r.eq(isum)
                isum = r
            sums.append(Mux(self.acc_int, isum, add.result))
        total = Cat(*sums)

        # ---- bank writes: finished partial sums from the MAC array, tree results from the adders ------
        for b in range(2):
            for q in range(P):
                with m.If(self.fin_valid & (self.fin_bank == b) & (self.fin_q == q)):
                    m.d.sync += banks[b][q].eq(self.fin_data)
                with m.Elif(wr_en & (rb == b) & (wr_dst == q)):
                    m.d.sync += banks[b][q].eq(total)

        # ---- control ------------------------------------------------------------------------------------
        res_valid = Signal()
        m.d.comb += [self.result.valid.eq(res_valid), self.init.ready.eq(pop_init)]
        with m.If(self.result.valid & self.result.ready):
            m.d.sync += res_valid.eq(0)
        set_ready = Mux(self.fin_valid & self.fin_last, 1 << self.fin_bank, 0)
        clr_ready = Signal(2)
        can_start = (~busy & ready.bit_select(rb, 1) & (~self.has_init | self.init.valid) & ~res_valid)
        with m.If(can_start):
            m.d.sync += [busy.eq(1), t.eq(0)]
        with m.If(busy):
            m.d.sync += t.eq(t + 1)
            with m.If(t == self.CYCLES - 1):
                m.d.sync += [busy.eq(0), rb.eq(~rb), self.result.payload.eq(total), res_valid.eq(1)]
                m.d.comb += [self.bank_free.eq(1), clr_ready.eq(1 << rb)]
        m.d.sync += ready.eq((ready & ~clr_ready) | set_ready)
        return m
