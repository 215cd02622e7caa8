"""The elementwise engine's setup: three register stages over the held command (the ``start`` cycle's
decodes, DECODE, PARAMS) that give the segment walker its parameters, and the engine's state machine.
Nothing downstream of it sees the command itself."""

from types import SimpleNamespace

from amaranth import *

from rtl.engines.elementwise.lanes import LaneOp
from rtl.engines.elementwise.pattern import PATTERN_BYTES
from rtl.engines.elementwise.walker import ESZ_BITS, SHAPE_BITS, SIZE_BITS, SegmentParams
from rtl.isa import INSTRUCTIONS, Layout, Opcode
from rtl.lib.tile import elem_log2

__all__ = ["EW_OPCODES", "lane_op", "is_rowexpand", "same_valid", "decode", "setup"]

#: Every opcode of the elementwise family (rtl/isa/instructions.py), in opcode order.
EW_OPCODES = tuple(op for op, ins in INSTRUCTIONS.items() if ins.family == "elementwise")


def lane_op(opcode):
    """The lane operation of an elementwise opcode (``TROWEXPANDSUB`` -> ``LaneOp.SUB``)."""
    name = Opcode(opcode).name
    return LaneOp[name.removeprefix("TROWEXPAND").removeprefix("TPART")]


def is_rowexpand(opcode):
    """The opcode is a TROWEXPAND* (else a TPART*)."""
    return Opcode(opcode).name.startswith("TROWEXPAND")


def same_valid(a, b):
    """Tiles ``a`` and ``b`` (views of ``TileDesc``) have the same valid shape."""
    return (a.valid_rows == b.valid_rows) & (a.valid_cols == b.valid_cols)


def decode(m, cmd, start):
    """Stage 1 of the setup, the registers loaded in the ``start`` cycle from the held command ``cmd``:
    its decodes (the element size, TROWEXPAND*, which source is full, the layouts, the lanes' op and
    type). Returns them and ``empty`` (the destination region is empty: a compare of the held
    command)."""
    dst, s0, s1 = cmd.dst, cmd.src0, cmd.src1
    # 1 (the ``start`` cycle): decodes of the command. 2 (DECODE): what the walker takes when it starts
    # (bases, counts) and the selections of the full / other operand's fields. 3 (PARAMS, the walker's
    # start cycle): the steps, shifted to bytes, used from the cycle after. Each stage is a few LUT
    # levels of registers and the command's fields; nothing downstream sees the command itself.
    cm = lambda t: t.layout == Layout.COL_MAJOR
    esz_c = elem_log2(m, dst.dtype)
    trow_c = Cat(cmd.opcode == op for op in EW_OPCODES if is_rowexpand(op)).any()
    empty = (dst.valid_rows == 0) | (dst.valid_cols == 0)

    esz, trow, fi, s0_cm, s1_cm, dst_cm = Signal(ESZ_BITS), Signal(), Signal(), Signal(), Signal(), Signal()
    op = Signal(LaneOp)
    dtype = Signal.like(dst.dtype)
    with m.If(start):
        m.d.sync += [esz.eq(esz_c), trow.eq(trow_c), fi.eq(~same_valid(s0, dst)), s0_cm.eq(cm(s0)),
                     s1_cm.eq(cm(s1)), dst_cm.eq(cm(dst)), dtype.eq(dst.dtype)]
        with m.Switch(cmd.opcode):
            for opcode in EW_OPCODES:
                with m.Case(opcode):
                    m.d.sync += op.eq(lane_op(opcode))
    return SimpleNamespace(esz=esz, trow=trow, fi=fi, s0_cm=s0_cm, s1_cm=s1_cm, dst_cm=dst_cm, op=op,
                           dtype=dtype, empty=empty)

def setup(m, cfg, cmd, start, d, walker, rd_b, run_end, *, overlap=False, qb_room=None):
    """Stages 2 (DECODE) and 3 (PARAMS) of the setup and the engine's state machine (IDLE, DECODE,
    PARAMS, RUN until ``run_end``: the last word written, or with ``overlap`` the walker's last segment
    pushed, when a command started during RUN goes through DECODE at once; PARAMS then also waits for
    ``qb_room``, reader B's line queue having room for the expanded operand's first line): the walker's :func:`rtl.engines.elementwise.walker.SegmentParams`
    registers (the walker starts in PARAMS, ``ElementwiseEngine.SETUP_CYCLES`` = 2 after ``start``), the
    full / other operand's selections, the expanded operand's first line (``pre_line``, queued in PARAMS)
    and the RUN-cycle copies of the mode flags for the combiner and the pattern builder. ``cfg``: the
    configuration; ``cmd``, ``start``: the engine's ports; ``d``: :func:`decode`'s registers."""
    W = cfg.ub_word_bytes
    sh = W.bit_length() - 1
    dst, s0, s1 = cmd.dst, cmd.src0, cmd.src1
    esz, trow, fi, s0_cm, s1_cm, dst_cm = d.esz, d.trow, d.fi, d.s0_cm, d.s1_cm, d.dst_cm

    params = Signal(SegmentParams(cfg), name="params")
    m.d.comb += walker.params.eq(params)
    # stage 2: ``fi``: the full operand is src1 (the other one is src0)
    pick_full = lambda x1, x0: Mux(fi, x1, x0)
    pick_other = lambda x1, x0: Mux(fi, x0, x1)
    other_cm = Signal(name="other_cm")
    # (the names the tracer gave before the DECODE writes became a nested function, which hides the
    # variables from it: the first of a tuple was never named; kept so that the serial netlist is the same)
    a_same, b_same = Signal(), Signal(name="b_same")
    p_is_a, p_is_b = Signal(), Signal(name="p_is_b")           # TROWEXPAND*: the pattern is the lanes' ``a`` / ``b``
    # elements between lines, own order (a tile's rows or cols)
    lead_d, lead_a, lead_b = Signal(SHAPE_BITS), Signal(SHAPE_BITS), Signal(SHAPE_BITS, name="lead_b")
    c_trow, c_p_is_a, pat_esz, pat_mode1 = Signal(), Signal(), Signal(ESZ_BITS), Signal()
    o_vr, o_vc = pick_other(s1.valid_rows, s0.valid_rows), pick_other(s1.valid_cols, s0.valid_cols)
    # TROWEXPAND*: the expanded operand's first line goes into reader B's queue in PARAMS, a cycle
    # before the walker's first segment (``pre_en``), so the first row's pattern is ready a cycle
    # sooner; the walker's own copy of that line is not pushed (``e_skip``: no segment pushed yet).
    # The line is registered in DECODE from the held command: what the walker's first segment has
    # as ``e_addr`` / ``e_length`` / ``e_off``.
    pre_line = Signal(rd_b.LineLayout, reset_less=True, name="pre_line")
    pre_en, e_skip = Signal(), Signal(name="e_skip")
    m.d.sync += pre_en.eq(0)
    lines_c = Mux(dst_cm, dst.valid_cols, dst.valid_rows)
    # mode 1: one line of min(lines, W / size) scalars (the walker computes the same for its first
    # line: a known duplicate, kept for the netlist)
    many = Mux(esz == 0, lines_c[sh:].any(), Mux(esz == 1, lines_c[sh - 1:].any(), lines_c[sh - 2:].any()))
    scal_len = Mux(many, W, (lines_c << esz)[:sh])
    def decode_writes():
        # stage 2, DECODE: what the walker takes at its start, the selections, the expanded operand's first line
        m.d.sync += [
            params.lines.eq(Mux(dst_cm, dst.valid_cols, dst.valid_rows)),
            params.pos_n.eq(Mux(dst_cm, dst.valid_rows, dst.valid_cols)),
            params.esz.eq(esz),
            params.elem_path.eq(~trow & ~((s0_cm == dst_cm) & (s1_cm == dst_cm))),
            params.d_base.eq(dst.base), params.a_base.eq(pick_full(s1.base, s0.base)),
            params.b_base.eq(pick_other(s1.base, s0.base)), params.e_base.eq(pick_other(s1.base, s0.base)),
            params.p_lines.eq(Mux(dst_cm, o_vc, o_vr)), params.p_pos.eq(Mux(dst_cm, o_vr, o_vc)),
            other_cm.eq(pick_other(s1_cm, s0_cm)),
            a_same.eq(pick_full(s1_cm, s0_cm) == dst_cm), b_same.eq(pick_other(s1_cm, s0_cm) == dst_cm),
            p_is_a.eq(trow & fi), p_is_b.eq(trow & ~fi),
            lead_d.eq(Mux(dst_cm, dst.rows, dst.cols)),
            lead_a.eq(pick_full(Mux(s1_cm, s1.rows, s1.cols), Mux(s0_cm, s0.rows, s0.cols))),
            lead_b.eq(pick_other(Mux(s1_cm, s1.rows, s1.cols), Mux(s0_cm, s0.rows, s0.cols))),
            pre_line.ub_addr.eq(pick_other(s1.base, s0.base)),
            pre_line.length.eq(Mux(pick_other(s1_cm, s0_cm), scal_len, PATTERN_BYTES)),
            pre_line.dst_off.eq(Mux(pick_other(s1_cm, s0_cm), 0, dst.base[:sh])),
            pre_en.eq(trow), e_skip.eq(trow),
        ]

    # (overlap) a command started while the walker ran, DECODE with its last segment (``decoding``: now)
    pending, decoding = (Signal(name="pending"), Signal(name="decoding")) if overlap else (None, None)
    with m.FSM() as fsm:
        with m.State("IDLE"):
            with m.If(start & ~d.empty):
                m.next = "DECODE"
        with m.State("DECODE"):
            decode_writes()
            m.next = "PARAMS"
        with m.State("PARAMS"):
            size = C(1, SIZE_BITS) << params.esz
            sh_ = lambda v: v << params.esz
            m.d.sync += [
                params.trow.eq(trow), params.mode1.eq(other_cm), params.size.eq(size),
                params.seg_length.eq(Mux(params.elem_path, size, sh_(params.pos_n))),
                params.d_step_li.eq(sh_(lead_d)), params.d_step_pos.eq(size),
                params.a_step_li.eq(Mux(a_same, sh_(lead_a), size)),
                params.a_step_pos.eq(Mux(a_same, size, sh_(lead_a))),
                params.b_step_li.eq(Mux(b_same, sh_(lead_b), size)),
                params.b_step_pos.eq(Mux(b_same, size, sh_(lead_b))),
                params.e_step.eq(Mux(other_cm, W, sh_(lead_b))),
                params.p_pos_bytes.eq(sh_(params.p_pos)), params.p_any.eq(params.p_pos != 0),
            ]
            if not overlap:
                m.d.comb += walker.start.eq(1)
                m.next = "RUN"
            else:
                # reader B's queue may still hold the previous instruction's lines: the expanded operand's first
                # line waits there for room (``qb_room``), and the walker for it (PARAMS' writes are the same
                # every cycle)
                with m.If(pre_en & ~qb_room):
                    m.d.sync += pre_en.eq(1)
                with m.Else():
                    m.d.comb += walker.start.eq(1)
                    m.next = "RUN"
        with m.State("RUN"):
            # copies for the combiner and the pattern builder (loaded in every RUN cycle: a different
            # enable than the walker's, so synthesis keeps them apart and each drives half the loads;
            # their first use is several cycles into RUN, after a UB read)
            m.d.sync += [c_trow.eq(params.trow), c_p_is_a.eq(p_is_a), pat_esz.eq(params.esz),
                         pat_mode1.eq(params.mode1)]
            if not overlap:
                with m.If(run_end):
                    m.next = "IDLE"
            else:
                # overlap: the next command may start while the walker runs (the engine releases the command
                # in RUN); its DECODE then happens in the cycle of the walker's last segment (DECODE
                # writes only fields the walker reads at its start or not at all: its last step reads the
                # old ones at that edge), and its PARAMS, the walker's start, in the next
                with m.If(start & ~d.empty):
                    m.d.sync += pending.eq(1)
                with m.If(run_end):
                    with m.If(pending):
                        decode_writes()
                        m.d.comb += decoding.eq(1)
                        m.d.sync += pending.eq(0)
                        m.next = "PARAMS"
                    with m.Elif(start & ~d.empty):      # (its decodes are registered at this edge)
                        m.d.sync += pending.eq(0)
                        m.next = "DECODE"
                    with m.Else():
                        m.next = "IDLE"
    return SimpleNamespace(params=params, p_is_a=p_is_a, p_is_b=p_is_b, c_trow=c_trow, c_p_is_a=c_p_is_a,
                           pat_esz=pat_esz, pat_mode1=pat_mode1, pre_line=pre_line, pre_en=pre_en,
                           e_skip=e_skip, other_cm=other_cm, fsm=fsm, pending=pending, decoding=decoding)
