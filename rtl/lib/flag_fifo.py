"""A queue whose flags come from registers and whose head is one LUT-RAM read: a pop moves a pointer
and nothing else, so a consumer's late handshake never drives a wide register's enable."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.fifo import lut_ring

__all__ = ["FlagFifo"]


class FlagFifo(wiring.Component):
    """A queue whose flags come from registers: ``r_rdy`` (not empty) and ``w_rdy`` (at least ``slack``
    entries free) are flip-flops, updated from a registered count, so a consumer's or producer's
    handshake logic starts at a register. The entries are a ``depth``-deep asynchronously read memory
    (LUT RAM): ``r_data`` is the head, one LUT-RAM read from the registered read pointer.

    ``w_en`` may be raised whenever the queue is not full (``w_rdy`` with ``slack > 1`` leaves room for
    writes already decided, e.g. one register stage between the producer's handshake and ``w_en``);
    ``r_en`` only with ``r_rdy``. Neither is checked. An entry written in cycle ``t`` is readable from
    ``t + 1``. One write and one read per cycle.

    Ports: ``w_data``, ``w_en``, ``w_rdy``; ``r_data``, ``r_rdy``, ``r_en``.
    """

    #: Cycles from a write to the entry being readable (``r_rdy``, ``r_data``): written in cycle ``t``,
    #: readable from ``t + 1``.
    LATENCY = 1

    def __init__(self, width, depth, *, slack=1):
        if depth < 2:
            raise ValueError(f"FlagFifo depth={depth} must be >= 2")
        if not 1 <= slack < depth:
            raise ValueError(f"FlagFifo slack={slack} must be in [1, depth)")
        self.width, self.depth, self.slack = width, depth, slack
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "r_data": Out(width), "r_rdy": Out(1), "r_en": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.depth
        wp, rp, produce, consume, count = lut_ring(m, self.width, n)
        w_rdy = Signal(init=1)
        r_rdy = Signal()
        m.d.comb += [
            wp.data.eq(self.w_data), wp.en.eq(self.w_en), self.r_data.eq(rp.data),
            self.w_rdy.eq(w_rdy), self.r_rdy.eq(r_rdy),
        ]
        # the flags of the next count, each a compare of ``count`` selected by (w_en, r_en): the enables
        # arrive late, so they only pick one of three precomputed conditions
        up, down = self.w_en & ~self.r_en, self.r_en & ~self.w_en
        free = n - self.slack
        m.d.sync += [
            # (the count too: its +1 and -1 are formed from the register, the enables only pick one; an
            # add of the enables was a carry chain behind them, 10.4 ns in ``default`` seed 1 at 1ed3ce7)
            count.eq(Mux(up, count + 1, Mux(down, count - 1, count))),
            r_rdy.eq(up | Mux(down, count >= 2, count != 0)),
            w_rdy.eq(Mux(up, count <= free - 1, Mux(down, count <= free + 1, count <= free))),
        ]
        def advance(p):            # the next entry (a power-of-two depth wraps by itself)
            return p + 1 if n & (n - 1) == 0 else Mux(p == n - 1, 0, p + 1)
        with m.If(self.w_en):
            m.d.sync += produce.eq(advance(produce))
        with m.If(self.r_en):
            m.d.sync += consume.eq(advance(consume))
        return m
