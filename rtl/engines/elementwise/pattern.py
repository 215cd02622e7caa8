"""TROWEXPAND*'s expanded operand: from UB words to one 32-byte broadcast pattern per destination row."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.engines.elementwise.walker import ESZ_BITS, QUEUE_CYCLES, FlagFifo
from rtl.isa import EXPAND_BLOCK_BYTES
from rtl.lib.contract import require
from rtl.lib.fanout import select_copies

__all__ = ["PatternBuilder", "PATTERN_BYTES"]

#: A pattern covers this many bytes of a destination row and repeats every this many bytes.
PATTERN_BYTES = EXPAND_BLOCK_BYTES


class PatternBuilder(wiring.Component):
    """Turns the expanded operand's words into one pattern per destination row.

    A pattern ``P`` is 32 bytes such that byte ``x`` of a destination row's word stream (counted from lane 0
    of the row's first word, as :class:`rtl.ub.reader.UbReader` aligns the full operand) multiplies with
    ``P[x mod 32]``.

    * Mode 2 (``mode1`` = 0): each row's 32-byte block arrives as one line read with the row's
      destination offset ``d`` (block byte ``j`` in lane ``d + j`` of the line's word stream), so folding
      the line's words modulo 32 bytes gives ``P[x] = block[(x - d) mod 32]``, the block repeated along the
      row from its first element on. One pattern per line (``last``).
    * Mode 1: a line holds up to ``W / size`` consecutive scalars from lane 0 (one per row, ``be`` a
      prefix of the word); the word is held and shifted down by one scalar per pattern, each pattern the
      lowest scalar replicated, one pattern per cycle, for every scalar whose first byte is enabled (a
      registered flag says whether another one follows).

    Parameters
    ----------
    config : :class:`rtl.config.Config`
        Uses ``ub_word_bytes`` (``W``: at least 32, or 16 = half a pattern, :meth:`elaborate`).
    word_layout : the reader's word layout (``UbReader.WordLayout``).

    Attributes
    ----------
    words : stream in, the reader's ``{data, be, last}``.
    mode1, esz : in, mode 1 and the log2 element bytes; registers, stable for an instruction from at
        least a cycle before its first word.
    patterns : stream out, ``8 * PATTERN_BYTES`` bits.
    busy : out, a mode-1 word's scalars are not all emitted yet (a register): the builder's mode and size
        must not change before it is low (the overlapping engine moves it to the next instruction then).

    Structure: a :attr:`QUEUE_DEPTH`-entry queue (:class:`rtl.lib.flag_fifo.FlagFifo`) written from
    registers: mode 2 the pattern folded in a register (the line's words OR-ed in), a cycle after the
    line's last word; mode 1 the held word's lowest scalar replicated (a select by the element size),
    enable one LUT level of registers. ``patterns.valid`` is a flip-flop and ``patterns.payload`` one
    LUT-RAM read from a register; ``words.ready`` is one or two LUT levels of registers.

    Latency: :attr:`LATENCY` (``LATENCY`` = 2): a pattern is on ``patterns`` that many cycles after
    its line's last word is taken (mode 2), or after its word is taken for a line's first scalar (mode
    1; then one per cycle).

    Throughput: one pattern per line (mode 2; one line per cycle when a block fits one word), one
    pattern per cycle (mode 1, also across words: the next word is taken with the last scalar's
    pattern).
    """

    #: The register between a word taken and its pattern written into the queue: the folded pattern
    #: ``acc`` (mode 2: written with ``done``, a cycle after the line's last word) or the held word
    #: (mode 1: its lowest scalar written a cycle after the word is taken).
    BUILD_CYCLES = 1
    #: Cycles from a line's last word taken (mode 1: a word taken) to its first pattern on ``patterns``.
    LATENCY = BUILD_CYCLES + QUEUE_CYCLES
    #: Patterns the queue holds (built ahead of the rows that use them).
    QUEUE_DEPTH = 4
    #: Free entries the queue keeps when it says it has room (``w_rdy``): the one being written plus one
    #: per cycle of :attr:`BUILD_CYCLES` between the decision to take a line's last word and its write.
    QUEUE_SLACK = 1 + BUILD_CYCLES
    #: Copies of ``esz`` for the mode-1 pattern's size select, a quarter of the pattern each.
    ESZ_COPIES = 4

    def __init__(self, config, word_layout):
        self._config = config
        super().__init__({
            "words": In(stream.Signature(word_layout)),
            "mode1": In(1),
            "esz": In(ESZ_BITS),
            "patterns": Out(stream.Signature(8 * PATTERN_BYTES)),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        """The queue, mode 2's fold of a line's words and mode 1's held word of scalars."""
        m = Module()
        W = self._config.ub_word_bytes
        PB = PATTERN_BYTES
        # The queue is written from registers: mode 2 the folded pattern ``acc`` when ``done`` (finished
        # the cycle before; the queue's w_rdy keeps room for that write: QUEUE_SLACK), mode 1 the held
        # word's lowest scalar replicated (a select by the element size).
        m.submodules.out = out = FlagFifo(8 * PB, self.QUEUE_DEPTH, slack=self.QUEUE_SLACK)
        m1 = Signal()                        # a copy of ``mode1`` for the 8 * 32 data selects
        m.d.sync += m1.eq(self.mode1)
        acc = Signal(8 * PB)                 # reset: an aborted command may leave a line half folded
        done = Signal()
        scalar_pat = Signal(8 * PB)
        m.d.comb += [self.patterns.valid.eq(out.r_rdy), self.patterns.payload.eq(out.r_data),
                     out.r_en.eq(self.patterns.ready & out.r_rdy),
                     out.w_data.eq(Mux(m1, scalar_pat, acc))]
        word = self.words.payload
        byte = lambda v, i: v[8 * i:8 * i + 8]

        def by_size(f):                      # f(size) for the instruction's element size
            return Mux(self.esz == 0, f(1), Mux(self.esz == 1, f(2), f(4)))

        # ---- mode 2: fold the line's words modulo 32 bytes -----------------------------------------------
        require(W >= PB or 2 * W == PB, f"the fold takes a pattern from whole words or from two half-pattern "
                f"words (``odd``): ub_word_bytes = {W} must be >= PATTERN_BYTES = {PB} or half of it")
        odd = Signal()                       # W = 16: the line's odd words land in P[16:32]
        # A word is OR-ed in whenever it is offered, taken or not: OR-ing it again while it waits changes
        # nothing (``odd`` moves only when it is taken), so the 8 * 32 bits need no enable from the
        # handshake, only per-lane gates (valid, be, the half).
        offered = Signal()
        m.d.comb += offered.eq(self.words.valid & ~self.mode1)
        fold = []
        for x in range(PB):
            terms = []
            for lane in range(W):
                if W >= PB and lane % PB == x:
                    terms.append(byte(word.data, lane) & (offered & word.be[lane]).replicate(8))
                elif W < PB and lane == x % W:
                    half = (x // W) % 2
                    terms.append(byte(word.data, lane) & (offered & word.be[lane] & (odd == half)).replicate(8))
            v = terms[0]
            for t in terms[1:]:
                v = v | t
            fold.append(v)
        take2 = Signal()
        m.d.comb += take2.eq(offered & (~word.last | out.w_rdy))
        m.d.sync += acc.eq(Mux(done, 0, acc) | Cat(fold))
        with m.If(take2):
            m.d.sync += odd.eq(Mux(word.last, 0, ~odd))

        # ---- mode 1: hold a word of scalars, emit one replicated scalar per cycle ------------------------
        held = Signal(8 * W, reset_less=True)     # the scalars not yet emitted, the next one in the lowest lanes
        held_be = Signal(W, reset_less=True)
        have = Signal()
        more = Signal()                           # held has another scalar after the lowest one
        emit, take1 = Signal(), Signal()
        m.d.comb += [emit.eq(have & out.w_rdy),
                     take1.eq(self.words.valid & self.mode1 & (~have | (out.w_rdy & ~more)))]
        # the replicated scalar by the element size, from four copies of ``esz`` (``select_copies``: ``esz``
        # a cycle late), each selecting a quarter of the pattern (``esz`` reached all 256 select bits;
        # they are used from a scalar's emit on, a cycle after its word)
        esz_c = select_copies(m, self.esz, self.ESZ_COPIES, "esz_c")
        full = [held[:8 << e].replicate(PB >> e) for e in range(3)]
        qb = 8 * PB // self.ESZ_COPIES       # bits per quarter
        for k, c in enumerate(esz_c):
            part = [f[k * qb:(k + 1) * qb] for f in full]
            m.d.comb += scalar_pat[k * qb:(k + 1) * qb].eq(
                Mux(c[1], Mux(c[0], 0, part[2]), Mux(c[0], part[1], part[0])))
        with m.If(take1):
            m.d.sync += [held.eq(word.data), held_be.eq(word.be), have.eq(1),
                         more.eq(by_size(lambda n: word.be[n]))]
        with m.Elif(emit):
            m.d.sync += [held.eq(by_size(lambda n: held >> 8 * n)), held_be.eq(by_size(lambda n: held_be >> n)),
                         more.eq(by_size(lambda n: held_be[2 * n])), have.eq(more)]

        m.d.comb += self.busy.eq(have)
        m.d.comb += self.words.ready.eq(Mux(self.mode1, ~have | (out.w_rdy & ~more), ~word.last | out.w_rdy))
        m.d.sync += done.eq(take2 & word.last)
        m.d.comb += out.w_en.eq(Mux(m1, emit, done))
        return m
