"""A small FIFO of registers whose head and the entry behind it are both flip-flops."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ShiftFifo"]


class ShiftFifo(wiring.Component):
    """A synchronous FIFO of ``depth`` entries, each a register, that shifts towards the head on a read:
    ``r_data`` (the oldest entry) and ``r_next`` (the one behind it) come from flip-flops, and so do
    ``r_rdy``, ``r_next_rdy`` and ``w_rdy``. For a few narrow entries read by a reader that decides a cycle
    ahead what the head will be (``rtl.frontend.dispatch.Dispatcher``'s scoreboard slots: the next head is
    the head, or ``r_next`` after a read); the same capacity and timing as ``RegFifo`` and ``LutFifo`` (an
    entry written into an empty FIFO is at the head in the next cycle; one write and one read per cycle;
    a write while full is refused, even with a read).

    Parameters: ``width``, ``depth`` (at least 2).

    Ports: ``w_data``, ``w_en``, ``w_rdy`` (not full); ``r_data``, ``r_rdy`` (not empty), ``r_en``;
    ``r_next`` and ``r_next_rdy`` (two entries or more held); ``level`` (entries held).

    Latency: a write at edge ``t`` is at the head from the cycle after ``t`` if the FIFO is empty then.
    """

    def __init__(self, width, depth):
        if depth < 2:
            raise ValueError(f"ShiftFifo: depth={depth} must be at least 2")
        self.width, self.depth = width, depth
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "r_data": Out(width), "r_rdy": Out(1), "r_en": In(1),
            "r_next": Out(width), "r_next_rdy": Out(1),
            "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.depth
        entries = [Signal(self.width, name=f"entry{i}", reset_less=True) for i in range(n)]
        held = Signal(n)                    # a thermometer: entry ``i`` holds one
        write = self.w_en & ~held[n - 1]
        read = self.r_en & held[0]
        for i in range(n):
            after = held[i + 1] if i + 1 < n else C(0)      # entry ``i + 1`` holds one (it moves down)
            before = held[i - 1] if i > 0 else C(1)         # entry ``i - 1`` holds one
            with m.If(read):
                # everything moves down a place; a write lands behind the last one
                with m.If(after):
                    if i + 1 < n:
                        m.d.sync += entries[i].eq(entries[i + 1])
                with m.Elif(write & held[i]):
                    m.d.sync += entries[i].eq(self.w_data)
                m.d.sync += held[i].eq(after | (write & held[i]))
            with m.Else():
                with m.If(write & ~held[i] & before):
                    m.d.sync += entries[i].eq(self.w_data)
                m.d.sync += held[i].eq(held[i] | (write & before))
        m.d.comb += [self.w_rdy.eq(~held[n - 1]), self.r_data.eq(entries[0]), self.r_rdy.eq(held[0]),
                     self.r_next.eq(entries[1]), self.r_next_rdy.eq(held[1]),
                     self.level.eq(sum(held[i] for i in range(n)))]
        return m
