"""The elementwise engine: TROWEXPAND* (row-broadcast) and TPART* (partial validity) on one streaming datapath."""

from amaranth import *
from amaranth.lib import data, wiring

from rtl.checker.stages import stage
from rtl.engines.base import Engine, tile_lines, words_of
from rtl.engines.elementwise.lanes import ElementwiseLanes, LaneOp
from rtl.engines.elementwise.pattern import PatternBuilder
from rtl.engines.elementwise.walker import FlagFifo, SegmentParams, SegmentWalker
from rtl.isa import EXPAND_BLOCK_BYTES, INSTRUCTIONS, Layout, Opcode, Status
from rtl.lib.tile import LINE_BYTES_BITS, elem_log2
from rtl.ub.reader import UbReader
from rtl.ub.writer import UbWriter

__all__ = ["ElementwiseEngine", "EW_OPCODES", "lane_op"]

#: Every opcode of the elementwise family (rtl/isa/instructions.py), in opcode order.
EW_OPCODES = tuple(op for op, ins in INSTRUCTIONS.items() if ins.family == "elementwise")


def lane_op(opcode):
    """The lane operation of an elementwise opcode (``TROWEXPANDSUB`` -> ``LaneOp.SUB``)."""
    name = Opcode(opcode).name
    return LaneOp[name.removeprefix("TROWEXPAND").removeprefix("TPART")]


def is_rowexpand(opcode):
    return Opcode(opcode).name.startswith("TROWEXPAND")


def _delay_reset(m, v, n, name):
    """``v`` through ``n`` registers (with reset: an aborted command leaves none set)."""
    for i in range(n):
        r = Signal(name=f"{name}_d{i + 1}")
        m.d.sync += r.eq(v)
        v = r
    return v


def _same_valid(a, b):
    return (a.valid_rows == b.valid_rows) & (a.valid_cols == b.valid_cols)


class ElementwiseEngine(Engine):
    """Executes the elementwise family (docs/semantics.md): TROWEXPANDMUL / ADD / SUB / MAX / MIN
    (``dst = src0 op src1`` with one source broadcast along the rows: mode 1 one scalar per row, mode 2
    one 32-byte block per row) and TPARTADD / MUL / MAX / MIN (``op`` where both sources are valid, a
    bit-exact copy of the full source elsewhere in ``dst``'s valid region).

    Parameters: ``config`` (uses ``ub_word_bytes`` = W; needs ``ub_read_ports >= 2``, see
    :meth:`available`).

    Ports: :class:`EngineSignature` with two UB read ports and the UB write port (no AXI).

    Datapath, one destination word per ``K = W / ew_lane_bytes`` cycles at any alignment of the three tiles:

    1. setup, three register stages over the held command (the ``start`` cycle: opcode, type, layout and
       shape decodes; DECODE: what the walker takes when it starts, the full / other operand's fields
       selected; PARAMS: the steps shifted to bytes): :func:`rtl.engines.elementwise.walker.SegmentParams`, shifts and
       muxes, no multiply, a few LUT levels per stage;
    2. :class:`rtl.engines.elementwise.walker.SegmentWalker` (started in PARAMS): one *segment* per cycle (a destination
       line, or one element when a TPART source is stored in the other order than ``dst``), pushed as a
       line into queues (:class:`rtl.engines.elementwise.walker.FlagFifo`, flags from registers) for the full-operand
       reader (UB port 0), the second-operand reader (UB port 1: the partial source, or the expanded
       operand's block / scalar lines) and the writer, and through one register stage into the
       combiner's (the partial source's extent in the segment's words, the last-segment mark);
    3. two :class:`rtl.ub.reader.UbReader`: words realigned to the destination's lanes;
    4. TROWEXPAND*: :class:`rtl.engines.elementwise.pattern.PatternBuilder` makes one 32-byte broadcast pattern per row
       (the expanded operand is read once per row in mode 2, once per ``W / size`` rows in mode 1);
    5. combiner: pairs a full-operand word with the partial source's word or the row's pattern (held at
       the head of the pattern queue until the row's last word), and (TPART*) marks the bytes outside the
       partial source's valid region as copies (from a per-segment state register: whole words inside,
       the bytes of the boundary word); ``fire`` (a word taken) is two LUT levels of registers and
       enables only handshake state, the operand registers load every cycle (K = 1) or whenever free
       (K > 1: otherwise they shift down by a beat);
    6. :class:`rtl.engines.elementwise.lanes.ElementwiseLanes` (``LATENCY`` cycles, depths :attr:`LANE_DEPTHS`);
    7. :class:`rtl.ub.writer.UbWriter`: exact byte enables, nothing outside ``dst``'s valid region.

    Before ``go`` the readers fill their buffers but the combiner takes nothing, so no UB write can
    happen. Latency: ``done`` (a register: the last word's mark travels beside it through the lanes)
    comes in the cycle the writer takes the last word (the UB writes it at that edge; reads issued from
    the next cycle see it); an empty destination region is done in the cycle after ``start``. From ``start``
    to ``done``: :meth:`cycles`, ``words * K + FIXED + ElementwiseLanes.LATENCY`` for TPART*
    (``words``: destination words) and :attr:`PATTERN_CYCLES` more for TROWEXPAND* (the first row's
    pattern comes through the expanded operand's reader and the pattern builder, 2 cycles; its line
    enters the reader's queue a cycle before the walker's first segment, so 1 of them shows).
    ``FIXED`` = setup 2 + walker 1 + line queue 1 + reader (``UbReader.LATENCY`` = 7) + combiner 1 (- 1:
    the last word's write cycle is counted in ``words``) = 11; the reader, combiner and lanes are the
    pipeline depth, the rest (4 cycles) is fixed overhead. Throughput: one destination word per ``K``
    cycles for full-operand lines (TROWEXPAND* mode 2 needs ``ceil((d + 32) / W)`` expanded words per
    row, so rows shorter than that take that long); TPART* with a source stored in the other order: one
    element per cycle.
    """

    name = "elementwise"
    opcodes = EW_OPCODES
    UB_READ_PORTS = 2           # the full operand and the other one, a word each per cycle
    UB_WRITE = True
    #: Cycles from ``start`` to ``done`` beyond one per destination word and the lanes' latency (TPART*).
    FIXED = 4 + UbReader.LATENCY
    #: Pipeline depths of the lanes (:class:`rtl.engines.elementwise.lanes.ElementwiseLanes` keyword arguments).
    LANE_DEPTHS = {}

    #: Cycles TROWEXPAND* adds to :attr:`FIXED` (by mode; index 0: TPART*): its first row's pattern
    #: comes through the expanded operand's reader and the pattern builder (2 cycles), whose line is
    #: queued in PARAMS, a cycle ahead of the full operand's.
    PATTERN_CYCLES = (0, 1, 1)

    @classmethod
    def cycles(cls, config, words, mode=0):
        """Cycles from ``start`` to ``done`` of a line-path instruction writing ``words`` destination words:
        TPART* (``mode`` 0) or TROWEXPAND* in ``mode`` 1 or 2, rows long enough for one word per
        ``K`` cycles (see the class doc)."""
        K = config.ub_word_bytes // config.ew_lane_bytes
        return words * K + cls.FIXED + cls.PATTERN_CYCLES[mode] + ElementwiseLanes.latency(**cls.LANE_DEPTHS)

    @classmethod
    def bound(cls, config, cmd):
        """The narrower of the UB write port and the lanes: every destination word takes
        ``W / ew_lane_bytes`` cycles."""
        W = config.ub_word_bytes
        return sum(words_of(a, n, W) for a, n in tile_lines(cmd["dst"])) * (W // config.ew_lane_bytes)

    @staticmethod
    def add_checks(m, config, cmd, fail):
        """The family's own rules (``golden.check._rules_trowexpandmul`` / ``_rules_tpartadd``)."""
        dst, s0, s1 = cmd.dst, cmd.src0, cmd.src1
        # The opcode decodes and the field compares are registered (``stage``: the command is held while
        # it is checked), the conditions combine the registers: a few LUT levels each side of them.
        trow = stage(m, Cat(cmd.opcode == op for op in EW_OPCODES if is_rowexpand(op)).any(), "ew_trow")
        tpart = stage(m, Cat(cmd.opcode == op for op in EW_OPCODES if not is_rowexpand(op)).any(), "ew_tpart")
        m0 = stage(m, _same_valid(s0, dst), "ew_same0")
        m1 = stage(m, _same_valid(s1, dst), "ew_same1")
        esz = elem_log2(m, dst.dtype)
        block = Signal(6)
        m.d.comb += block.eq(EXPAND_BLOCK_BYTES >> esz)

        def expanded_ok(t):     # ``t`` has the expanded operand's shape: its layout picks the mode
            want_cols = Mux(t.layout == Layout.COL_MAJOR, 1, block)
            return (t.valid_rows == dst.valid_rows) & (t.valid_cols == want_cols)
        # TROWEXPAND*: the full operand is src0 when it has dst's valid shape (also when both do: then
        # src1 is the expanded one), else src1; the expanded operand's layout picks the mode.
        exp0_ok, exp1_ok = stage(m, expanded_ok(s0), "ew_exp0"), stage(m, expanded_ok(s1), "ew_exp1")
        row0, row1 = (stage(m, t.layout == Layout.ROW_MAJOR, f"ew_row{k}") for k, t in enumerate((s0, s1)))
        full_is_1 = ~m0
        fail[Status.LAYOUT_UNSUPPORTED].append(trow & (m0 | m1) & ~Mux(full_is_1, row1, row0))
        fail[Status.SHAPE_MISMATCH].append(trow & (~(m0 | m1) | ~Mux(full_is_1, exp0_ok, exp1_ok)))
        # TPART*: one source has dst's valid shape, the other fits inside it; an empty dst region is fine
        fits0 = stage(m, (s0.valid_rows <= dst.valid_rows) & (s0.valid_cols <= dst.valid_cols), "ew_fits0")
        fits1 = stage(m, (s1.valid_rows <= dst.valid_rows) & (s1.valid_cols <= dst.valid_cols), "ew_fits1")
        empty = stage(m, (dst.valid_rows == 0) | (dst.valid_cols == 0), "ew_empty")
        fail[Status.VALIDITY_PATTERN].append(tpart & ~empty & ~((m0 & fits1) | (m1 & fits0)))

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W = cfg.ub_word_bytes
        sh = W.bit_length() - 1
        L = cfg.ew_lane_bytes
        K = W // L
        cmd = self.cmd
        dst, s0, s1 = cmd.dst, cmd.src0, cmd.src1

        m.submodules.walker = walker = SegmentWalker(cfg)
        run_done = Signal()                 # RUN: the last word is written this cycle
        m.submodules.rd_a = rd_a = UbReader(cfg)
        m.submodules.rd_b = rd_b = UbReader(cfg)
        m.submodules.wr = wr = UbWriter(cfg)
        m.submodules.pattern = pat = PatternBuilder(cfg, rd_b.WordLayout)
        m.submodules.lanes = lanes = ElementwiseLanes(L, **self.LANE_DEPTHS)
        wiring.connect(m, rd_a.ub_rd, wiring.flipped(self.ub_rd[0]))
        wiring.connect(m, rd_b.ub_rd, wiring.flipped(self.ub_rd[1]))
        wiring.connect(m, wr.ub_wr, wiring.flipped(self.ub_wr))

        # ---- 1. setup: three register stages over the held command -------------------------------------
        # 1 (the ``start`` cycle): decodes of the command. 2 (DECODE): what the walker takes when it starts
        # (bases, counts) and the selections of the full / other operand's fields. 3 (PARAMS, the walker's
        # start cycle): the steps, shifted to bytes, used from the cycle after. Each stage is a few LUT
        # levels of registers and the command's fields; nothing downstream sees the command itself.
        cm = lambda t: t.layout == Layout.COL_MAJOR
        esz_c = elem_log2(m, dst.dtype)
        trow_c = Cat(cmd.opcode == op for op in EW_OPCODES if is_rowexpand(op)).any()
        empty = (dst.valid_rows == 0) | (dst.valid_cols == 0)

        esz, trow, fi, s0_cm, s1_cm, dst_cm = Signal(2), Signal(), Signal(), Signal(), Signal(), Signal()
        op = Signal(LaneOp)
        dtype = Signal.like(dst.dtype)
        with m.If(self.start):
            m.d.sync += [esz.eq(esz_c), trow.eq(trow_c), fi.eq(~_same_valid(s0, dst)), s0_cm.eq(cm(s0)),
                         s1_cm.eq(cm(s1)), dst_cm.eq(cm(dst)), dtype.eq(dst.dtype)]
            with m.Switch(cmd.opcode):
                for opcode in EW_OPCODES:
                    with m.Case(opcode):
                        m.d.sync += op.eq(lane_op(opcode))

        params = Signal(SegmentParams(cfg))
        m.d.comb += walker.params.eq(params)
        # stage 2: ``fi``: the full operand is src1 (the other one is src0)
        pick_full = lambda x1, x0: Mux(fi, x1, x0)
        pick_other = lambda x1, x0: Mux(fi, x0, x1)
        other_cm = Signal()
        a_same, b_same = Signal(), Signal()
        p_is_a, p_is_b = Signal(), Signal()           # TROWEXPAND*: the pattern is the lanes' ``a`` / ``b``
        lead_d, lead_a, lead_b = Signal(16), Signal(16), Signal(16)    # elements between lines, own order
        c_trow, c_p_is_a, pat_esz, pat_mode1 = Signal(), Signal(), Signal(2), Signal()
        o_vr, o_vc = pick_other(s1.valid_rows, s0.valid_rows), pick_other(s1.valid_cols, s0.valid_cols)
        # TROWEXPAND*: the expanded operand's first line goes into reader B's queue in PARAMS, a cycle
        # before the walker's first segment (``pre_en``), so the first row's pattern is ready a cycle
        # sooner; the walker's own copy of that line is not pushed (``e_skip``: no segment pushed yet).
        # The line is registered in DECODE from the held command: what the walker's first segment has
        # as ``e_addr`` / ``e_length`` / ``e_off``.
        pre_line = Signal(rd_b.LineLayout, reset_less=True)
        pre_en, e_skip = Signal(), Signal()
        m.d.sync += pre_en.eq(0)
        lines_c = Mux(dst_cm, dst.valid_cols, dst.valid_rows)
        # mode 1: one line of min(lines, W / size) scalars
        many = Mux(esz == 0, lines_c[sh:].any(), Mux(esz == 1, lines_c[sh - 1:].any(), lines_c[sh - 2:].any()))
        scal_len = Mux(many, W, (lines_c << esz)[:sh])
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start & ~empty):
                    m.next = "DECODE"
            with m.State("DECODE"):
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
                    pre_line.length.eq(Mux(pick_other(s1_cm, s0_cm), scal_len, 32)),
                    pre_line.dst_off.eq(Mux(pick_other(s1_cm, s0_cm), 0, dst.base[:sh])),
                    pre_en.eq(trow), e_skip.eq(trow),
                ]
                m.next = "PARAMS"
            with m.State("PARAMS"):
                size = C(1, 3) << params.esz
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
                m.d.comb += walker.start.eq(1)
                m.next = "RUN"
            with m.State("RUN"):
                # copies for the combiner and the pattern builder (loaded in every RUN cycle: a different
                # enable than the walker's, so synthesis keeps them apart and each drives half the loads;
                # their first use is several cycles into RUN, after a UB read)
                m.d.sync += [c_trow.eq(params.trow), c_p_is_a.eq(p_is_a), pat_esz.eq(params.esz),
                             pat_mode1.eq(params.mode1)]
                with m.If(run_done):
                    m.next = "IDLE"

        # ---- 2. segments into the queues of their consumers -------------------------------------------
        # The walker steps when every queue has room (the flags are registers: FlagFifo). The line queues
        # take the walker's outputs (registers and one select); the combiner's info goes through one
        # register stage first (an add and a compare), so its queue keeps room for one more (slack 2).
        seg = walker.segs.payload
        q_a = FlagFifo(rd_a.LineLayout.size, 4)
        q_b = FlagFifo(rd_b.LineLayout.size, 4)
        # the writer's lines wait for their words through the whole pipeline: deep enough that one-word
        # segments still flow at one per cycle
        q_w = FlagFifo(wr.LineLayout.size, 32)
        InfoLayout = data.StructLayout({"words": LINE_BYTES_BITS + 1 - sh, "any": 1, "rem": sh, "fin": 1})
        q_i = FlagFifo(InfoLayout.size, 16, slack=2)
        m.submodules.q_a, m.submodules.q_b, m.submodules.q_w, m.submodules.q_i = q_a, q_b, q_w, q_i
        room = q_a.w_rdy & q_b.w_rdy & q_w.w_rdy & q_i.w_rdy
        push = Signal()
        m.d.comb += [push.eq(walker.busy & room), walker.segs.ready.eq(room)]
        a_line, b_line, w_line = Signal(rd_a.LineLayout), Signal(rd_b.LineLayout), Signal(wr.LineLayout)
        m.d.comb += [
            a_line.ub_addr.eq(seg.a_addr), a_line.length.eq(seg.length), a_line.dst_off.eq(seg.dst_off),
            b_line.ub_addr.eq(Mux(params.trow, seg.e_addr, seg.b_addr)),
            b_line.length.eq(Mux(params.trow, seg.e_length, seg.length)),
            b_line.dst_off.eq(Mux(params.trow, seg.e_off, seg.dst_off)),
            w_line.ub_addr.eq(seg.d_addr), w_line.length.eq(seg.length),
            q_a.w_data.eq(a_line), q_b.w_data.eq(Mux(pre_en, pre_line, b_line)), q_w.w_data.eq(w_line),
            q_a.w_en.eq(push), q_w.w_en.eq(push),
            q_b.w_en.eq(pre_en | (push & (~params.trow | seg.e_valid) & ~e_skip)),
        ]
        with m.If(push):
            m.d.sync += e_skip.eq(0)
        s_valid = Signal()
        s_t0 = Signal(LINE_BYTES_BITS + 1, reset_less=True)   # dst_off + pp_bytes: see Segment
        s_ok, s_fin = Signal(reset_less=True), Signal(reset_less=True)
        m.d.sync += [s_valid.eq(push), s_t0.eq(seg.dst_off + seg.pp_bytes), s_ok.eq(seg.p_ok), s_fin.eq(seg.fin)]
        info_in = Signal(InfoLayout)
        m.d.comb += [
            info_in.words.eq(Mux(s_ok, s_t0[sh:], 0)), info_in.any.eq(s_ok & s_t0[sh:].any()),
            info_in.rem.eq(Mux(s_ok, s_t0[:sh], 0)), info_in.fin.eq(s_fin),
            q_i.w_data.eq(info_in), q_i.w_en.eq(s_valid),
        ]
        for q, rd in ((q_a, rd_a), (q_b, rd_b), (q_w, wr)):
            m.d.comb += [rd.lines.valid.eq(q.r_rdy), rd.lines.payload.eq(q.r_data),
                         q.r_en.eq(rd.lines.ready & q.r_rdy)]

        # ---- 4. TROWEXPAND*: the expanded operand's words become patterns ---------------------------
        m.d.comb += [pat.mode1.eq(pat_mode1), pat.esz.eq(pat_esz),
                     pat.words.payload.eq(rd_b.words.payload), pat.words.valid.eq(rd_b.words.valid & c_trow)]

        # ---- 5. combiner --------------------------------------------------------------------------------
        # The current segment's partial-source state is a register loaded from q_i when its first word
        # is due (prefetched: q_i's head is popped into it): ``cnt`` words fully inside (``f_all`` = cnt
        # != 0), then one word with ``rem`` bytes (``f_cur``), then none. The row's pattern stays at the
        # head of the pattern queue until the segment's last word.
        a_w, b_w = rd_a.words.payload, rd_b.words.payload
        info = Signal(InfoLayout)
        m.d.comb += info.eq(q_i.r_data)
        seg_v = Signal()
        cnt = Signal.like(info.words)
        f_all, f_cur = Signal(), Signal()
        rem = Signal(sh)
        odd = Signal()                      # W = 16: the segment's odd words use P[16:32]
        # copies for b's selects, a quarter of the word each (each toggles on its own output: not merged)
        odd_b = [Signal(reset_less=True, name=f"odd_b{k}") for k in range(4)]
        valid_r = Signal()
        fire, load = Signal(), Signal()
        take = Signal(init=1)               # the operand registers are free for a word (K > 1: a register)
        if K > 1:
            beat = Signal(range(K))
            m.d.sync += take.eq(~fire & (take | (beat == K - 2)))
        m.d.comb += [
            fire.eq(self.go & seg_v & rd_a.words.valid & Mux(c_trow, pat.patterns.valid, rd_b.words.valid) & take),
            load.eq((~seg_v | (fire & a_w.last)) & q_i.r_rdy),
            q_i.r_en.eq(load),
            rd_a.words.ready.eq(fire),
            rd_b.words.ready.eq(Mux(c_trow, pat.words.ready, fire)),
            pat.patterns.ready.eq(fire & a_w.last & c_trow),
        ]
        seg_fin = Signal()                  # the current segment is the instruction's last
        with m.If(load):
            m.d.sync += [seg_v.eq(1), cnt.eq(info.words), f_all.eq(info.any), f_cur.eq(~info.any),
                         rem.eq(info.rem), odd.eq(0), seg_fin.eq(info.fin)] + [o.eq(0) for o in odd_b]
        with m.Elif(fire & a_w.last):
            m.d.sync += seg_v.eq(0)
        with m.Elif(fire):
            m.d.sync += [cnt.eq(cnt - f_all), f_all.eq(cnt[1:].any()), f_cur.eq(cnt == 1), odd.eq(~odd)]
            m.d.sync += [o.eq(~o) for o in odd_b]

        P = pat.patterns.payload
        PB = len(P) // 8
        if W >= PB:
            p_word = p_word_b = P.replicate(W // PB)
        else:
            p_word = Mux(odd, P[8 * W:16 * W], P[:8 * W])
            q = 2 * W                       # bits per quarter word
            p_word_b = Cat(Mux(o, P[8 * W + k * q:8 * W + (k + 1) * q], P[k * q:(k + 1) * q])
                           for k, o in enumerate(odd_b))
        keep = Cat(~(f_all | (f_cur & (rem > b))) & ~params.trow for b in range(W))
        new_a = Mux(p_is_a, p_word, a_w.data)
        new_b = Mux(c_p_is_a, a_w.data, Mux(p_is_b, p_word_b, b_w.data))

        # The lanes take a word in K beats of L bytes (K = W / L, config.ew_lane_bytes). K = 1: the operand
        # registers load every cycle (``valid_r`` says whether they hold a word). K > 1: they load when
        # free (``take``: no word, or its last beat) and otherwise shift down by L bytes per beat.
        a_r, b_r = Signal(8 * W, reset_less=True), Signal(8 * W, reset_less=True)
        keep_r = Signal(W, reset_less=True)
        fin_r = Signal()                    # the operand registers hold the instruction's last word
        with m.If(fire):
            m.d.sync += fin_r.eq(a_w.last & seg_fin)
        if K == 1:
            m.d.sync += [a_r.eq(new_a), b_r.eq(new_b), keep_r.eq(keep), valid_r.eq(fire)]
            fin_beat = valid_r & fin_r
        else:
            with m.If(take):
                m.d.sync += [a_r.eq(new_a), b_r.eq(new_b), keep_r.eq(keep)]
            with m.Else():
                m.d.sync += [a_r.eq(a_r >> 8 * L), b_r.eq(b_r >> 8 * L), keep_r.eq(keep_r >> L)]
            with m.If(fire):
                m.d.sync += [valid_r.eq(1), beat.eq(0)]
            with m.Elif(valid_r & (beat == K - 1)):
                m.d.sync += valid_r.eq(0)
            with m.Elif(valid_r):
                m.d.sync += beat.eq(beat + 1)
            fin_beat = valid_r & fin_r & (beat == K - 1)

        # ---- 6, 7. lanes, writer -----------------------------------------------------------------------
        m.d.comb += [
            lanes.a.eq(a_r[:8 * L]), lanes.b.eq(b_r[:8 * L]), lanes.keep_a.eq(keep_r[:L]),
            lanes.valid.eq(valid_r), lanes.dtype.eq(dtype), lanes.op.eq(op),
        ]
        if K == 1:
            m.d.comb += [wr.words.valid.eq(lanes.out_valid), wr.words.payload.eq(lanes.result)]
        else:       # the beats come out in order, K per word: shift the first K - 1 in, write with the last
            out_beat = Signal(range(K))
            merge = Signal(8 * L * (K - 1), reset_less=True)
            with m.If(lanes.out_valid):
                m.d.sync += [out_beat.eq(Mux(out_beat == K - 1, 0, out_beat + 1)),
                             merge.eq(Cat(merge[8 * L:], lanes.result) if K > 2 else lanes.result)]
            m.d.comb += [wr.words.valid.eq(lanes.out_valid & (out_beat == K - 1)),
                         wr.words.payload.eq(Cat(merge, lanes.result))]

        # ---- control ------------------------------------------------------------------------------------
        # ``done`` is a register: the last word's mark, through the lanes beside it, so it rises in the
        # cycle the writer takes the instruction's last word (the UB writes it at that edge).
        fin_out = Signal()
        m.d.sync += fin_out.eq(_delay_reset(m, fin_beat, lanes.LATENCY - 1, "fin"))
        # an empty region is done the cycle after ``start``, from a register (the empty compare of the held
        # command was in front of the front end's status mux)
        empty_done = Signal()
        m.d.sync += empty_done.eq(self.start & empty)
        m.d.comb += [run_done.eq(fin_out), self.done.eq(fin_out | empty_done),
                     self.status.eq(Status.OK)]
        return m
