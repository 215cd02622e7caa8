"""UB lines as a stream of words realigned for their destination (:class:`UbReader`), one read port.

Engines move data through the UB as *lines* (a row of a row-major tile, a column of a column-major one).
The reader turns lines into a stream of words realigned for wherever they are going, one word per cycle
at any alignment, with no bubble between lines; :class:`rtl.ub.writer.UbWriter` is its counterpart. The
lines of a tile's valid region come from a walker (``rtl.engines.transfer.walker.LineWalker``, or an
engine's own) with ``rtl.lib.tile.tile_geometry`` for its ``lines``, ``line_bytes`` and ``ub_stride``.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.flag_fifo import FlagFifo
from rtl.lib.tile import ESZ_BITS, LINE_BYTES_BITS, UB_ADDR_BITS
from rtl.ub.buffer import WINDOW_CYCLES, UbReadSignature, UnifiedBuffer, read_window
from rtl.ub.byteshift import SELECT_LATENCY, select_bytes

__all__ = ["UbReader"]


def _one_word(length, off, W):
    """A line of ``length`` bytes (non-zero) from lane ``off`` fits one word: ``off + length <= W``, as
    a compare of a few low bits (no adder over the whole length: the flag is registered with the line)."""
    sh = W.bit_length() - 1
    return (length[sh + 1:] == 0) & (length[:sh + 1] <= W - off)


class UbReader(wiring.Component):
    """Reads lines from the UB as a stream of words aligned for their destination.

    A line is ``length`` bytes from UB byte ``ub_addr``. Byte ``j`` of the line leaves in lane
    ``(dst_off + j) mod W`` (``W = config.ub_word_bytes``), so a line gives ``ceil((dst_off + length) / W)``
    words and ``be`` marks exactly the line's bytes: the words are ready for a destination whose line
    starts at lane ``dst_off`` (a bus beat, another UB word, a compute lane).

    Why no realigner state: a UB read returns a 2-word window (word ``a`` and word ``a + 1``,
    :class:`rtl.ub.buffer.UnifiedBuffer`), and any ``W`` bytes starting at any byte address lie in the window of
    the word holding their first byte. Output word ``k`` of a line starts at UB byte
    ``ub_addr - dst_off + k W``, so it is one read of word ``(ub_addr - dst_off) / W + k`` shifted by
    ``(ub_addr - dst_off) mod W`` bytes, the same shift for every word of the line. The first read may
    start below ``ub_addr`` (before the UB's first word it wraps to the last) and the last may go past the
    line: reads have no side effects, and those lanes are outside ``be``.

    Parameters
    ----------
    config : :class:`rtl.config.Config` (uses ``ub_word_bytes``, ``ub_words``)
    elements : bool
        Element view. The line gains ``esz`` (log2 element bytes) and ``stride`` (bytes between
        elements); it holds ``length >> esz`` elements (at least one), element ``i`` at
        ``ub_addr + i * stride`` (any byte address), and every output word carries one element, in lanes
        ``dst_off .. dst_off + 2**esz - 1`` (``be`` exactly those; ``dst_off + 2**esz <= W``). Uses: a
        column of a row-major tile (``stride`` = row bytes); a column of a column-major tile one element
        per word (``stride = 2**esz``, e.g. TROWEXPANDMUL's expanded operand, one element per row).
        One read per element, same latency and throughput as words.
    align : int
        A power of two: every line's ``ub_addr - dst_off`` is a multiple of ``align`` bytes (the user
        guarantees it, e.g. lines of UB_ALIGN-aligned tiles read to ``dst_off`` 0), so the byte shift
        moves by multiples of it only: less logic (none at all for ``align >= W``). Default 1: any.
    out_bytes : int
        Only lanes ``0 .. out_bytes - 1`` of each output word are produced (``data`` is ``8 out_bytes`` bits,
        ``be`` ``out_bytes`` bits): for a user that never looks further (the GEMV engine's B rows, at most
        ``lanes x 4`` bytes), the shifter and the buffer shrink with it. Default: ``W``.
    depth : int
        Output buffer, in words: at least :attr:`MIN_DEPTH`, the least that keeps one word per cycle (a
        read's word leaves the buffer ``LATENCY - 1`` cycles after the read at the earliest, and its
        credit is back a cycle later; one entry is kept spare).

    Ports
    -----
    lines : stream in ``{ub_addr (a ``UB_ADDR_BITS`` byte address), length (bytes, non-zero), dst_off (0..W-1)}``
        (plus ``esz``, ``stride`` with ``elements``).
    words : stream out ``{data (8 W bits), be (W bits), last (the line's last word)}``, and ``tag`` with
        ``tag_bits``: the line's ``tag`` (a field of its own in ``LineLayout``), on each of its words.
    ub_rd : a UB read port (:class:`rtl.ub.buffer.UbReadSignature`), used only while a line is being read.

    Backpressure: credits. A read is issued only when the output buffer has room for it and for every
    read still in flight, so no word is ever dropped, and ``words.ready`` may be low for any time.

    Latency: :attr:`LATENCY`. A line taken in cycle ``t`` is read from ``t + 1`` on; its first word is
    on ``words`` in ``t + LATENCY`` (read ``t + 1``, the UB's words ``READ_LATENCY`` cycles later,
    registered, shifted into place in ``SELECT_LATENCY`` cycles (:func:`rtl.ub.byteshift.select_bytes`), into the
    buffer, buffer output two cycles later).
    Throughput: one word per cycle while ``words.ready`` is high, at any alignment of source and
    destination; the next line is taken in the cycle that reads the last word of the current one, so
    back-to-back lines have no bubble.

    Timing: the line's start address and word count are computed once when the line is taken; per
    word only a running pointer is incremented and a credit counter compared with zero. The byte shift
    is split in two by a register (:func:`rtl.ub.byteshift.select_bytes`) between the reader's own
    register of the UB's words (loaded only when the reader's own read arrives, nothing in front of it)
    and the buffer, whose output is a register.
    """

    #: Cycles from a line taken to its first read (the line's start address and word count are
    #: registered first).
    ISSUE_CYCLES = 1
    #: The reader's own register of the UB's two words (loaded only when its read arrives).
    INPUT_CYCLES = WINDOW_CYCLES
    #: Cycles from a word written into the output buffer to the same word on ``words`` (its output is a
    #: register).
    BUFFER_CYCLES = 1
    #: Cycles from a line taken to its first word on ``words``: the read, the UB's read latency, the input
    #: register, the shift (``SELECT_LATENCY``) into the buffer, readable the cycle after its write.
    LATENCY = ISSUE_CYCLES + UnifiedBuffer.READ_LATENCY + INPUT_CYCLES + SELECT_LATENCY + BUFFER_CYCLES
    #: The least buffer depth that keeps one word per cycle: a credit comes back ``LATENCY``
    #: cycles after its read, and one entry is kept spare.
    MIN_DEPTH = LATENCY + 1
    #: Copies of the input register's load enable and of its read's parity, each for a slice of the
    #: 2-word window.
    WINDOW_COPIES = 8

    def __init__(self, config, *, elements=False, depth=8, align=1, out_bytes=None, tag_bits=0):
        if depth < self.MIN_DEPTH:
            raise ValueError(f"UbReader depth={depth} must be >= {self.MIN_DEPTH} (one word per cycle needs "
                             f"{self.MIN_DEPTH})")
        if align < 1 or align & (align - 1):
            raise ValueError(f"UbReader align={align} must be a power of two")
        self._align = min(align, config.ub_word_bytes)
        n = config.ub_word_bytes if out_bytes is None else out_bytes
        if not 1 <= n <= config.ub_word_bytes:
            raise ValueError(f"UbReader out_bytes={out_bytes} must be in [1, ub_word_bytes]")
        self._n = n
        self._config = config
        self._elements = elements
        self._depth = depth
        self._tag_bits = tag_bits
        W = config.ub_word_bytes
        fields = {"ub_addr": UB_ADDR_BITS, "length": LINE_BYTES_BITS, "dst_off": range(W)}
        if elements:
            fields.update({"esz": ESZ_BITS, "stride": UB_ADDR_BITS})
        word_fields = {"data": 8 * self._n, "be": self._n, "last": 1}
        if tag_bits:
            fields["tag"] = tag_bits
            word_fields["tag"] = tag_bits
        self.LineLayout = data.StructLayout(fields)
        self.WordLayout = data.StructLayout(word_fields)
        super().__init__({
            "lines": In(stream.Signature(self.LineLayout)),
            "words": Out(stream.Signature(self.WordLayout)),
            "ub_rd": Out(UbReadSignature(config)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W = cfg.ub_word_bytes
        sh = W.bit_length() - 1
        elements = self._elements
        lanes = range(W)

        # ---- issue: one read per output word ---------------------------------------------------------
        active = Signal()
        ptr = Signal(UB_ADDR_BITS)                   # UB byte address of lane 0 of the next output word
        left = Signal(LINE_BYTES_BITS + 1) # output words not yet read
        first = Signal()                   # the next word is the line's first
        lo = Signal(sh)                    # first lane of the line (dst_off)
        end = Signal(sh)                   # one past the last lane of the last word, mod W (0: all W)
        ebe = Signal(W)                    # element view: the lanes of every word
        step = Signal(UB_ADDR_BITS)                  # pointer increment per word
        if not elements:
            m.d.comb += step.eq(W)

        # The output buffer: a FlagFifo (LUT RAM read asynchronously from a registered pointer, flags
        # from registers), so that the consumer's ``ready``, often the last signal of its handshake,
        # only moves a pointer instead of enabling a word-wide register.
        m.submodules.buf = buf = FlagFifo(self.WordLayout.size, self._depth)
        # Credits: buffer entries not yet claimed by a read (issued, in flight through the UB's
        # READ_LATENCY, or in the buffer). A read takes one, a word leaving the buffer returns it, so no
        # word is ever dropped.
        credits = Signal(range(self._depth + 1), init=self._depth)
        has_credit = Signal(init=1)        # credits != 0, a register beside the counter
        read = Signal()
        last = Signal()                    # left == 1, a register beside the counter
        m.d.comb += read.eq(active & has_credit)
        m.d.comb += [self.ub_rd.addr.eq(ptr[sh:]), self.ub_rd.en.eq(read)]
        pop = Signal()
        m.d.comb += pop.eq(buf.r_en)
        m.d.sync += [credits.eq(credits - read + pop),
                     has_credit.eq(pop | ~((credits == 0) | (read & (credits == 1))))]

        be = Signal(W)
        if elements:
            m.d.comb += be.eq(ebe)
        else:
            # (registered in two steps on the way to the data: the lane compares of ``lo`` / ``end``,
            # then their AND with the first / last flags; one step was 5 LUT levels)
            s0_ge, s0_lt = Signal(W, name="s0_ge"), Signal(W, name="s0_lt")
            s0_first, s0_lastw = Signal(name="s0_first"), Signal(name="s0_lastw")
            m.d.sync += [s0_ge.eq(Cat(k >= lo for k in lanes)), s0_lt.eq(Cat((end == 0) | (k < end) for k in lanes)),
                         s0_first.eq(first), s0_lastw.eq(last)]
            s0_be = Cat((~s0_first | s0_ge[k]) & (~s0_lastw | s0_lt[k]) for k in lanes)

        with m.If(read):
            m.d.sync += [ptr.eq(ptr + step), left.eq(left - 1), first.eq(0), last.eq(left == 2)]
            with m.If(last):
                m.d.sync += active.eq(0)
        # (``tag_bits``) the line's tag, beside its words through the read's stages (as ``last``)
        if self._tag_bits:
            tag = Signal(self._tag_bits, name="line_tag")
            s_tag = tag
            for k in range(UnifiedBuffer.READ_LATENCY + 1 + SELECT_LATENCY):
                nt = Signal(self._tag_bits, name=f"tag{k}")
                m.d.sync += nt.eq(s_tag)
                s_tag = nt
        # what the word needs when its read's data arrives, READ_LATENCY cycles later, and when that data
        # has passed the input register (below) a cycle after
        s_valid, s_off, s_be, s_last = read, ptr[:sh], be, last
        valids = [read]                 # valids[k + 1]: s{k}_valid
        for k in range(UnifiedBuffer.READ_LATENCY + 1):
            nv, no, nb, nl = Signal(name=f"s{k}_valid"), Signal(sh, name=f"s{k}_off"), \
                Signal(W, name=f"s{k}_be"), Signal(name=f"s{k}_last")
            m.d.sync += [nv.eq(s_valid), no.eq(s_off), nl.eq(s_last)]
            if k == 0 and not elements:
                m.d.comb += nb.eq(s0_be)
            else:
                m.d.sync += nb.eq(s_be)
            s_valid, s_off, s_be, s_last = nv, no, nb, nl
            valids.append(nv)

        m.d.comb += self.lines.ready.eq(~active | (has_credit & last))
        with m.If(self.lines.valid & self.lines.ready):
            p = self.lines.payload
            m.d.sync += [active.eq(1), first.eq(1), lo.eq(p.dst_off), ptr.eq(p.ub_addr - p.dst_off)]
            if self._tag_bits:
                m.d.sync += tag.eq(p.tag)
            if elements:
                size = Signal(4)
                m.d.comb += size.eq(C(1, 3) << p.esz)
                m.d.sync += [step.eq(p.stride), left.eq(p.length >> p.esz), last.eq(p.length < (size << 1)),
                             ebe.eq(Cat((k >= p.dst_off) & (k < p.dst_off + size) for k in lanes))]
            else:
                m.d.sync += [end.eq(p.dst_off + p.length), left.eq((p.dst_off + p.length + W - 1) >> sh),
                             last.eq(_one_word(p.length, p.dst_off, W))]

        # ---- data: the read's window registered, shifted into place (SELECT_LATENCY), into the buffer --
        # The window passes a register of the reader's own before the shift: the UB's read data comes
        # from across the die, and the shift's selects are the reader's registers, so without it the
        # shift's multiplexers sat between the two, far from one of them (11.4 ns, 10.5 of it routing,
        # in `default` seeds 1 and 3 at 6c333bc). It loads only when the reader's own read arrives
        # (``s{READ_LATENCY - 1}_valid``, in WINDOW_COPIES copies): the UB port is shared, and what
        # other engines read must not move the shifter (in simulation that activity is most of the cost).
        # The register orders the UB's even / odd bank words itself, with its own copies of the read's
        # parity: one LUT per bit in front of it, not one net per bit from the UB shared by every engine
        # (13.8 ns, 13.3 of it wire, from the UB's shared order LUT to local_gather in `default` seed 3
        # at 772f5f7).
        word = Signal(self.WordLayout)
        window = read_window(m, self.ub_rd, ptr[sh], valids[UnifiedBuffer.READ_LATENCY - 1], self.WINDOW_COPIES,
                             "window")
        shifted = select_bytes(m, window, s_off, self._n, align=self._align, name="shift")
        for k in range(SELECT_LATENCY):
            nv, nb, nl = Signal(name=f"t{k}_valid"), Signal(W, name=f"t{k}_be"), Signal(name=f"t{k}_last")
            m.d.sync += [nv.eq(s_valid), nb.eq(s_be), nl.eq(s_last)]
            s_valid, s_be, s_last = nv, nb, nl
        m.d.comb += [
            word.data.eq(shifted),
            word.be.eq(s_be[:self._n]), word.last.eq(s_last),
            *([word.tag.eq(s_tag)] if self._tag_bits else []),
            buf.w_data.eq(word), buf.w_en.eq(s_valid),
            self.words.valid.eq(buf.r_rdy), self.words.payload.eq(buf.r_data),
            buf.r_en.eq(self.words.ready & buf.r_rdy),
        ]
        return m
