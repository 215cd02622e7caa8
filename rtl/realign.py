"""Byte realignment of a line between two word-aligned address spaces."""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .walker import LINE_BYTES_BITS

__all__ = ["Realigner"]


def _rotate(m, value, amount, step, name):
    """``value`` (bytes) rotated towards higher lanes by ``amount * step`` bytes: lane ``l`` of the result is
    lane ``(l - amount * step) mod n`` of ``value``. One multiplexer level of ``2 ** len(amount)`` inputs
    per bit."""
    n = len(value) // 8
    out = Signal(len(value), name=name)
    with m.Switch(amount):
        for a in range(1 << len(amount)):
            with m.Case(a):
                s = (a * step) % n
                m.d.comb += out.eq(Cat(value.word_select((l - s) % n, 8) for l in range(n)))
    return out


class Realigner(wiring.Component):
    """Moves each line of ``length`` bytes from byte ``src_off`` of its first input word to byte
    ``dst_off`` of its first output word, for words of ``width`` bytes on both sides, and gives every
    output word its UB word address.

    A line takes ``ceil((src_off + length) / width)`` input words (none for a ``zero`` line: its bytes
    are zeros) and gives ``ceil((dst_off + length) / width)`` output words, each with a byte enable per
    byte (set exactly for the line's bytes), its index ``index`` within the line and its address
    ``addr`` (the line's ``addr`` plus the index). ``line_last`` marks the line's last word, ``last``
    the last word of a line marked ``last``. The next line starts in the cycle after the last input
    word of the previous one, so back-to-back lines lose no cycle unless the line needs one more output
    word than input words (then one cycle per such line). One-word lines always take one cycle.

    How: with ``s = (dst_off - src_off) mod width``, output lane ``l`` holds lane ``(l - s) mod width``
    of an input word (the current one for ``l >= s``, the previous one below), i.e. a rotation of the
    input words by ``s`` bytes and a choice per lane between the current and the previous rotated word.
    The rotation is split by a register (the only pipeline stage): the ``coarse`` step rotates by the
    multiple of 4 bytes in ``s`` (a 4:1 or 8:1 multiplexer per bit for 16 or 32-byte words) as the input
    word is taken, and picks per lane the current or the previous coarse-rotated word; the ``fine`` step
    rotates by ``s mod 4`` (4:1, one LUT level with the slice's multiplexer) in the cycle the word
    leaves, so the output, which goes to the UB write port, is one multiplexer after a register and
    spans 4 bytes of wire; the shifter costs about what a 2W-byte window select in two steps does.

    Ports
    -----
    line : stream in ``{src_off, dst_off, length, zero, addr, last}``; ``length`` must be non-zero. Lines
        are taken into two slots (the active line and the next; ``ready`` is "the next slot is free",
        from registers), where the per-line counts are computed; moving to the next line flips a pointer.
    i : stream in of ``8 * width``-bit words. ``i.ready`` depends only on registers (not on ``i.valid``).
    o : stream out ``{data, be, addr, index, line_last, last}``, always ready (no backpressure): a word
        is valid for exactly the cycle ``o.valid`` is high.

    Latency: :attr:`LATENCY` = 1: a word leaves the cycle after the input word that completes it is
    taken (for a ``zero`` line, after the cycle it is formed in).
    """

    #: Cycles from taking an input word to the output word it completes.
    LATENCY = 1

    def __init__(self, width, addr_bits=24):
        self._w = width
        off = range(width)
        self.LineLayout = data.StructLayout({
            "src_off": off, "dst_off": off, "length": LINE_BYTES_BITS, "zero": 1, "addr": addr_bits, "last": 1,
        })
        self.OutLayout = data.StructLayout({
            "data": 8 * width, "be": width, "addr": addr_bits, "index": LINE_BYTES_BITS, "line_last": 1,
            "last": 1,
        })
        super().__init__({
            "line": In(stream.Signature(self.LineLayout)),
            "i": In(stream.Signature(8 * width)),
            "o": Out(stream.Signature(self.OutLayout, always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self._w
        sh = W.bit_length() - 1
        lanes = range(W)
        fine_bits = min(2, sh)               # the fine step after the register: a 4:1 multiplexer

        # ---- the line queue: two entries, decoded on the way in --------------------------------------
        Dec = data.StructLayout({
            "n_in": LINE_BYTES_BITS + 1,     # input words
            "one_in": 1,                     # n_in == 1
            "lead": 1,                       # dst_off < src_off: the first input word gives no output
            "solo": 1,                       # lead with one input word: its output comes from it alone
            "flush": 1,                      # one more output word than the input words give
            "shift": range(W),               # (dst_off - src_off) mod W
            "ymask": W,                      # lanes i with (i + shift mod 4) mod W >= shift (see below)
            "lo": range(W),                  # dst_off
            "end": range(W),                 # (dst_off + length) mod W
            "zero": 1, "addr": self.LineLayout["addr"].shape, "last": 1,
        })
        # words = whole words of the length + 0, 1 or 2 for its remainder and the offset (short adds only)
        p = self.line.payload
        dec = Signal(Dec)
        q = p.length[sh:]
        rl = p.length[:sh]

        def extra(off):                      # ceil((off + rl) / W) - 0, 1 or 2
            a = off + rl
            return (a != 0) + (a > W)

        c_in, c_out = Signal(2), Signal(2)
        m.d.comb += [c_in.eq(extra(p.src_off)), c_out.eq(extra(p.dst_off))]
        lead = p.dst_off < p.src_off
        one_in = ((q == 0) & (c_in == 1)) | ((q == 1) & (c_in == 0))
        solo = lead & one_in
        shift = Signal(range(W))
        m.d.comb += [
            shift.eq(p.dst_off - p.src_off),
            dec.n_in.eq(q + c_in), dec.one_in.eq(one_in), dec.lead.eq(lead), dec.solo.eq(solo),
            dec.flush.eq((c_out + lead > c_in) & ~solo),        # (n_out - n_in = c_out - c_in)
            dec.shift.eq(shift),
            dec.ymask.eq(Cat(((i + shift[:fine_bits]) % W if fine_bits else i) >= shift for i in lanes)),
            dec.lo.eq(p.dst_off), dec.end.eq(p.dst_off + rl),
            dec.zero.eq(p.zero), dec.addr.eq(p.addr), dec.last.eq(p.last),
        ]
        # Two line slots, each with the decoded line and its own counters (set when the line is pushed):
        # the active one (``rp``) works, the other waits, and moving to the next line only flips ``rp``
        # (nothing wide is loaded when a line ends).
        State = data.StructLayout({
            "in_left": LINE_BYTES_BITS + 1,  # input words not yet taken
            "in_last": 1,                    # the next input word is the line's last
            "first_in": 1,                   # no input word taken yet
            "first_out": 1,                  # no output word yet
            "flushing": 1,                   # the flush word is next
            "index": LINE_BYTES_BITS,
            "addr": self.LineLayout["addr"].shape,
        })
        slot = [Signal(Dec, name=f"slot{k}") for k in range(2)]
        st = [Signal(State, name=f"state{k}") for k in range(2)]
        sv = [Signal(name=f"slot{k}_valid") for k in range(2)]
        rp, wp = Signal(), Signal()
        m.d.comb += self.line.ready.eq(~Mux(wp, sv[1], sv[0]))
        push = self.line.valid & self.line.ready
        for k in range(2):
            with m.If(push & (wp == k)):
                m.d.sync += [slot[k].eq(dec), sv[k].eq(1),
                             st[k].in_left.eq(dec.n_in), st[k].in_last.eq(dec.one_in), st[k].first_in.eq(1),
                             st[k].first_out.eq(1), st[k].flushing.eq(0), st[k].index.eq(0),
                             st[k].addr.eq(dec.addr)]
        with m.If(push):
            m.d.sync += wp.eq(~wp)

        # ---- stage 0: the active line; take input words, decide the output word ----------------------
        cur = Signal(Dec)                    # the line being worked on
        cs = Signal(State)
        active = Signal()
        m.d.comb += [cur.eq(Mux(rp, slot[1], slot[0])), cs.eq(Mux(rp, st[1], st[0])),
                     active.eq(Mux(rp, sv[1], sv[0]))]
        flushing = Signal()
        m.d.comb += flushing.eq(cs.flushing & active)
        in_last, first_in, first_out = cs.in_last, cs.first_in, cs.first_out
        index, addr = cs.index, cs.addr
        line_done = Signal()                 # the active line's last word is formed now

        want = Signal()                      # take an input word in this cycle (if one is there)
        m.d.comb += want.eq(active & ~flushing & ~cur.zero)
        m.d.comb += self.i.ready.eq(want)
        have = Signal()                      # an input word (or a zero word) is taken now
        m.d.comb += have.eq(active & ~flushing & (cur.zero | self.i.valid))
        emit = Signal()                      # an output word is formed now
        m.d.comb += emit.eq(flushing | (have & (~(cur.lead & first_in) | cur.solo)))
        out_last = Signal()
        m.d.comb += out_last.eq(flushing | (in_last & ~cur.flush))
        m.d.comb += line_done.eq(flushing | (have & in_last & ~cur.flush))
        for k in range(2):
            mine = rp == k
            with m.If(have & mine):
                m.d.sync += [st[k].in_left.eq(cs.in_left - 1), st[k].in_last.eq(cs.in_left == 2),
                             st[k].first_in.eq(0)]
                with m.If(in_last & cur.flush):
                    m.d.sync += st[k].flushing.eq(1)
            with m.If(emit & mine):
                m.d.sync += [st[k].first_out.eq(0), st[k].index.eq(index + 1), st[k].addr.eq(addr + 1)]
            with m.If(line_done & mine):
                m.d.sync += [sv[k].eq(0), st[k].flushing.eq(0)]
        with m.If(line_done):
            m.d.sync += rp.eq(~rp)

        # The input word rotated by the coarse part of the shift (zeros for a zero line), and per lane
        # the current or the previous such word: output lane l = lane (l - f) mod W of that choice, f =
        # shift mod 4, so the choice for source lane i is made with ``ymask`` (output lane (i + f) mod W
        # >= shift takes the current word) before the register, and the fine step after it is a plain
        # rotation. A solo word takes every lane from the current word, a flush word none.
        word = Signal(8 * W)
        m.d.comb += word.eq(Mux(cur.zero, 0, self.i.payload))
        coarse = _rotate(m, word, cur.shift[fine_bits:], 1 << fine_bits, "coarse")
        prev = Signal(8 * W, reset_less=True)     # the previous input word, coarse-rotated
        with m.If(have):
            m.d.sync += prev.eq(coarse)
        ymask = Signal(W)
        m.d.comb += ymask.eq(Mux(flushing, 0, Mux(cur.solo, C(-1, W), cur.ymask)))
        merged = Cat(Mux(ymask[i], coarse.word_select(i, 8), prev.word_select(i, 8)) for i in lanes)

        # ---- stage 1 (registers), and the output ------------------------------------------------------
        s1_valid = Signal()
        s1_word = Signal(8 * W, reset_less=True)
        s1_fine = Signal(max(1, fine_bits), reset_less=True)
        s1_be = Signal(W, reset_less=True)
        s1_meta = Signal(data.StructLayout({"addr": len(addr), "index": LINE_BYTES_BITS,
                                            "line_last": 1, "last": 1}), reset_less=True)
        lo = cur.lo
        end = cur.end
        be = Cat((~first_out | (l >= lo)) & (~out_last | (end == 0) | (l < end)) for l in lanes)
        m.d.sync += [
            s1_valid.eq(emit), s1_word.eq(merged),
            s1_fine.eq(cur.shift[:fine_bits] if fine_bits else 0),
            s1_be.eq(be),
            s1_meta.addr.eq(addr), s1_meta.index.eq(index), s1_meta.line_last.eq(out_last),
            s1_meta.last.eq(out_last & cur.last),
        ]
        out = _rotate(m, s1_word, s1_fine, 1, "fine") if fine_bits else s1_word
        m.d.comb += [
            self.o.valid.eq(s1_valid),
            self.o.payload.data.eq(out), self.o.payload.be.eq(s1_be),
            self.o.payload.addr.eq(s1_meta.addr), self.o.payload.index.eq(s1_meta.index),
            self.o.payload.line_last.eq(s1_meta.line_last), self.o.payload.last.eq(s1_meta.last),
        ]
        return m
