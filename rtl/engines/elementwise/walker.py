"""The elementwise engine's segment walker: where every destination segment and its operands are in the UB.
(Its segments wait in :class:`rtl.lib.flag_fifo.FlagFifo` queues, re-exported here.)"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.isa import EXPAND_BLOCK_BYTES
from rtl.lib.contract import require
from rtl.lib.flag_fifo import FlagFifo
from rtl.lib.tile import DIM_BITS, ESZ_BITS, LINE_BYTES_BITS, SIZE_BITS, UB_ADDR_BITS

__all__ = ["SegmentParams", "START_FIELDS", "Segment", "SegmentWalker", "FlagFifo", "QUEUE_CYCLES", "ADDR_BITS",
           "SHAPE_BITS", "ESZ_BITS", "SIZE_BITS", "MAX_WORD_BYTES", "EXPANDED_LINE_BITS"]

#: Cycles from an entry written into a :class:`FlagFifo` to the cycle it can be read (``FlagFifo.LATENCY``).
QUEUE_CYCLES = FlagFifo.LATENCY
#: Width of a UB byte address: a tile's ``base`` (the walker's pointers and steps wrap in it).
ADDR_BITS = UB_ADDR_BITS
#: Width of a count of lines or of elements in a line: a tile's ``rows`` / ``cols`` field.
SHAPE_BITS = DIM_BITS
#: The widest UB word the engine handles: its mode-1 counts (``W / size`` scalars, a scalar line of up
#: to ``W`` bytes) have :data:`EXPANDED_LINE_BITS` bits.
MAX_WORD_BYTES = 64
#: Width of an expanded operand's line length (a block of ``EXPAND_BLOCK_BYTES`` or a scalar line of up
#: to ``W`` bytes) and of the walker's mode-1 counts (``W / size``, rows to the next scalar line).
EXPANDED_LINE_BITS = max(MAX_WORD_BYTES, EXPAND_BLOCK_BYTES).bit_length()


def SegmentParams(config):
    """What the walker needs, computed once per instruction by the engine (all byte quantities).

    The destination is walked in its storage order: ``lines`` lines of ``pos_n`` elements (rows of a
    row-major tile, columns of a column-major one). A *segment* is one whole line (line path) or one
    element (``elem_path``: a source stored in the other order, so its elements are strided);
    ``seg_length`` is its length in bytes (``pos_n << esz`` or the element size ``size``). Operand ``x``
    in ``d`` (destination), ``a`` (the full source) and ``b`` (TPART*: the partial source) starts at
    ``x_base``; its next line is ``x_step_li`` bytes on, its next element ``x_step_pos`` bytes on.
    ``e`` is TROWEXPAND*'s expanded operand: one 32-byte block line per row (mode 2, ``e_step`` = its row
    pitch) or, mode 1, one line of up to ``W / size`` scalars per ``W / size`` rows (``e_step = W``).
    ``p_lines`` / ``p_pos``: the partial source's valid extent in the destination's order (``p_pos_bytes``
    = ``p_pos << esz``, ``p_any`` = ``p_pos != 0``).

    Two groups: the fields the walker takes at ``start`` (``lines``, ``pos_n``, ``esz``, ``elem_path``,
    the bases, ``p_lines``, ``p_pos``) must be valid in the ``start`` cycle; the others (the steps and
    everything a segment carries) only from the cycle after, so the engine registers them a cycle later
    (:attr:`START_FIELDS`).
    """
    A, N = ADDR_BITS, SHAPE_BITS
    return data.StructLayout({
        "lines": N, "pos_n": N, "esz": ESZ_BITS, "elem_path": 1,
        "d_base": A, "a_base": A, "b_base": A, "e_base": A,
        "p_lines": N, "p_pos": N,
        "trow": 1, "mode1": 1, "size": SIZE_BITS, "seg_length": LINE_BYTES_BITS,
        "d_step_li": A, "a_step_li": A, "b_step_li": A, "e_step": A,
        "d_step_pos": A, "a_step_pos": A, "b_step_pos": A,
        "p_pos_bytes": LINE_BYTES_BITS, "p_any": 1,
    })


#: The :func:`SegmentParams` fields :class:`SegmentWalker` reads in its ``start`` cycle.
START_FIELDS = ("lines", "pos_n", "esz", "elem_path", "d_base", "a_base", "b_base", "e_base", "p_lines", "p_pos")


def Segment(config):
    """One destination segment with its operand lines and what the combiner needs to know about it.

    ``pp_bytes`` / ``p_ok``: partial-source validity of the segment's bytes. Byte ``b`` of the segment's
    word ``k`` (destination-aligned, ``k = 0`` holds the segment's first byte, at lane ``dst_off``) lies
    in the partial source's valid region iff ``p_ok`` and ``b + k W < dst_off + pp_bytes``
    (``pp_bytes > 0`` whenever ``p_ok``). ``e_*``: a line of the expanded operand to read with this
    segment (``e_valid``; TROWEXPAND* only). ``fin``: the instruction's last segment.
    """
    W, A = config.ub_word_bytes, ADDR_BITS
    return data.StructLayout({
        "d_addr": A, "a_addr": A, "b_addr": A, "length": LINE_BYTES_BITS, "dst_off": range(W),
        "pp_bytes": LINE_BYTES_BITS, "p_ok": 1,
        "e_valid": 1, "e_addr": A, "e_length": EXPANDED_LINE_BITS, "e_off": range(W),
        "fin": 1,
    })


class SegmentWalker(wiring.Component):
    """Emits the segments of one instruction, one per cycle.

    Ports: ``params`` (:func:`SegmentParams`, from registers: the :data:`START_FIELDS` valid in the
    ``start`` cycle, the rest from the cycle after, all stable until the last segment is taken),
    ``start`` (pulse; ``params.lines`` and ``params.pos_n`` non-zero), ``segs`` (stream out,
    :func:`Segment`), ``busy``.
    Latency: :attr:`LATENCY`, the first segment is valid the cycle after ``start``. Throughput: one
    segment per cycle while ``segs.ready``. Only running pointers, counters and
    flags: no multiply. The outputs are registers or shallow logic of registers (the mode-1 scalar
    line's length: a test of the high bits of a counter and a select); ``segs.ready`` enables the step
    (adders of a register and a parameter; the end-of-line, last-line, partial-extent and mode-1
    conditions are flags registered with the counters they test).
    """

    #: Cycles from ``start`` to the first segment on ``segs`` (the pointers load at ``start``).
    LATENCY = 1

    def __init__(self, config):
        W = config.ub_word_bytes
        require(W <= MAX_WORD_BYTES, f"the walker's mode-1 counts (W / size, a scalar line's bytes) have "
                f"EXPANDED_LINE_BITS = {EXPANDED_LINE_BITS} bits: ub_word_bytes = {W} must be <= {MAX_WORD_BYTES}")
        self._config = config
        super().__init__({
            "params": In(SegmentParams(config)),
            "start": In(1),
            "busy": Out(1),
            "segs": Out(stream.Signature(Segment(config))),
        })

    def elaborate(self, platform):
        m = Module()
        W = self._config.ub_word_bytes
        sh = W.bit_length() - 1
        p = self.params

        lines_left = Signal(SHAPE_BITS)  # lines not finished (the current one included)
        last_line = Signal()           # lines_left == 1
        llb = Signal(LINE_BYTES_BITS)  # lines_left << esz (mode 1: the scalars' bytes left)
        llb_hi = Signal()              # llb >= W
        pos_left = Signal(SHAPE_BITS)  # segments left in the current line (the current one included)
        eol = Signal()                 # pos_left == 1: the segment ends its line
        pl_left = Signal(SHAPE_BITS)   # lines of the partial source's valid region left
        pl_ok = Signal()               # pl_left != 0
        ppb = Signal(signed(LINE_BYTES_BITS + 1))   # partial source's valid bytes from the current position on
        pp_pos = Signal()              # ppb > 0
        A = ADDR_BITS
        d_line, a_line, b_line = Signal(A), Signal(A), Signal(A)   # starts of the current line
        d_ptr, a_ptr, b_ptr = Signal(A), Signal(A), Signal(A)      # the current segment
        e_ptr = Signal(A)
        g_left = Signal(EXPANDED_LINE_BITS)  # mode 1: rows until the next scalar line (0: this row)
        g_zero = Signal()              # g_left == 0
        lanes = Signal(EXPANDED_LINE_BITS)   # W / size
        m.d.comb += lanes.eq(W >> p.esz)
        e_len = Signal(EXPANDED_LINE_BITS)   # mode 1: bytes of the scalar line read at this row, min(llb, W)
        m.d.comb += e_len.eq(Mux(llb_hi, W, llb[:sh]))

        seg = self.segs.payload
        m.d.comb += [
            self.segs.valid.eq(self.busy),
            seg.d_addr.eq(d_ptr), seg.a_addr.eq(a_ptr), seg.b_addr.eq(b_ptr),
            seg.length.eq(p.seg_length),
            seg.dst_off.eq(d_ptr[:sh]),
            seg.pp_bytes.eq(ppb[:LINE_BYTES_BITS]), seg.p_ok.eq(pl_ok & pp_pos),
            seg.e_valid.eq(p.trow & (~p.mode1 | g_zero)),
            seg.e_addr.eq(e_ptr),
            seg.e_length.eq(Mux(p.mode1, e_len, EXPAND_BLOCK_BYTES)),
            seg.e_off.eq(Mux(p.mode1, 0, d_ptr[:sh])),
            seg.fin.eq(last_line & eol),
        ]

        with m.If(self.busy & self.segs.ready):
            with m.If(eol):
                d_next, a_next, b_next = d_line + p.d_step_li, a_line + p.a_step_li, b_line + p.b_step_li
                m.d.sync += [
                    d_line.eq(d_next), a_line.eq(a_next), b_line.eq(b_next),
                    d_ptr.eq(d_next), a_ptr.eq(a_next), b_ptr.eq(b_next),
                    lines_left.eq(lines_left - 1), last_line.eq(lines_left == 2), llb.eq(llb - p.size),
                    llb_hi.eq(llb >= W + p.size),
                    pos_left.eq(Mux(p.elem_path, p.pos_n, 1)), eol.eq(~p.elem_path | (p.pos_n == 1)),
                    ppb.eq(p.p_pos_bytes), pp_pos.eq(p.p_any),
                    pl_left.eq(pl_left - pl_ok), pl_ok.eq(pl_left[1:] != 0),
                    g_left.eq(Mux(g_zero, lanes - 1, g_left - 1)), g_zero.eq(~g_zero & (g_left == 1)),
                ]
                with m.If(last_line):
                    m.d.sync += self.busy.eq(0)
            with m.Else():
                m.d.sync += [
                    d_ptr.eq(d_ptr + p.d_step_pos), a_ptr.eq(a_ptr + p.a_step_pos), b_ptr.eq(b_ptr + p.b_step_pos),
                    pos_left.eq(pos_left - 1), eol.eq(pos_left == 2),
                    ppb.eq(ppb - p.size), pp_pos.eq(ppb > p.size),
                ]
            with m.If(seg.e_valid):
                m.d.sync += e_ptr.eq(e_ptr + p.e_step)
        with m.Elif(~self.busy & self.start):
            m.d.sync += [
                self.busy.eq(1),
                d_line.eq(p.d_base), a_line.eq(p.a_base), b_line.eq(p.b_base),
                d_ptr.eq(p.d_base), a_ptr.eq(p.a_base), b_ptr.eq(p.b_base), e_ptr.eq(p.e_base),
                lines_left.eq(p.lines), last_line.eq(p.lines == 1), llb.eq(p.lines << p.esz),
                llb_hi.eq(p.lines >= lanes),
                pos_left.eq(Mux(p.elem_path, p.pos_n, 1)), eol.eq(~p.elem_path | (p.pos_n == 1)),
                ppb.eq(p.p_pos << p.esz), pp_pos.eq(p.p_pos != 0),
                pl_left.eq(p.p_lines), pl_ok.eq(p.p_lines != 0),
                g_left.eq(0), g_zero.eq(1),
            ]
        return m
