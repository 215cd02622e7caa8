"""The GEMV reducer: the pairwise tree over a block's partial sums, then ``init + tree``.

:class:`Reducer` keeps two banks of ``P`` partial sums per lane (``P = config.gemv_partial_sums``), one
per block in flight: the MAC array (:class:`rtl.gemv_mac.MacArray`) writes a block's finished sums
into its bank while the reducer works on the other. For a bank whose block is complete it runs a
fixed schedule (:func:`schedule`) on one pipelined fp32 / int32 adder per lane, in place in the bank:
level by level ``(s0 + s1), (s2 + s3), ...`` into ``s0, s1, ...``, then ``init + s0``
(docs/semantics.md, "TGEMV accumulation order", steps 3 and 4). A partial sum that got no product
(``q >= K``) is read as the identity (-0.0, integer 0).

Parameters: ``config`` (``gemv_lanes``, ``gemv_partial_sums``). The banks are LUT RAM (``P`` words of
``lanes x 32`` bits, one write port, two asynchronous read ports each), not registers: the reducer reads
two entries and writes one per cycle, which register banks would pay for in wide multiplexers.

Ports
-----
fin_valid, fin_q, fin_bank, fin_last, fin_data : finished partial sums from the MAC array;
    ``fin_last`` marks the block's last one (its bank is then complete).
present : ``P`` bits, ``q < K``: which partial sums received products (constant during an instruction).
acc_int : integer accumulation (int32 wrap-around adds).
init : stream in (``lanes x 32`` bits): the block's initial values (C_in or bias); ``has_init`` = 0
    (TGEMV): +0 instead, and ``init`` is not read.
result : stream out (``lanes x 32`` bits): the block's outputs, in block order. It must be taken within
    ``CYCLES`` cycles (the next block's result overwrites it then; the engine's writer takes it at once).
bank_free : pulse when a bank has been reduced (the MAC array may start another block into it).

Latency: ``schedule(P)[1]`` cycles (``CYCLES``) from a complete bank (and its init) to ``result``;
one block at a time, so a block of fewer than that many products waits for the reducer.
"""

from amaranth import *
from amaranth.lib import memory, stream, wiring
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
        ready = Signal(2)               # bank holds a complete block not yet reduced
        rb = Signal()                   # the bank being (or next to be) reduced
        busy = Signal()
        t = Signal(range(self.CYCLES + 1))

        # ---- the program: operand entries of the add issued in cycle t, the entry written in cycle t --
        ra, rb_addr = Signal(range(P)), Signal(range(P))
        level1, final_add = Signal(), Signal()
        wr_en, wr_dst = Signal(), Signal(range(P))
        with m.Switch(t):
            for t0, (a, b, dst, lv1) in self.issues.items():
                with m.Case(t0):
                    m.d.comb += [ra.eq(a or 0), rb_addr.eq(b), level1.eq(lv1), final_add.eq(a is None)]
        with m.Switch(t):
            for t0, dst in ((t0 + ADD_DEPTH, dst) for t0, (_, _, dst, _) in self.issues.items() if dst is not None):
                with m.Case(t0):
                    m.d.comb += [wr_en.eq(busy), wr_dst.eq(dst)]

        # ---- the banks: LUT RAM, one write port (the MAC array's sums while the bank fills, the tree's
        # results while it is reduced: never both, the engine starts a block only into a free bank), two
        # asynchronous read ports -------------------------------------------------------------------------
        total = Signal(V)
        got_a, got_b = [], []
        for k in range(2):
            mem = memory.Memory(shape=V, depth=P, init=[])
            m.submodules[f"bank{k}"] = mem
            w = mem.write_port()
            fin = self.fin_valid & (self.fin_bank == k)
            m.d.comb += [w.en.eq(Mux(fin, 1, wr_en & (rb == k))), w.addr.eq(Mux(fin, self.fin_q, wr_dst)),
                         w.data.eq(Mux(fin, self.fin_data, total))]
            pa, pb = mem.read_port(domain="comb"), mem.read_port(domain="comb")
            m.d.comb += [pa.addr.eq(ra), pb.addr.eq(rb_addr)]
            got_a.append(pa.data)
            got_b.append(pb.data)
        ent_a, ent_b = Mux(rb, got_a[1], got_a[0]), Mux(rb, got_b[1], got_b[0])

        # level 1 reads the MAC array's sums: one that got no product (q >= K) is the identity
        zero = Mux(self.acc_int, 0, NEG_ZERO)
        ident = Cat(zero for _ in range(HL))
        op_a, op_b = Signal(V), Signal(V)
        m.d.comb += [
            op_a.eq(Mux(final_add, Mux(self.has_init, self.init.payload, 0),
                        Mux(level1 & ~self.present.bit_select(ra, 1), ident, ent_a))),
            op_b.eq(Mux(level1 & ~self.present.bit_select(rb_addr, 1), ident, ent_b)),
        ]
        pop_init = busy & final_add & self.has_init

        # ---- the adders ----------------------------------------------------------------------------------
        sums = []
        for j in range(HL):
            a, b = op_a[32 * j:32 * j + 32], op_b[32 * j:32 * j + 32]
            add = FPAdd(FP32, ADD_DEPTH)
            m.submodules[f"add{j}"] = add
            m.d.comb += [add.a.eq(a), add.b.eq(b)]
            isum = Signal(32, name=f"isum{j}", reset_less=True)
            m.d.sync += isum.eq(a + b)
            for i in range(ADD_DEPTH - 1):
                r = Signal(32, name=f"isum{j}_d{i + 1}", reset_less=True)
                m.d.sync += r.eq(isum)
                isum = r
            sums.append(Mux(self.acc_int, isum, add.result))
        m.d.comb += total.eq(Cat(*sums))

        # ---- control ------------------------------------------------------------------------------------
        res_valid = Signal()
        m.d.comb += [self.result.valid.eq(res_valid), self.init.ready.eq(pop_init)]
        with m.If(self.result.valid & self.result.ready):
            m.d.sync += res_valid.eq(0)
        set_ready = Mux(self.fin_valid & self.fin_last, 1 << self.fin_bank, 0)
        clr_ready = Signal(2)
        # The previous result need not have left: the writer takes it within ceil(lanes * 4 / W) + 1
        # cycles (its C line is queued when the block starts), fewer than the schedule's CYCLES.
        can_start = ~busy & ready.bit_select(rb, 1) & (~self.has_init | self.init.valid)
        with m.If(can_start):
            m.d.sync += [busy.eq(1), t.eq(0)]
        with m.If(busy):
            m.d.sync += t.eq(t + 1)
            with m.If(t == self.CYCLES - 1):
                m.d.sync += [busy.eq(0), rb.eq(~rb), self.result.payload.eq(total), res_valid.eq(1)]
                m.d.comb += [self.bank_free.eq(1), clr_ready.eq(1 << rb)]
        m.d.sync += ready.eq((ready & ~clr_ready) | set_ready)
        return m
