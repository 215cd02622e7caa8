"""Byte realignment of a line between two word-aligned address spaces."""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .walker import LINE_BYTES_BITS

__all__ = ["Realigner"]


class Realigner(wiring.Component):
    """Moves each line of ``length`` bytes from byte ``src_off`` of its first input word to byte
    ``dst_off`` of its first output word, for words of ``width`` bytes on both sides.

    A line takes ``ceil((src_off + length) / width)`` input words and gives
    ``ceil((dst_off + length) / width)`` output words, each with a byte enable per byte (set exactly for
    the line's bytes) and its index ``index`` within the line. The next line starts in the cycle after
    the last output word of the previous one, so back-to-back lines lose no cycle unless the line needs
    one more output word than input words (then one cycle per such line). One-word lines always take
    one cycle.

    Ports
    -----
    line : stream in ``{src_off, dst_off, length}``; ``length`` must be non-zero.
    i : stream in of ``8 * width``-bit words.
    o : stream out ``{data, be, index, line_last}``.

    Latency: combinational from ``i`` to ``o`` (a word leaves in the cycle its last byte arrives).
    """

    def __init__(self, width):
        self._w = width
        off = range(width)
        self.LineLayout = data.StructLayout({"src_off": off, "dst_off": off, "length": LINE_BYTES_BITS})
        self.OutLayout = data.StructLayout({
            "data": 8 * width, "be": width, "index": LINE_BYTES_BITS, "line_last": 1,
        })
        super().__init__({
            "line": In(stream.Signature(self.LineLayout)),
            "i": In(stream.Signature(8 * width)),
            "o": Out(stream.Signature(self.OutLayout)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self._w
        sh = W.bit_length() - 1
        active = Signal()
        flushing = Signal()
        line = Signal(self.LineLayout)
        n_in = Signal(LINE_BYTES_BITS + 1)
        n_out = Signal(LINE_BYTES_BITS + 1)
        lead = Signal()              # output trails input by one word (data moves to lower lanes)
        shift = Signal(range(W))     # (dst_off - src_off) mod W
        in_cnt = Signal(LINE_BYTES_BITS + 1)
        out_cnt = Signal(LINE_BYTES_BITS + 1)
        rem = Signal(LINE_BYTES_BITS + 1)   # line bytes not yet output
        prev = Signal(8 * W)

        # A one-word line whose bytes move to lower lanes would need a flush cycle after its only input
        # word; instead its single output is formed from that word directly ("solo").
        solo = Signal()
        m.d.comb += solo.eq(lead & (n_in == 1))
        cur = Signal(8 * W)
        low = Signal(8 * W)
        m.d.comb += [cur.eq(Mux(flushing | solo, 0, self.i.payload)),
                     low.eq(Mux(solo, self.i.payload, prev))]
        window = Cat(low, cur)
        sel = Signal(range(W + 1))
        m.d.comb += sel.eq(W - shift)
        m.d.comb += self.o.payload.data.eq(window.bit_select(sel << 3, 8 * W))

        lo = Signal(range(W + 1))
        cnt = Signal(range(W + 1))
        m.d.comb += lo.eq(Mux(out_cnt == 0, line.dst_off, 0))
        m.d.comb += cnt.eq(Mux(rem < W - lo, rem, W - lo))
        hi = lo + cnt
        m.d.comb += self.o.payload.be.eq(Cat((k >= lo) & (k < hi) for k in range(W)))
        m.d.comb += [
            self.o.payload.index.eq(out_cnt),
            self.o.payload.line_last.eq(out_cnt == n_out - 1),
        ]

        emit = Signal()
        line_done = Signal()
        m.d.comb += emit.eq(~(lead & (in_cnt == 0)) | solo)
        with m.If(active & flushing):
            m.d.comb += self.o.valid.eq(1)
            m.d.comb += line_done.eq(self.o.ready)
        with m.Elif(active):
            m.d.comb += [
                self.o.valid.eq(self.i.valid & emit),
                self.i.ready.eq(~emit | self.o.ready),
            ]
            with m.If(self.i.valid & self.i.ready):
                m.d.sync += [prev.eq(self.i.payload), in_cnt.eq(in_cnt + 1)]
                with m.If(in_cnt == n_in - 1):
                    with m.If((n_out + lead > n_in) & ~solo):
                        m.d.sync += flushing.eq(1)
                    with m.Else():
                        m.d.comb += line_done.eq(1)
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += [out_cnt.eq(out_cnt + 1), rem.eq(rem - cnt)]
        with m.If(line_done):
            m.d.sync += [active.eq(0), flushing.eq(0)]

        m.d.comb += self.line.ready.eq(~active | line_done)
        with m.If(self.line.valid & self.line.ready):
            p = self.line.payload
            m.d.sync += [
                active.eq(1), flushing.eq(0), line.eq(p),
                n_in.eq((p.src_off + p.length + W - 1) >> sh),
                n_out.eq((p.dst_off + p.length + W - 1) >> sh),
                lead.eq(p.dst_off < p.src_off),
                shift.eq(p.dst_off - p.src_off),
                in_cnt.eq(0), out_cnt.eq(0), rem.eq(p.length),
            ]
        return m
