"""TROWEXPAND*'s expanded operand: from UB words to one 32-byte broadcast pattern per destination row."""

from amaranth import *
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .instructions import EXPAND_BLOCK_BYTES

__all__ = ["PatternBuilder", "PATTERN_BYTES"]

#: A pattern covers this many bytes of a destination row and repeats every this many bytes.
PATTERN_BYTES = EXPAND_BLOCK_BYTES


class PatternBuilder(wiring.Component):
    """Turns the expanded operand's words into one pattern per destination row.

    A pattern ``P`` is 32 bytes such that byte ``x`` of a destination row's word stream (counted from lane 0
    of the row's first word, as :class:`rtl.ub_stream.UbReader` aligns the full operand) multiplies with
    ``P[x mod 32]``.

    * Mode 2 (``mode1`` = 0): each row's 32-byte block arrives as one line read with the row's
      destination offset ``d`` (block byte ``j`` in lane ``d + j`` of the line's word stream), so folding
      the line's words modulo 32 bytes gives ``P[x] = block[(x - d) mod 32]``, the block repeated along the
      row from its first element on. One pattern per line (``last``).
    * Mode 1: a line holds up to ``W / size`` consecutive scalars from lane 0 (one per row); the word is
      held and scalar ``e`` gives ``P`` = that scalar replicated, one pattern per cycle, for every scalar
      whose first byte is enabled.

    Parameters: ``config`` (uses ``ub_word_bytes``).
    Ports: ``words`` (stream in, the reader's ``{data, be, last}``), ``mode1``, ``esz`` (log2 element
    bytes; both stable for an instruction), ``patterns`` (stream out, ``8 * 32`` bits).
    Latency: a pattern is on ``patterns`` 2 cycles after its line's last word (mode 2) or after its word
    (mode 1), through a 4-entry FIFO. Throughput: one pattern per line (mode 2; one line per cycle when
    a block fits one word), one pattern per cycle (mode 1).
    """

    def __init__(self, config, word_layout):
        self._config = config
        super().__init__({
            "words": In(stream.Signature(word_layout)),
            "mode1": In(1),
            "esz": In(2),
            "patterns": Out(stream.Signature(8 * PATTERN_BYTES)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self._config.ub_word_bytes
        PB = PATTERN_BYTES
        m.submodules.out = out = fifo.SyncFIFO(width=8 * PB, depth=4)
        m.d.comb += [self.patterns.valid.eq(out.r_rdy), self.patterns.payload.eq(out.r_data),
                     out.r_en.eq(self.patterns.ready)]
        word = self.words.payload
        byte = lambda v, i: v[8 * i:8 * i + 8]

        # ---- mode 2: fold the line's words modulo 32 bytes -----------------------------------------------
        acc = Signal(8 * PB)
        odd = Signal()                       # W = 16: the line's odd words land in P[16:32]
        fold = []
        for x in range(PB):
            terms = []
            for lane in range(W):
                if W >= PB and lane % PB == x:
                    terms.append(byte(word.data, lane) & word.be[lane].replicate(8))
                elif W < PB and lane == x % W:
                    half = (x // W) % 2
                    terms.append(byte(word.data, lane) & (word.be[lane] & (odd == half)).replicate(8))
            v = terms[0]
            for t in terms[1:]:
                v = v | t
            fold.append(v)
        merged = Signal(8 * PB)
        m.d.comb += merged.eq(acc | Cat(fold))

        # ---- mode 1: hold a word of scalars, emit one replicated scalar per cycle ------------------------
        held = Signal(8 * W, reset_less=True)
        held_be = Signal(W, reset_less=True)
        have = Signal()
        e = Signal(range(W + 1))
        scalar_pat = Signal(8 * PB)
        with m.Switch(self.esz):
            for esz in range(3):
                size = 1 << esz
                with m.Case(esz):
                    m.d.comb += scalar_pat.eq(held.word_select(e[:(W >> esz).bit_length() - 1], 8 * size)
                                              .replicate(PB // size))
        nxt = Signal(range(W + 1))
        m.d.comb += nxt.eq(e + 1)
        more = Signal()                      # the held word has another scalar after e
        m.d.comb += more.eq((nxt < (W >> self.esz)) & (held_be.bit_select(nxt << self.esz, 1)))

        with m.If(self.mode1):
            m.d.comb += [out.w_data.eq(scalar_pat), out.w_en.eq(have)]
            emit_last = have & out.w_rdy & ~more
            m.d.comb += self.words.ready.eq(~have | emit_last)
            with m.If(have & out.w_rdy):
                m.d.sync += e.eq(nxt)
                with m.If(~more):
                    m.d.sync += have.eq(0)
            with m.If(self.words.valid & self.words.ready):
                m.d.sync += [held.eq(word.data), held_be.eq(word.be), have.eq(1), e.eq(0)]
        with m.Else():
            m.d.comb += [out.w_data.eq(merged), self.words.ready.eq(~word.last | out.w_rdy)]
            with m.If(self.words.valid & self.words.ready):
                m.d.comb += out.w_en.eq(word.last)
                m.d.sync += [acc.eq(Mux(word.last, 0, merged)), odd.eq(Mux(word.last, 0, ~odd))]
        return m
