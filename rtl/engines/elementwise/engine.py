"""The elementwise engine: TROWEXPAND* (row-broadcast) and TPART* (partial validity) on one streaming datapath."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data, wiring

from rtl.engines.base import GO_DELAY, Engine, tile_lines, words_of
from rtl.engines.elementwise.checks import elementwise_checks
from rtl.engines.elementwise.combiner import combiner
from rtl.engines.elementwise.lanes import ElementwiseLanes
from rtl.engines.elementwise.model import cycles as model_cycles
from rtl.engines.elementwise.overlap import overlap_context, pattern_context, release_and_empty, tag_b_lines
from rtl.engines.elementwise.pattern import PATTERN_BYTES, PatternBuilder
from rtl.engines.elementwise.setup import EW_OPCODES, decode, is_rowexpand, lane_op, setup
from rtl.engines.elementwise.walker import QUEUE_CYCLES, FlagFifo, SegmentWalker
from rtl.isa import Layout, Opcode, Status
from rtl.lib.contract import require
from rtl.lib.delay import delay
from rtl.lib.output_queue import OutputQueue
from rtl.lib.tile import LINE_BYTES_BITS
from rtl.ub.reader import UbReader
from rtl.ub.writer import UbWriter

__all__ = ["ElementwiseEngine", "EW_OPCODES", "lane_op"]


class ElementwiseEngine(Engine):
    """Executes the elementwise family (docs/semantics.md): TROWEXPANDMUL / ADD / SUB / MAX / MIN
    (``dst = src0 op src1`` with one source broadcast along the rows: mode 1 one scalar per row, mode 2
    one 32-byte block per row) and TPARTADD / MUL / MAX / MIN (``op`` where both sources are valid, a
    bit-exact copy of the full source elsewhere in ``dst``'s valid region).

    Parameters
    ----------
    config : :class:`rtl.config.Config`
        Uses ``ub_word_bytes`` (``W``, at most ``MAX_WORD_BYTES`` = 64) and ``ew_lane_bytes`` (``L``; a
        word takes ``K = W / L`` beats of the lanes); needs ``ub_read_ports >= 2`` (:meth:`available`).

    Attributes
    ----------
    cmd, start, go, done, status : the :class:`rtl.engines.base.EngineSignature` handshake.
    ub_rd : two UB read ports (0: the full operand; 1: the partial source or the expanded operand).
    ub_wr : the UB write port. No AXI.
    release : (``overlap=True`` only) the engine takes its next instruction (``EngineSignature``): from the
        cycle after its setup's PARAMS (the walker runs) while the instruction ahead of the combiner's is not
        yet set up, no empty region waits, fewer than :attr:`MAX_IN_FLIGHT` are in flight and the combiner
        is not on a TROWEXPAND*; the next one's DECODE comes with the walker's last segment, its PARAMS in the
        next cycle. Each instruction's flags travel behind the walker with it
        (:func:`rtl.engines.elementwise.overlap.overlap_context`); ``done`` per instruction in start order.

    Datapath, one destination word per ``K`` cycles at any alignment of the three tiles:

    1. setup (:mod:`rtl.engines.elementwise.setup`), ``SETUP_CYCLES`` = 2 register stages over the held
       command before the walker starts (the ``start`` cycle: opcode, type, layout and shape decodes;
       DECODE: what the walker takes when it starts, the full / other operand's fields selected; PARAMS,
       the walker's ``start``: the steps shifted to bytes, used from the cycle after):
       :func:`rtl.engines.elementwise.walker.SegmentParams`, shifts and muxes, no multiply, a few LUT
       levels per stage;
    2. :class:`rtl.engines.elementwise.walker.SegmentWalker` (:meth:`_segments`): one *segment* per cycle
       (a destination line, or one element when a TPART source is stored in the other order than
       ``dst``), pushed as a line into queues (:class:`rtl.lib.flag_fifo.FlagFifo`, flags from registers)
       for the full-operand reader (UB port 0), the second-operand reader (UB port 1: the partial source,
       or the expanded operand's block / scalar lines) and the writer, and through
       ``INFO_CYCLES`` = 1 register stage into the combiner's (the partial source's extent in the
       segment's words, the last-segment mark);
    3. two :class:`rtl.ub.reader.UbReader`: words realigned to the destination's lanes;
    4. TROWEXPAND*: :class:`rtl.engines.elementwise.pattern.PatternBuilder` makes one 32-byte broadcast
       pattern per row (the expanded operand is read once per row in mode 2, once per ``W / size`` rows
       in mode 1);
    5. combiner (:mod:`rtl.engines.elementwise.combiner`): pairs a full-operand word with the partial
       source's word or the row's pattern (held at the head of the pattern queue until the row's last
       word), and (TPART*) marks the bytes outside the partial source's valid region as copies (from a
       per-segment state register: whole words inside, the bytes of the boundary word); ``fire`` (a word
       taken) is two LUT levels of registers and enables only handshake state, the operand registers
       (``COMBINER_CYCLES`` = 1) load every cycle (K = 1) or whenever free (K > 1: otherwise they shift
       down by a beat);
    6. :class:`rtl.engines.elementwise.lanes.ElementwiseLanes` (``LATENCY`` cycles, depths
       :attr:`LANE_DEPTHS`);
    7. :class:`rtl.ub.writer.UbWriter`: exact byte enables, nothing outside ``dst``'s valid region.

    Before ``go`` the readers fill their buffers but the combiner takes nothing, so no UB write can
    happen.

    Latency
    -------
    ``done`` (a register: the last word's mark travels beside it through the lanes) comes in the cycle
    the writer takes the last word (the UB writes it at that edge; reads issued from the next cycle see
    it); an empty destination region is done ``EMPTY_CYCLES`` = 1 after ``start``. From ``start`` to
    ``done`` (:meth:`cycles`, the model in :mod:`rtl.engines.elementwise.model`): ``words * K + FIXED +
    ElementwiseLanes.LATENCY`` for TPART* on the line path (``words``: destination words), with
    ``FIXED`` = 11, ``FIRST_WORD_CYCLES`` + ``COMBINER_CYCLES`` - 1 (the last word's cycle is one of the
    ``words * K``); ``FIRST_WORD_CYCLES`` = 11, ``start`` to the first full-operand word at the combiner, is
    ``SETUP_CYCLES`` = 2, ``SegmentWalker.LATENCY`` = 1, ``QUEUE_CYCLES`` = 1 (the line queue) and
    ``UbReader.LATENCY`` = 7. The reader, the combiner and the lanes are the pipeline depth, the rest (4
    cycles) is fixed overhead. TROWEXPAND*: the first row waits for its pattern, ``PATTERN_CYCLES`` = 1
    more when the first row's expanded line is one word (the pattern builder gives it
    ``PatternBuilder.LATENCY`` = 2 cycles after the line's word, but the line enters reader B's queue in
    PARAMS, ``SegmentWalker.LATENCY`` = 1 cycle before the walker's first segment), a cycle more per
    further word of that line (mode 2 at ``W = 16``: two); the figure is exact when every later row's
    pattern is ready when the row's first word is due (rows of a few words; one-word rows at K = 1 wait
    for reader B: then :meth:`cycles` gives ``None``).

    Throughput
    ----------
    One destination word per ``K`` cycles for full-operand lines (TROWEXPAND* mode 2 needs ``ceil((d +
    32) / W)`` expanded words per row at lane ``d``, so rows shorter than that take that long); TPART*
    with a source stored in the other order: one element per ``K`` cycles.
    """

    name = "elementwise"
    opcodes = EW_OPCODES
    OVERLAP = True
    #: (overlap) Instructions the engine has in flight at most (started, last word not yet taken): the one
    #: it runs and the next, whose setup waits for the walker (the front end holds two per pipe too).
    MAX_IN_FLIGHT = 3
    #: The full operand and the other one, a word each per cycle.
    UB_READ_PORTS = 2
    UB_WRITE = True
    #: Pipeline depths of the lanes (:class:`rtl.engines.elementwise.lanes.ElementwiseLanes` keyword arguments).
    LANE_DEPTHS = {}

    #: Cycles from ``start`` to PARAMS, the walker's ``start``: the ``start`` cycle's decodes, DECODE.
    SETUP_CYCLES = 2
    #: The combiner's operand registers (``a_r``, ``b_r``, ``keep_r``): from a word taken to the lanes.
    COMBINER_CYCLES = 1
    #: Cycles from ``start`` to the first full-operand word at the combiner: setup, the walker's first
    #: segment, its line through the line queue and reader A.
    FIRST_WORD_CYCLES = SETUP_CYCLES + SegmentWalker.LATENCY + QUEUE_CYCLES + UbReader.LATENCY
    #: Cycles from ``start`` to ``done`` beyond ``K`` per destination word and the lanes' latency (TPART*):
    #: the first word at the combiner, its operand registers, less the last word's cycle (counted in the
    #: words).
    FIXED = FIRST_WORD_CYCLES + COMBINER_CYCLES - 1
    #: Cycles TROWEXPAND* adds to :attr:`FIXED` when the first row's expanded line is one word: that
    #: line, queued in PARAMS (``SegmentWalker.LATENCY`` ahead of the full operand's), gives its pattern
    #: ``PatternBuilder.LATENCY`` cycles after its word.
    PATTERN_CYCLES = PatternBuilder.LATENCY - SegmentWalker.LATENCY
    #: Cycles from ``start`` to ``done`` for an empty destination region (``done`` from a register
    #: loaded in the ``start`` cycle).
    EMPTY_CYCLES = 1
    #: Depth of the two operand readers' line queues (``q_a``, ``q_b``).
    LINE_QUEUE_DEPTH = 4
    #: Depth of the writer's line queue (``q_w``): a line waits there from its segment's push until its
    #: word reaches the writer, so one-word segments flow at one per cycle (:meth:`_segments`).
    WRITER_QUEUE_DEPTH = 32
    #: The register stage between a segment's push and its combiner info written (``s_valid``, ``s_t0``).
    INFO_CYCLES = 1
    #: Depth of the combiner's info queue (``q_i``).
    INFO_QUEUE_DEPTH = 16
    #: Free entries ``q_i`` keeps when it says it has room: the entry being written plus one per
    #: :attr:`INFO_CYCLES` (pushes decided before their info is written).
    INFO_QUEUE_SLACK = 1 + INFO_CYCLES
    #: Copies of the combiner's ``odd`` (``W = 16``: the half of the pattern) for ``b``'s selects, a
    #: quarter of the word each.
    ODD_COPIES = 4

    @classmethod
    def cycles(cls, config, cmd):
        """Cycles from ``start`` to ``done`` of ``cmd`` (decoded), or ``None`` where they are not exact:
        TPART* with a source stored in the other order than ``dst`` (the element path) and TROWEXPAND*
        where a row's pattern can be late (:func:`rtl.engines.elementwise.model.cycles`)."""
        return model_cycles(cls, config, cmd)

    @classmethod
    def bound(cls, config, cmd):
        """The narrowest of the lanes / the UB write port (every destination word takes ``K = W /
        ew_lane_bytes`` cycles; on the element path every element is a word) and, TROWEXPAND* mode 2,
        the expanded operand's reader (a block per row)."""
        W, K = config.ub_word_bytes, config.ub_word_bytes // config.ew_lane_bytes
        lines = tile_lines(cmd["dst"])
        op, dst, s0, s1 = Opcode(cmd["opcode"]), cmd["dst"], cmd["src0"], cmd["src1"]
        if not is_rowexpand(op) and not (Layout(s0["layout"]) == Layout(dst["layout"]) == Layout(s1["layout"])):
            return K * dst["valid_rows"] * dst["valid_cols"]
        n = K * sum(words_of(a, b, W) for a, b in lines)
        full_is_1 = (s0["valid_rows"], s0["valid_cols"]) != (dst["valid_rows"], dst["valid_cols"])
        if is_rowexpand(op) and Layout((s0 if full_is_1 else s1)["layout"]) == Layout.ROW_MAJOR:
            n = max(n, sum(words_of(a, PATTERN_BYTES, W) for a, _ in lines))
        return n

    @staticmethod
    def add_checks(m, config, cmd, fail):
        """The family's own rules (:func:`rtl.engines.elementwise.checks.elementwise_checks`)."""
        elementwise_checks(m, config, cmd, fail)

    def elaborate(self, platform):
        """The engine's parts and their connections, section by section (numbered as in the class doc)."""
        require(GO_DELAY <= self.FIRST_WORD_CYCLES,
                f"ElementwiseEngine: go (GO_DELAY = {GO_DELAY} after start) is high before the first word "
                f"reaches the combiner (FIRST_WORD_CYCLES = {self.FIRST_WORD_CYCLES}), which takes nothing "
                f"before go: else cycles() is not exact")
        m = Module()
        cfg = self._config
        m.submodules.walker = walker = SegmentWalker(cfg)
        run_done = Signal()                 # the last word is written this cycle
        # (overlap) the walker's last segment is pushed this cycle
        last_push = Signal() if self._overlap else None
        m.submodules.rd_a = rd_a = UbReader(cfg)
        # (overlap: reader B's lines carry their instruction's parity, so that the pattern builder takes only
        # the words of the combiner's instruction: rtl/engines/elementwise/overlap.py)
        m.submodules.rd_b = rd_b = UbReader(cfg, tag_bits=1 if self._overlap else 0)
        m.submodules.wr = wr = UbWriter(cfg)
        m.submodules.pattern = pat = PatternBuilder(cfg, rd_b.WordLayout)
        m.submodules.lanes = lanes = ElementwiseLanes(cfg.ew_lane_bytes, **self.LANE_DEPTHS)
        wiring.connect(m, rd_a.ub_rd, wiring.flipped(self.ub_rd[0]))
        wiring.connect(m, rd_b.ub_rd, wiring.flipped(self.ub_rd[1]))
        wiring.connect(m, wr.ub_wr, wiring.flipped(self.ub_wr))

        # 1. setup (rtl/engines/elementwise/setup.py)
        d = decode(m, self.cmd, self.start)
        # RUN ends with the last word written, or (overlap) with the walker's last segment: the engine has
        # finished with the held command then
        qb_room = Signal() if self._overlap else None      # (overlap) reader B's line queue has room
        s = setup(m, cfg, self.cmd, self.start, d, walker, rd_b, last_push if self._overlap else run_done,
                  overlap=self._overlap, qb_room=qb_room)
        b_par = Signal(name="b_parity") if self._overlap else None    # (overlap) the walker's instruction's
        info = self._segments(m, s, walker, rd_a, rd_b, wr, lanes, last_push, qb_room, b_par)    # 2. segments
        if self._overlap:                                              # the instructions in flight
            last_fire = Signal()
            ctx = overlap_context(m, d, s, walker.start, last_fire, ~b_par)
            ctx.pattern = pattern_context(m, ctx, rd_b, pat.busy)
        else:
            ctx = SimpleNamespace(trow=s.params.trow, p_is_a=s.p_is_a, p_is_b=s.p_is_b, c_trow=s.c_trow,
                                  c_p_is_a=s.c_p_is_a, pat_esz=s.pat_esz, pat_mode1=s.pat_mode1, pattern=None)
        self._patterns(m, ctx, pat, rd_b)                              # 4. patterns
        oq = self._output_queue(m, lanes)                              # 7. the output queue
        regs = combiner(m, cfg, self.go, oq.room, ctx, info, rd_a, rd_b, pat,   # 5. combiner (combiner.py)
                        odd_copies=self.ODD_COPIES, settling=ctx.pattern and ctx.pattern.settling,
                        b_pattern=ctx.pattern and ctx.pattern.mine)
        if self._overlap:
            m.d.comb += last_fire.eq(regs.last_fire)
        self._lanes_and_writer(m, d, ctx, regs, lanes, oq, wr)         # 6, 7. lanes, queue, writer
        self._control(m, d, s, ctx, regs, lanes, oq, run_done)
        return m

    # ---- 2. segments into the queues of their consumers ---------------------------------------------------

    def _segments(self, m, s, walker, rd_a, rd_b, wr, lanes, last_push, qb_room, b_par):
        """The queues between the walker and its consumers: the line queues of reader A (``q_a``), reader
        B (``q_b``: also the expanded operand's lines, ``pre_line`` first) and the writer (``q_w``), and
        through a register stage the combiner's info queue (``q_i``: the partial source's extent in the
        segment's words, the last-segment mark). The walker steps when every queue has room. Returns
        ``q_i`` and its entries' layout. ``s``: the setup's signals."""
        W = self._config.ub_word_bytes
        sh = W.bit_length() - 1
        params, pre_line, pre_en, e_skip = s.params, s.pre_line, s.pre_en, s.e_skip
        # The walker steps when every queue has room (the flags are registers: FlagFifo). The line queues
        # take the walker's outputs (registers and one select); the combiner's info goes through one
        # register stage first (an add and a compare), so its queue keeps room for one more (INFO_QUEUE_SLACK).
        seg = walker.segs.payload
        q_a = FlagFifo(rd_a.LineLayout.size, self.LINE_QUEUE_DEPTH)
        q_b = FlagFifo(rd_b.LineLayout.size, self.LINE_QUEUE_DEPTH)
        # the writer's lines wait for their words through the whole pipeline: deep enough that one-word
        # segments still flow at one per cycle
        in_flight = QUEUE_CYCLES + UbReader.LATENCY + self.COMBINER_CYCLES + lanes.LATENCY
        require(self.WRITER_QUEUE_DEPTH >= in_flight,
                f"the writer's line queue (WRITER_QUEUE_DEPTH = {self.WRITER_QUEUE_DEPTH}) must hold the lines "
                f"of the one-word segments pushed while one goes from its push to the writer: QUEUE_CYCLES + "
                f"UbReader.LATENCY + COMBINER_CYCLES + lanes' LATENCY = {in_flight}")
        q_w = FlagFifo(wr.LineLayout.size, self.WRITER_QUEUE_DEPTH)
        InfoLayout = data.StructLayout({"words": LINE_BYTES_BITS + 1 - sh, "any": 1, "rem": sh, "fin": 1})
        require(self.INFO_QUEUE_SLACK >= 1 + self.INFO_CYCLES,
                f"q_i's slack ({self.INFO_QUEUE_SLACK}) must cover the entry written and the INFO_CYCLES = "
                f"{self.INFO_CYCLES} register stages between a push and its info's write")
        to_combiner = QUEUE_CYCLES + UbReader.LATENCY
        require(self.INFO_QUEUE_DEPTH >= to_combiner + self.INFO_QUEUE_SLACK,
                f"the combiner's info queue (INFO_QUEUE_DEPTH = {self.INFO_QUEUE_DEPTH}) must hold the "
                f"segments pushed while one goes from its push to the combiner (QUEUE_CYCLES + "
                f"UbReader.LATENCY = {to_combiner}) and keep its slack ({self.INFO_QUEUE_SLACK})")
        q_i = FlagFifo(InfoLayout.size, self.INFO_QUEUE_DEPTH, slack=self.INFO_QUEUE_SLACK)
        m.submodules.q_a, m.submodules.q_b, m.submodules.q_w, m.submodules.q_i = q_a, q_b, q_w, q_i
        room = q_a.w_rdy & q_b.w_rdy & q_w.w_rdy & q_i.w_rdy
        push = Signal()
        m.d.comb += [push.eq(walker.busy & room), walker.segs.ready.eq(room)]
        if last_push is not None:
            m.d.comb += last_push.eq(push & seg.fin)
        a_line, b_line, w_line = Signal(rd_a.LineLayout), Signal(rd_b.LineLayout), Signal(wr.LineLayout)
        m.d.comb += [
            a_line.ub_addr.eq(seg.a_addr), a_line.length.eq(seg.length), a_line.dst_off.eq(seg.dst_off),
            b_line.ub_addr.eq(Mux(params.trow, seg.e_addr, seg.b_addr)),
            b_line.length.eq(Mux(params.trow, seg.e_length, seg.length)),
            b_line.dst_off.eq(Mux(params.trow, seg.e_off, seg.dst_off)),
            w_line.ub_addr.eq(seg.d_addr), w_line.length.eq(seg.length),
            q_a.w_data.eq(a_line), q_b.w_data.eq(Mux(pre_en, pre_line, b_line)), q_w.w_data.eq(w_line),
            q_a.w_en.eq(push), q_w.w_en.eq(push),
            q_b.w_en.eq((pre_en if qb_room is None else pre_en & q_b.w_rdy)
                        | (push & (~params.trow | seg.e_valid) & ~e_skip)),
        ]
        if qb_room is not None:
            m.d.comb += qb_room.eq(q_b.w_rdy)
        if b_par is not None:
            tag_b_lines(m, walker.start, pre_en, pre_line, b_line, q_b, rd_b, b_par)
        # (overlap: not when the next instruction's DECODE sets it, with this instruction's last segment)
        with m.If(push if s.decoding is None else push & ~s.decoding):
            m.d.sync += e_skip.eq(0)
        # the INFO_CYCLES register stage
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
        return SimpleNamespace(q_i=q_i, InfoLayout=InfoLayout)

    # ---- 4. TROWEXPAND*: the expanded operand's words become patterns -------------------------------------

    def _patterns(self, m, ctx, pat, rd_b):
        """Reader B's words into the pattern builder (TROWEXPAND* only), with its mode and element size
        (the setup's RUN copies, or with overlap those of the builder's own instruction, the combiner's or
        the next one, :func:`rtl.engines.elementwise.overlap.pattern_context`; none taken while they
        settle)."""
        pc = ctx.pattern
        if pc is None:
            m.d.comb += [pat.mode1.eq(ctx.pat_mode1), pat.esz.eq(ctx.pat_esz),
                         pat.words.valid.eq(rd_b.words.valid & ctx.c_trow)]
        else:
            m.d.comb += [pat.mode1.eq(pc.mode1), pat.esz.eq(pc.esz),
                         pat.words.valid.eq(rd_b.words.valid & pc.mine & ~pc.settling)]
        m.d.comb += pat.words.payload.eq(rd_b.words.payload)

    # ---- 6, 7. lanes, output queue, writer ------------------------------------------------------------------

    def _output_queue(self, m, lanes):
        """The destination words between the lanes and the writer (:class:`rtl.lib.output_queue.OutputQueue`,
        each word with its ``fin`` mark): the lanes cannot stop, the write port may refuse a word
        (``ub_wr.ready``), so the combiner fires only with the queue's ``room``. A fire becomes a word
        ``COMBINER_CYCLES + (K - 1) + lanes.LATENCY`` cycles later (its K beats through the lanes), and
        fires are at least ``K`` cycles apart."""
        cfg = self._config
        W, K = cfg.ub_word_bytes, cfg.ub_word_bytes // cfg.ew_lane_bytes
        latency = self.COMBINER_CYCLES + (K - 1) + lanes.LATENCY
        oq = OutputQueue(data.StructLayout({"word": 8 * W, "fin": 1}), OutputQueue.depth_for(latency, K),
                         latency, spacing=K,
                         passthrough=not cfg.ub_write_queues)
        m.submodules.out_q = oq
        return oq

    def _lanes_and_writer(self, m, d, ctx, r, lanes, oq, wr):
        """The operand registers' low ``L`` bytes into the lanes (with the instruction's type and op,
        the setup's decoded registers ``d``, or with overlap registers loaded with the operand registers
        from the combiner's instruction's ``ctx``), the lanes' results into the output queue ``oq``: directly
        (K = 1) or the first ``K - 1`` beats of a word shifted into a register and queued with the last;
        the queue's words into the writer."""
        cfg = self._config
        W, L = cfg.ub_word_bytes, cfg.ew_lane_bytes
        K = W // L
        dtype, op = d.dtype, d.op
        if self._overlap:
            dtype, op = Signal.like(d.dtype, name="dtype_r"), Signal.like(d.op, name="op_r")
            with m.If(r.take):
                m.d.sync += [dtype.eq(ctx.dtype), op.eq(ctx.op)]
        m.d.comb += [
            lanes.a.eq(r.a_r[:8 * L]), lanes.b.eq(r.b_r[:8 * L]), lanes.keep_a.eq(r.keep_r[:L]),
            lanes.valid.eq(r.valid_r), lanes.dtype.eq(dtype), lanes.op.eq(op),
        ]
        if K == 1:
            m.d.comb += [oq.i_valid.eq(lanes.out_valid), oq.i_payload.word.eq(lanes.result)]
        else:       # the beats come out in order, K per word: shift the first K - 1 in, queue with the last
            out_beat = Signal(range(K))
            merge = Signal(8 * L * (K - 1), reset_less=True)
            with m.If(lanes.out_valid):
                m.d.sync += [out_beat.eq(Mux(out_beat == K - 1, 0, out_beat + 1)),
                             merge.eq(Cat(merge[8 * L:], lanes.result) if K > 2 else lanes.result)]
            m.d.comb += [oq.i_valid.eq(lanes.out_valid & (out_beat == K - 1)),
                         oq.i_payload.word.eq(Cat(merge, lanes.result))]
        m.d.comb += [wr.words.valid.eq(oq.o.valid), wr.words.payload.eq(oq.o.payload.word),
                     oq.o.ready.eq(wr.words.ready)]

    # ---- control ----------------------------------------------------------------------------------------------

    def _control(self, m, d, s, ctx, r, lanes, oq, run_done):
        """``done``: the last beat's mark, through as many registers as the lanes' ``LATENCY`` beside its
        word and through the output queue with it, in the cycle the writer takes that word; or, for an
        empty region, a register loaded in the ``start`` cycle. ``status`` is always OK (the checker
        rejects what the engine cannot run)."""
        # The last word's mark travels beside it through the lanes and the output queue; ``done`` is the
        # cycle the writer takes the marked word (the UB writes it at that edge). With a write port that
        # is always ready the queue is empty and passes the word on at once, so this is the cycle the
        # mark leaves the lanes, as before the queue.
        fin_out = Signal()
        m.d.sync += fin_out.eq(delay(m, r.fin_beat, lanes.LATENCY - 1, "fin", reset_less=False))
        m.d.comb += oq.i_payload.fin.eq(fin_out)
        last_taken = Signal()
        m.d.comb += last_taken.eq(oq.o.valid & oq.o.ready & oq.o.payload.fin)
        # an empty region is done the cycle after ``start``, from a register (the empty compare of the held
        # command was in front of the front end's status mux)
        empty_done = Signal()
        if not self._overlap:
            m.d.sync += empty_done.eq(self.start & d.empty)
        else:
            release_and_empty(m, self, d, s, ctx, last_taken, empty_done, self.MAX_IN_FLIGHT)
        m.d.comb += [run_done.eq(last_taken), self.done.eq(last_taken | empty_done),
                     self.status.eq(Status.OK)]
