"""A stream of UB-aligned words written into UB lines with exact byte enables (:class:`UbWriter`), the
write port; the counterpart of :class:`rtl.ub.reader.UbReader`."""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.tile import LINE_BYTES_BITS, UB_ADDR_BITS
from rtl.ub.buffer import UbWriteSignature

__all__ = ["UbWriter"]


class UbWriter(wiring.Component):
    """Writes a stream of UB-aligned words into lines of the UB, with exact byte enables.

    A line is ``length`` bytes from UB byte ``ub_addr``; it takes ``ceil((ub_addr mod W + length) / W)``
    words (``W = config.ub_word_bytes``) whose lane ``l`` is the byte for address ``... mod W = l``, i.e.
    aligned to the UB word grid. Word ``k`` of a line goes to UB word ``ub_addr / W + k`` with byte
    enables set exactly for the line's bytes: nothing outside ``[ub_addr, ub_addr + length)`` is ever
    written.

    Parameters: ``config`` (uses ``ub_word_bytes``, ``ub_words``).

    Ports
    -----
    lines : stream in ``{ub_addr (a ``UB_ADDR_BITS`` byte address), length (bytes, non-zero)}``. A line must be
        taken before its first word: the writer holds the next line beside the active one, and takes a
        line when it holds none or as the held one becomes active.
    words : stream in, ``8 W``-bit words; ready while a line is active and the write port is ready.
    ub_wr : the UB write port with its handshake (:class:`rtl.ub.buffer.UbWriteSignature`,
        ``handshake=True``): ``valid`` while a line is active and a word is offered; ``be`` is zero unless
        ``valid``. A word the port refuses stays at ``words`` (not taken), so it is offered again.
    done : pulse in the cycle a line's last word is taken (written at that clock edge).

    Latency: a line taken in cycle ``t`` is held (one register: its word count and end lane computed
    on the way), becomes the active line in ``t + 1`` at the earliest, and its first word
    is taken from ``t + 2``. ``ub_wr`` is combinational from ``words`` (the UB writes at the next
    edge), so a word written in cycle ``t`` is readable by a read issued in ``t + 1``. Address and byte
    enables come from registers only (a running word address, first / last flags, the line's two lane
    masks, loaded from the held line).
    Throughput: one word per cycle; no bubble between lines (the next line is held while the current
    one is written, and takes its place at its last word), one-word lines included.
    """

    #: Cycles from a line taken (``lines.valid & lines.ready``) to the first cycle its first word can be.
    LINE_LATENCY = 2
    #: Lines the writer holds at most, taken and not yet written: the active one and the held one.
    LINES_HELD = 2

    def __init__(self, config):
        self._config = config
        W = config.ub_word_bytes
        self.LineLayout = data.StructLayout({"ub_addr": UB_ADDR_BITS, "length": LINE_BYTES_BITS})
        super().__init__({
            "lines": In(stream.Signature(self.LineLayout)),
            "words": In(stream.Signature(8 * W)),
            "ub_wr": Out(UbWriteSignature(config, handshake=True)),
            "done": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W = cfg.ub_word_bytes
        sh = W.bit_length() - 1
        active = Signal()
        addr = Signal(range(cfg.ub_words))   # UB word of the next word
        left = Signal(LINE_BYTES_BITS + 1)   # words of the line not yet written
        first = Signal()
        last = Signal()                      # left == 1, a register beside the counter
        take = Signal()
        m.d.comb += [
            self.words.ready.eq(active & self.ub_wr.ready),
            self.ub_wr.valid.eq(active & self.words.valid),
            take.eq(active & self.words.valid & self.ub_wr.ready),
            self.done.eq(take & last),
            self.ub_wr.addr.eq(addr),
            self.ub_wr.data.eq(self.words.payload),
        ]
        # The line's lane masks (lanes from ``lo``; lanes below ``end``, all for ``end`` 0) are registers
        # loaded with the line, so that the byte enables are one LUT level of registers: compares of
        # ``lo`` / ``end`` against every lane were 8 LUT levels from the writer's registers to the
        # unit's write register (default, 32 lanes).
        lo_mask, end_mask = Signal(W), Signal(W)
        # the byte enables of the word offered (not of the word taken: a refused word's must not change)
        with m.If(self.ub_wr.valid):
            m.d.comb += self.ub_wr.be.eq(Cat((~first | lo_mask[k]) & (~last | end_mask[k]) for k in range(W)))
        with m.If(take):
            m.d.sync += [addr.eq(addr + 1), left.eq(left - 1), first.eq(0), last.eq(left == 2)]
            with m.If(last):
                m.d.sync += active.eq(0)

        # The held line: the next line's fields, registered as it is taken (the add for its end lane and
        # word count on the way), so that the masks above are compares of registers: loading them straight
        # from ``lines`` (often a LUT RAM's head) put the add and the lane compares in one path.
        h_valid = Signal()
        h_addr = Signal(range(cfg.ub_words))
        h_off, h_end = Signal(sh), Signal(sh)
        h_left = Signal(LINE_BYTES_BITS + 1)
        promote = Signal()
        m.d.comb += [promote.eq(h_valid & (~active | self.done)),
                     self.lines.ready.eq(~h_valid | promote)]
        with m.If(promote):
            m.d.sync += [h_valid.eq(0), active.eq(1), first.eq(1), addr.eq(h_addr), left.eq(h_left),
                         last.eq(h_left == 1), lo_mask.eq(Cat(k >= h_off for k in range(W))),
                         end_mask.eq(Cat((h_end == 0) | (k < h_end) for k in range(W)))]
        with m.If(self.lines.valid & self.lines.ready):
            p = self.lines.payload
            off = p.ub_addr[:sh]
            m.d.sync += [h_valid.eq(1), h_addr.eq(p.ub_addr[sh:]), h_off.eq(off), h_end.eq(off + p.length),
                         h_left.eq((off + p.length + W - 1) >> sh)]
        return m
