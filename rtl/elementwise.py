"""The elementwise engine: TROWEXPAND* (row-broadcast) and TPART* (partial validity) on one streaming datapath."""

from amaranth import *
from amaranth.lib import fifo, wiring

from .engine import EngineSignature
from .ew_lanes import ElementwiseLanes, LaneOp
from .ew_pattern import PatternBuilder
from .ew_walker import Segment, SegmentParams, SegmentWalker
from .instructions import EXPAND_BLOCK_BYTES, INSTRUCTIONS
from .isa import Layout, Opcode
from .status import Status
from .tile import elem_log2
from .ub_stream import UbReader, UbWriter

__all__ = ["ElementwiseEngine", "EW_OPCODES", "lane_op"]

#: Every opcode of the elementwise family (rtl/instructions.py), in opcode order.
EW_OPCODES = tuple(op for op, ins in INSTRUCTIONS.items() if ins.family == "elementwise")


def lane_op(opcode):
    """The lane operation of an elementwise opcode (``TROWEXPANDSUB`` -> ``LaneOp.SUB``)."""
    name = Opcode(opcode).name
    return LaneOp[name.removeprefix("TROWEXPAND").removeprefix("TPART")]


def is_rowexpand(opcode):
    return Opcode(opcode).name.startswith("TROWEXPAND")


def _same_valid(a, b):
    return (a.valid_rows == b.valid_rows) & (a.valid_cols == b.valid_cols)


class ElementwiseEngine(wiring.Component):
    """Executes the elementwise family (docs/semantics.md): TROWEXPANDMUL / ADD / SUB / MAX / MIN
    (``dst = src0 op src1`` with one source broadcast along the rows: mode 1 one scalar per row, mode 2
    one 32-byte block per row) and TPARTADD / MUL / MAX / MIN (``op`` where both sources are valid, a
    bit-exact copy of the full source elsewhere in ``dst``'s valid region).

    Parameters: ``config`` (uses ``ub_word_bytes`` = W; needs ``ub_read_ports >= 2``, see
    :meth:`available`).

    Ports: :class:`EngineSignature` with two UB read ports and the UB write port (no AXI).

    Datapath, one destination word per cycle at any alignment of the three tiles:

    1. setup (the ``start`` cycle): the command's geometry as :func:`rtl.ew_walker.SegmentParams`
       (shifts and muxes, no multiply), taken by the walker in that cycle and registered for the rest;
    2. :class:`rtl.ew_walker.SegmentWalker`: one *segment* per cycle (a destination line, or one element
       when a TPART source is stored in the other order than ``dst``), pushed as a line into FIFOs for
       the full-operand reader (UB port 0), the second-operand reader (UB port 1: the partial source,
       or the expanded operand's block / scalar lines), the writer, and the combiner;
    3. two :class:`rtl.ub_stream.UbReader`: words realigned to the destination's lanes;
    4. TROWEXPAND*: :class:`rtl.ew_pattern.PatternBuilder` makes one 32-byte broadcast pattern per row
       (the expanded operand is read once per row in mode 2, once per ``W / size`` rows in mode 1);
    5. combiner: pairs a full-operand word with the partial source's word or the row's pattern, and
       (TPART*) marks the bytes outside the partial source's valid region as copies; registered;
    6. :class:`rtl.ew_lanes.ElementwiseLanes` (``LATENCY`` cycles);
    7. :class:`rtl.ub_stream.UbWriter`: exact byte enables, nothing outside ``dst``'s valid region.

    Before ``go`` the readers fill their buffers but the combiner takes nothing, so no UB write can
    happen. Latency: ``done`` comes the cycle after the last word is written; an empty destination
    region is done in the ``start`` cycle. From ``start`` to ``done``: ``words + FIXED +
    ElementwiseLanes.LATENCY`` cycles for TPART* (``words``: destination words, one per cycle), one more
    for TROWEXPAND* mode 2 and two more for mode 1 (the first row's pattern comes through the expanded
    operand's reader and the pattern builder). ``FIXED`` = walker 1 + line FIFO 1 + reader
    (``UbReader.LATENCY`` = 6) + combiner 1 (+ done 1 - 1: the writer's last word and ``done`` overlap
    by one): 9; of these the reader,
    combiner and lanes are the pipeline depth, so the fixed overhead beyond it is 2 cycles. Throughput: one destination word per cycle for full-operand
    lines (TROWEXPAND* mode 2 needs ``ceil((d + 32) / W)`` expanded words per row, so rows shorter than
    that take that long); TPART* with a source stored in the other order: one element per cycle.
    """

    opcodes = EW_OPCODES
    #: Cycles from ``start`` to ``done`` beyond one per destination word and the lanes' latency (TPART*).
    FIXED = 3 + UbReader.LATENCY

    @classmethod
    def cycles(cls, config, words):
        """Cycles from ``start`` to ``done`` of a TPART* line-path instruction writing ``words`` destination
        words (TROWEXPAND*: one more in mode 2, two more in mode 1)."""
        K = config.ub_word_bytes // config.ew_lane_bytes
        return words * K + cls.FIXED + ElementwiseLanes.latency()

    @staticmethod
    def available(config):
        """The engine reads two operands per cycle: it needs two UB read ports."""
        return config.ub_read_ports >= 2

    def __init__(self, config):
        self._config = config
        super().__init__(EngineSignature(config, ub_read_ports=2, ub_write=True))

    @staticmethod
    def add_checks(m, config, cmd, fail):
        """The family's own rules (``golden.check._rules_trowexpandmul`` / ``_rules_tpartadd``)."""
        dst, s0, s1 = cmd.dst, cmd.src0, cmd.src1
        trow = Cat(cmd.opcode == op for op in EW_OPCODES if is_rowexpand(op)).any()
        tpart = Cat(cmd.opcode == op for op in EW_OPCODES if not is_rowexpand(op)).any()
        m0, m1 = _same_valid(s0, dst), _same_valid(s1, dst)
        # TROWEXPAND*: the full operand is src0 when it has dst's valid shape (also when both do: then
        # src1 is the expanded one), else src1; the expanded operand's layout picks the mode.
        full_is_1 = ~m0
        full_layout = Mux(full_is_1, s1.layout, s0.layout)
        exp = Signal.like(s0)
        m.d.comb += exp.eq(Mux(full_is_1, s0.as_value(), s1.as_value()))
        esz = elem_log2(m, dst.dtype)
        block = Signal(6)
        m.d.comb += block.eq(EXPAND_BLOCK_BYTES >> esz)
        mode1 = exp.layout == Layout.COL_MAJOR
        want_cols = Mux(mode1, 1, block)
        fail[Status.LAYOUT_UNSUPPORTED].append(trow & (m0 | m1) & (full_layout != Layout.ROW_MAJOR))
        fail[Status.SHAPE_MISMATCH].append(
            trow & (~(m0 | m1) | (exp.valid_rows != dst.valid_rows) | (exp.valid_cols != want_cols)))
        # TPART*: one source has dst's valid shape, the other fits inside it; an empty dst region is fine
        fits0 = (s0.valid_rows <= dst.valid_rows) & (s0.valid_cols <= dst.valid_cols)
        fits1 = (s1.valid_rows <= dst.valid_rows) & (s1.valid_cols <= dst.valid_cols)
        empty = (dst.valid_rows == 0) | (dst.valid_cols == 0)
        fail[Status.VALIDITY_PATTERN].append(tpart & ~empty & ~((m0 & fits1) | (m1 & fits0)))

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W = cfg.ub_word_bytes
        cmd = self.cmd
        dst, s0, s1 = cmd.dst, cmd.src0, cmd.src1

        m.submodules.walker = walker = SegmentWalker(cfg)
        m.submodules.rd_a = rd_a = UbReader(cfg)
        m.submodules.rd_b = rd_b = UbReader(cfg)
        m.submodules.wr = wr = UbWriter(cfg)
        m.submodules.pattern = pat = PatternBuilder(cfg, rd_b.WordLayout)
        L = cfg.ew_lane_bytes
        K = W // L
        m.submodules.lanes = lanes = ElementwiseLanes(L)
        wiring.connect(m, rd_a.ub_rd, wiring.flipped(self.ub_rd[0]))
        wiring.connect(m, rd_b.ub_rd, wiring.flipped(self.ub_rd[1]))
        wiring.connect(m, wr.ub_wr, wiring.flipped(self.ub_wr))

        # ---- 1. setup: the command's geometry, registered in the start cycle -------------------------
        esz = elem_log2(m, dst.dtype)
        trow = Cat(cmd.opcode == op for op in EW_OPCODES if is_rowexpand(op)).any()
        full_is_1 = ~_same_valid(s0, dst)
        full, other = Signal.like(s0), Signal.like(s0)
        m.d.comb += [full.eq(Mux(full_is_1, s1.as_value(), s0.as_value())),
                     other.eq(Mux(full_is_1, s0.as_value(), s1.as_value()))]
        dst_cm = dst.layout == Layout.COL_MAJOR

        def lead(t):        # bytes between consecutive lines of tile t in its own order
            return Mux(t.layout == Layout.COL_MAJOR, t.rows, t.cols) << esz

        def steps(t):       # (next line, next element) of t along dst's order
            same = t.layout == dst.layout
            return Mux(same, lead(t), 1 << esz), Mux(same, 1 << esz, lead(t))

        params = Signal(SegmentParams(cfg))
        setup = Signal(SegmentParams(cfg))
        (a_li, a_pos), (b_li, b_pos), (d_li, d_pos) = steps(full), steps(other), steps(dst)
        mode1 = other.layout == Layout.COL_MAJOR
        m.d.comb += [
            setup.lines.eq(Mux(dst_cm, dst.valid_cols, dst.valid_rows)),
            setup.pos_n.eq(Mux(dst_cm, dst.valid_rows, dst.valid_cols)),
            setup.esz.eq(esz), setup.trow.eq(trow), setup.mode1.eq(mode1),
            setup.elem_path.eq(~trow & ((full.layout != dst.layout) | (other.layout != dst.layout))),
            setup.line_bytes.eq(Mux(dst_cm, dst.valid_rows, dst.valid_cols) << esz),
            setup.d_base.eq(dst.base), setup.a_base.eq(full.base), setup.b_base.eq(other.base),
            setup.e_base.eq(other.base),
            setup.d_step_li.eq(d_li), setup.a_step_li.eq(a_li), setup.b_step_li.eq(b_li),
            setup.d_step_pos.eq(d_pos), setup.a_step_pos.eq(a_pos), setup.b_step_pos.eq(b_pos),
            setup.e_step.eq(Mux(mode1, W, lead(other))),
            setup.p_lines.eq(Mux(dst_cm, other.valid_cols, other.valid_rows)),
            setup.p_pos.eq(Mux(dst_cm, other.valid_rows, other.valid_cols)),
        ]
        op = Signal(LaneOp)
        swap = Signal()                     # TROWEXPAND* with src1 full: the pattern is the lanes' ``a``
        dtype = Signal.like(dst.dtype)
        # The walker starts in the ``start`` cycle from the combinational setup (it captures its bases and
        # counts then) and runs on the registered copy afterwards (the command is stable until ``done``).
        m.d.comb += walker.params.eq(Mux(self.start, setup, params))
        empty = (dst.valid_rows == 0) | (dst.valid_cols == 0)
        with m.If(self.start):
            m.d.sync += [params.eq(setup), dtype.eq(dst.dtype), swap.eq(trow & full_is_1)]
            with m.Switch(cmd.opcode):
                for opcode in EW_OPCODES:
                    with m.Case(opcode):
                        m.d.sync += op.eq(lane_op(opcode))

        # ---- 2. segments into the FIFOs of their consumers ------------------------------------------
        seg = walker.segs.payload
        q_a = fifo.SyncFIFO(width=rd_a.LineLayout.size, depth=4)
        q_b = fifo.SyncFIFO(width=rd_b.LineLayout.size, depth=4)
        # the writer's lines wait for their words through the whole pipeline: deep enough that one-word
        # segments still flow at one per cycle
        q_w = fifo.SyncFIFO(width=wr.LineLayout.size, depth=32)
        q_i = fifo.SyncFIFO(width=len(seg.t0) + 1, depth=16)
        m.submodules += [q_a, q_b, q_w, q_i]
        need_b = ~params.trow | seg.e_valid
        push = Signal()
        m.d.comb += [
            push.eq(walker.segs.valid & q_a.w_rdy & q_b.w_rdy & q_w.w_rdy & q_i.w_rdy),
            walker.segs.ready.eq(push),
            q_a.w_en.eq(push), q_w.w_en.eq(push), q_i.w_en.eq(push), q_b.w_en.eq(push & need_b),
        ]
        a_line, b_line, w_line = (Signal(rd_a.LineLayout), Signal(rd_b.LineLayout), Signal(wr.LineLayout))
        m.d.comb += [
            a_line.ub_addr.eq(seg.a_addr), a_line.length.eq(seg.length), a_line.dst_off.eq(seg.dst_off),
            b_line.ub_addr.eq(Mux(params.trow, seg.e_addr, seg.b_addr)),
            b_line.length.eq(Mux(params.trow, seg.e_length, seg.length)),
            b_line.dst_off.eq(Mux(params.trow, seg.e_off, seg.dst_off)),
            w_line.ub_addr.eq(seg.d_addr), w_line.length.eq(seg.length),
            q_a.w_data.eq(a_line), q_b.w_data.eq(b_line), q_w.w_data.eq(w_line),
            q_i.w_data.eq(Cat(seg.t0, seg.line_ok)),
        ]
        for q, rd in ((q_a, rd_a), (q_b, rd_b)):
            m.d.comb += [rd.lines.valid.eq(q.r_rdy), rd.lines.payload.eq(q.r_data), q.r_en.eq(rd.lines.ready)]
        m.d.comb += [wr.lines.valid.eq(q_w.r_rdy), wr.lines.payload.eq(q_w.r_data), q_w.r_en.eq(wr.lines.ready)]

        # ---- 4. TROWEXPAND*: the expanded operand's words become patterns ---------------------------
        m.d.comb += [pat.mode1.eq(params.mode1), pat.esz.eq(params.esz),
                     pat.words.payload.eq(rd_b.words.payload), pat.words.valid.eq(rd_b.words.valid & params.trow)]

        # ---- 5. combiner --------------------------------------------------------------------------------
        a_w, b_w = rd_a.words.payload, rd_b.words.payload
        info_t0 = q_i.r_data[:len(seg.t0)].as_signed()
        info_ok = q_i.r_data[-1]
        first = Signal(init=1)              # the next full-operand word is its segment's first
        t_reg = Signal(signed(len(seg.t0) + 1))
        ok_reg = Signal()
        p_reg = Signal(len(pat.patterns.payload), reset_less=True)
        odd = Signal()                      # W = 16: the segment's odd words use P[16:32]
        t_now = Signal.like(t_reg)
        ok_now, odd_now = Signal(), Signal()
        p_now = Signal.like(p_reg)
        m.d.comb += [
            t_now.eq(Mux(first, info_t0, t_reg)), ok_now.eq(Mux(first, info_ok, ok_reg)),
            p_now.eq(Mux(first, pat.patterns.payload, p_reg)), odd_now.eq(~first & odd),
        ]
        # The lanes take a word in K beats of L bytes (K = W / L, config.ew_lane_bytes): the combiner takes
        # a new word in the last beat of the current one.
        a_r, b_r, keep_r = (Signal(8 * W, reset_less=True), Signal(8 * W, reset_less=True),
                            Signal(W, reset_less=True))
        valid_r = Signal()
        beat = Signal(range(K))
        last_beat = Signal()
        m.d.comb += last_beat.eq(beat == K - 1)
        fire = Signal()
        m.d.comb += fire.eq(self.go & rd_a.words.valid & (params.trow | rd_b.words.valid) &
                            (~first | q_i.r_rdy) & (~(params.trow & first) | pat.patterns.valid) &
                            (~valid_r | last_beat))
        m.d.comb += [
            rd_a.words.ready.eq(fire),
            rd_b.words.ready.eq(Mux(params.trow, pat.words.ready, fire)),
            q_i.r_en.eq(fire & first),
            pat.patterns.ready.eq(fire & first & params.trow),
        ]
        with m.If(fire):
            m.d.sync += [first.eq(a_w.last), t_reg.eq(t_now - W), ok_reg.eq(ok_now), p_reg.eq(p_now),
                         odd.eq(~odd_now)]
        PB = len(p_now) // 8
        if W >= PB:
            p_word = p_now.replicate(W // PB)
        else:
            p_word = Mux(odd_now, p_now[8 * W:16 * W], p_now[:8 * W])
        in_part = Cat(ok_now & (t_now > b) for b in range(W))
        with m.If(fire):
            m.d.sync += [valid_r.eq(1), beat.eq(0)]
        with m.Elif(valid_r & last_beat):
            m.d.sync += valid_r.eq(0)
        with m.Elif(valid_r):
            m.d.sync += beat.eq(beat + 1)
        with m.If(fire):
            with m.If(~params.trow):
                m.d.sync += [a_r.eq(a_w.data), b_r.eq(b_w.data), keep_r.eq(~in_part)]
            with m.Elif(swap):
                m.d.sync += [a_r.eq(p_word), b_r.eq(a_w.data), keep_r.eq(0)]
            with m.Else():
                m.d.sync += [a_r.eq(a_w.data), b_r.eq(p_word), keep_r.eq(0)]

        # ---- 6, 7. lanes, writer -----------------------------------------------------------------------
        m.d.comb += [
            lanes.a.eq(a_r.word_select(beat, 8 * L)), lanes.b.eq(b_r.word_select(beat, 8 * L)),
            lanes.keep_a.eq(keep_r.word_select(beat, L)), lanes.valid.eq(valid_r),
            lanes.dtype.eq(dtype), lanes.op.eq(op),
        ]
        if K == 1:
            m.d.comb += [wr.words.valid.eq(lanes.out_valid), wr.words.payload.eq(lanes.result)]
        else:       # the beats come out in order, K per word: collect the first K - 1, write with the last
            out_beat = Signal(range(K))
            merge = Signal(8 * L * (K - 1), reset_less=True)
            with m.If(lanes.out_valid):
                m.d.sync += out_beat.eq(Mux(out_beat == K - 1, 0, out_beat + 1))
                with m.Switch(out_beat):
                    for j in range(K - 1):
                        with m.Case(j):
                            m.d.sync += merge.word_select(j, 8 * L).eq(lanes.result)
            m.d.comb += [wr.words.valid.eq(lanes.out_valid & (out_beat == K - 1)),
                         wr.words.payload.eq(Cat(merge, lanes.result))]

        # ---- control ------------------------------------------------------------------------------------
        outstanding = Signal(8)             # segments pushed and not yet written
        m.d.sync += outstanding.eq(outstanding + push - wr.done)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    with m.If(empty):
                        m.d.comb += [self.done.eq(1), self.status.eq(Status.OK)]
                    with m.Else():
                        m.d.comb += walker.start.eq(1)
                        m.d.sync += first.eq(1)
                        m.next = "RUN"
            with m.State("RUN"):
                with m.If(~walker.busy & (outstanding == 0)):
                    m.d.comb += [self.done.eq(1), self.status.eq(Status.OK)]
                    m.next = "IDLE"
        return m
