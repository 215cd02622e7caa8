"""The elementwise engine's segment walker: where every destination segment and its operands are in the UB."""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .walker import LINE_BYTES_BITS

__all__ = ["SegmentParams", "Segment", "SegmentWalker"]


def SegmentParams(config):
    """What the walker needs, computed once per instruction by the engine (all byte quantities).

    The destination is walked in its storage order: ``lines`` lines of ``pos_n`` elements (rows of a
    row-major tile, columns of a column-major one). A *segment* is one whole line (line path) or one
    element (``elem_path``: a source stored in the other order, so its elements are strided). Operand
    ``x`` in ``d`` (destination), ``a`` (the full source) and ``b`` (TPART*: the partial source) starts at
    ``x_base``; its next line is ``x_step_li`` bytes on, its next element ``x_step_pos`` bytes on.
    ``e`` is TROWEXPAND*'s expanded operand: one 32-byte block line per row (mode 2, ``e_step`` = its row
    pitch) or, mode 1, one line of up to ``W / size`` scalars per ``W / size`` rows (``e_step = W``).
    ``p_lines`` / ``p_pos``: the partial source's valid extent in the destination's order.
    """
    return data.StructLayout({
        "lines": 16, "pos_n": 16, "esz": 2, "elem_path": 1, "trow": 1, "mode1": 1,
        "line_bytes": LINE_BYTES_BITS,
        "d_base": 24, "a_base": 24, "b_base": 24, "e_base": 24,
        "d_step_li": 24, "a_step_li": 24, "b_step_li": 24, "e_step": 24,
        "d_step_pos": 24, "a_step_pos": 24, "b_step_pos": 24,
        "p_lines": 16, "p_pos": 16,
    })


def Segment(config):
    """One destination segment with its operand lines and what the combiner needs to know about it.

    ``t0``: partial-source validity of the segment's bytes: byte ``b`` of the segment's word ``k``
    (destination-aligned, ``k = 0`` holds the segment's first byte) lies in the partial source's valid
    region iff ``line_ok`` and ``b < t0 - k W``. ``e_*``: a line of the expanded operand to read with this
    segment (``e_valid``; TROWEXPAND* only).
    """
    W = config.ub_word_bytes
    return data.StructLayout({
        "d_addr": 24, "a_addr": 24, "b_addr": 24, "length": LINE_BYTES_BITS, "dst_off": range(W),
        "t0": signed(LINE_BYTES_BITS + 2), "line_ok": 1,
        "e_valid": 1, "e_addr": 24, "e_length": 7, "e_off": range(W),
    })


class SegmentWalker(wiring.Component):
    """Emits the segments of one instruction, one per cycle.

    Ports: ``params`` (:func:`SegmentParams`, stable from ``start`` until the last segment is taken),
    ``start`` (pulse; ``params.lines`` and ``params.pos_n`` non-zero), ``segs`` (stream out,
    :func:`Segment`), ``busy``.
    Latency: the first segment is valid the cycle after ``start``. Only running pointers and counters:
    no multiply, and every output comes from a register or one add of two registers (``t0``).
    """

    def __init__(self, config):
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

        lines_left = Signal(16)        # lines not finished (the current one included)
        pos_left = Signal(16)          # segments left in the current line (the current one included)
        pl_left = Signal(16)           # lines of the partial source's valid region left
        pp = Signal(signed(18))        # partial source's valid elements from the current position on
        d_line, a_line, b_line = Signal(24), Signal(24), Signal(24)   # starts of the current line
        d_ptr, a_ptr, b_ptr = Signal(24), Signal(24), Signal(24)      # the current segment
        e_ptr = Signal(24)
        g_left = Signal(7)             # mode 1: rows until the next scalar line (0: this row)
        lanes = Signal(7)              # W / size
        m.d.comb += lanes.eq(W >> p.esz)

        seg = self.segs.payload
        size = Signal(3)
        m.d.comb += size.eq(1 << p.esz)
        e_rows = Signal(16)            # mode 1: rows covered by this scalar line
        m.d.comb += e_rows.eq(Mux(lines_left < lanes, lines_left, lanes))
        m.d.comb += [
            self.segs.valid.eq(self.busy),
            seg.d_addr.eq(d_ptr), seg.a_addr.eq(a_ptr), seg.b_addr.eq(b_ptr),
            seg.length.eq(Mux(p.elem_path, size, p.line_bytes)),
            seg.dst_off.eq(d_ptr[:sh]),
            seg.t0.eq((pp << p.esz) + d_ptr[:sh]),
            seg.line_ok.eq(pl_left != 0),
            seg.e_valid.eq(p.trow & (~p.mode1 | (g_left == 0))),
            seg.e_addr.eq(e_ptr),
            seg.e_length.eq(Mux(p.mode1, e_rows[:7] << p.esz, 32)),
            seg.e_off.eq(Mux(p.mode1, 0, d_ptr[:sh])),
        ]

        end_of_line = Signal()
        m.d.comb += end_of_line.eq(pos_left == 1)
        with m.If(self.busy & self.segs.ready):
            with m.If(end_of_line):
                d_next, a_next, b_next = d_line + p.d_step_li, a_line + p.a_step_li, b_line + p.b_step_li
                m.d.sync += [
                    d_line.eq(d_next), a_line.eq(a_next), b_line.eq(b_next),
                    d_ptr.eq(d_next), a_ptr.eq(a_next), b_ptr.eq(b_next),
                    lines_left.eq(lines_left - 1),
                    pos_left.eq(Mux(p.elem_path, p.pos_n, 1)),
                    pp.eq(p.p_pos),
                    pl_left.eq(Mux(pl_left != 0, pl_left - 1, 0)),
                    g_left.eq(Mux(g_left == 0, lanes - 1, g_left - 1)),
                ]
                with m.If(lines_left == 1):
                    m.d.sync += self.busy.eq(0)
            with m.Else():
                m.d.sync += [
                    d_ptr.eq(d_ptr + p.d_step_pos), a_ptr.eq(a_ptr + p.a_step_pos), b_ptr.eq(b_ptr + p.b_step_pos),
                    pos_left.eq(pos_left - 1), pp.eq(pp - 1),
                ]
            with m.If(seg.e_valid):
                m.d.sync += e_ptr.eq(e_ptr + p.e_step)
        with m.Elif(~self.busy & self.start):
            m.d.sync += [
                self.busy.eq(1),
                d_line.eq(p.d_base), a_line.eq(p.a_base), b_line.eq(p.b_base),
                d_ptr.eq(p.d_base), a_ptr.eq(p.a_base), b_ptr.eq(p.b_base), e_ptr.eq(p.e_base),
                lines_left.eq(p.lines), pos_left.eq(Mux(p.elem_path, p.pos_n, 1)),
                pp.eq(p.p_pos), pl_left.eq(p.p_lines), g_left.eq(0),
            ]
        return m
