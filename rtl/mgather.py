"""MGATHER: index tiles in the UB turned into GM lines for the transfer engine's read path."""

from amaranth import *
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .checker import exceeds, stage
from .isa import Command, OobMode, Opcode
from .status import Status
from .tile import elem_log2
from .ub import UbReadSignature, UnifiedBuffer
from .walker import LINE_BYTES_BITS

__all__ = ["GatherLine", "GatherRead", "IndexLines", "ElementPlacer", "ModuloPipeline", "mgather_checks"]


def GatherLine(config):
    """A line of the read path. Row mode: one table row. Element mode: a *run*, i.e. up to one index
    word's worth of consecutive destination elements whose table elements share one bus beat (or are
    all ``zero``), written to one UB word.

    ``zero`` lines read nothing and write zeros; ``reuse`` lines take the previous line's beat again
    instead of a new one (coalescing across runs: no AR is issued). Element mode only: ``first`` is the
    index-word lane of the run's first element and ``offs[k]`` the byte offset in the beat of the
    element of lane ``k`` (see :class:`ElementPlacer`).
    """
    W = config.ub_word_bytes
    return data.StructLayout({
        "ub_addr": 24,
        "gm_addr": config.gm_addr_bits,
        "length":  LINE_BYTES_BITS,
        "zero":    1,
        "reuse":   1,
        "first":   range(W // 4),
        "offs":    data.ArrayLayout(range(W), W // 4),
    })


def GatherRead(config):
    """What the address side needs of a line: the bytes to read (``skip``: none, a zero or reuse line)."""
    return data.StructLayout({"gm_addr": config.gm_addr_bits, "length": LINE_BYTES_BITS, "skip": 1})


def mgather_checks(m, config, cmd, fail):
    """MGATHER_ROW / MGATHER_ELEM constraints beyond the common ones (``rtl.checker``), as
    ``golden.check._rules_mgather`` (docs/semantics.md, MGATHER)."""
    op = cmd.opcode
    row = op == Opcode.MGATHER_ROW
    enable = row | (op == Opcode.MGATHER_ELEM)
    dst, idx, gm = cmd.dst, cmd.src0, cmd.gm
    esz = elem_log2(m, dst.dtype)
    row_shape = ((idx.rows != dst.rows) | (idx.cols != 1) | (idx.valid_rows != dst.valid_rows) |
                 (idx.valid_cols != 1) | (gm.cols != dst.valid_cols))
    elem_shape = ((idx.rows != dst.rows) | (idx.cols != dst.cols) | (idx.valid_rows != dst.valid_rows) |
                  (idx.valid_cols != dst.valid_cols))
    fail[Status.SHAPE_MISMATCH].append(enable & Mux(row, row_shape, elem_shape))
    entries = stage(m, Mux(row, gm.rows, gm.rows * gm.cols), "mgather_entries")   # multiplies registered
    span = stage(m, (gm.rows - 1) * gm.row_stride, "mgather_span")
    nonempty = (dst.valid_rows != 0) & (dst.valid_cols != 0)
    fail[Status.DIM_OUT_OF_RANGE].append(enable & nonempty & (entries == 0))
    mask = Signal(2)
    m.d.comb += mask.eq((1 << esz) - 1)
    fail[Status.GM_MISALIGNED].append(enable & (((gm.base & mask) != 0) | (row & ((gm.row_stride & mask) != 0))))
    # one past the last table byte > 2**gm_addr_bits; row: base + (rows - 1) * stride + cols * size,
    # element: base + entries * size (saturating adds: short carry chains)
    limit = 1 << config.gm_addr_bits
    row_end = exceeds(m, [gm.base, span, gm.cols << esz], limit, "mgather_row_end")
    elem_end = exceeds(m, [gm.base, entries << esz], limit, "mgather_elem_end")
    fail[Status.GM_OUT_OF_RANGE].append(enable & (entries != 0) & Mux(row, row_end, elem_end))


class ModuloPipeline(wiring.Component):
    """``u mod s`` for unsigned ``width``-bit operands, one restoring-division step per stage.

    Ports: ``i_valid``, ``i_u``, ``i_s``, ``i_tag`` in; ``o_valid``, ``o_r``, ``o_tag`` out ``width``
    cycles later. No backpressure: the user bounds what is in flight. ``s`` must be non-zero.
    Latency: ``width`` cycles; throughput one per cycle.
    """

    def __init__(self, width, tag_width):
        self._w = width
        super().__init__({
            "i_valid": In(1), "i_u": In(width), "i_s": In(width), "i_tag": In(tag_width),
            "o_valid": Out(1), "o_r": Out(width), "o_tag": Out(tag_width),
        })

    def elaborate(self, platform):
        m = Module()
        w = self._w
        valid, u, s, r, tag = self.i_valid, self.i_u, self.i_s, C(0, w + 1), self.i_tag
        for k in range(w):
            shifted = Cat(u[w - 1 - k], r[:w])              # r * 2 + next bit of u
            nr = Signal(w + 1, name=f"r{k}", reset_less=True)      # data: only the valid bits reset
            m.d.sync += nr.eq(Mux(shifted >= s, shifted - s, shifted))
            nv = Signal(name=f"v{k}")
            nu, ns, nt = (Signal(len(x), name=f"{n}{k}", reset_less=True) for x, n in
                          ((u, "u"), (s, "s"), (tag, "t")))
            m.d.sync += [nv.eq(valid), nu.eq(u), ns.eq(s), nt.eq(tag)]
            valid, u, s, r, tag = nv, nu, ns, nr, nt
        m.d.comb += [self.o_valid.eq(valid), self.o_r.eq(r[:w]), self.o_tag.eq(tag)]
        return m


class IndexLines(wiring.Component):
    """Reads an MGATHER index tile from the UB and emits its lines in row-major order on two streams, each
    a FIFO of ``depth`` lines: ``ar`` (:func:`GatherRead`, for address issue) and ``data``
    (:func:`GatherLine`, for the data path).

    Row mode: one line per destination row. Element mode: the walk takes a *segment* per cycle, the
    indices of one row that share an index word (and a destination word), up to ``W / 4``; their table
    elements are resolved in parallel and the segment leaves as *runs*, one per cycle: maximal groups of
    consecutive elements in the same bus beat (or all ``zero``). A run is one AR (none when it reuses the
    previous run's beat or is ``zero``) and one UB write, so sorted or clustered indices move several
    elements per cycle and random ones one.

    Out-of-bounds handling of an index ``u`` (read as uint32) against the table size ``S``:
    CLAMP -> ``S - 1``; WRAP -> ``u mod S`` (through a :class:`ModuloPipeline`, one index per segment);
    ZERO -> a ``zero`` line; UNDEFINED -> treated as CLAMP (the result is undefined; clamping keeps every
    read inside the table).

    Ports: ``cmd`` (held), ``start`` (pulse), ``ub_rd`` (a UB read port, which must not be used by anyone
    else while the walk runs: its data is held while a segment waits), ``ar``/``data`` (streams out).
    Throughput: one line per cycle. Latency: the first index is read in the ``start`` cycle; its line is
    on ``ar`` 4 cycles later (36 with WRAP; ``ar`` bypasses its FIFO when that is empty) and on ``data``
    5 cycles later (37). Stages, each behind a register so that the unit keeps its clock: 0 walk and
    index read (running pointers, no multiply), 1 index word, 2a resolved indices (out of bounds), 2b
    table addresses and same-beat flags of every lane, then run selection over registers only, 3 the
    run (row mode: row x stride multiplied on the way in, added to the table base on the way out), then
    the FIFOs.
    """

    def __init__(self, config, depth=64):
        self._config = config
        self._depth = depth
        #: index words read ahead: enough for one read per cycle through the UB's read latency
        self._words = UnifiedBuffer.READ_LATENCY + 1
        layout = GatherLine(config)
        super().__init__({
            "cmd": In(Command), "start": In(1),
            "ub_rd": Out(UbReadSignature(config)),
            "ar": Out(stream.Signature(GatherRead(config))),
            "data": Out(stream.Signature(layout)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W = cfg.ub_word_bytes
        sh = W.bit_length() - 1
        L = W // 4                     # indices per UB word
        cmd = self.cmd
        dst, idx, gm = cmd.dst, cmd.src0, cmd.gm
        row = cmd.opcode == Opcode.MGATHER_ROW
        wrap = cmd.oob == OobMode.WRAP
        esz = elem_log2(m, dst.dtype)
        layout = GatherLine(cfg)

        m.submodules.q_ar = q_ar = fifo.SyncFIFO(width=GatherRead(cfg).size, depth=self._depth)
        m.submodules.q_data = q_data = fifo.SyncFIFO(width=layout.size, depth=self._depth)
        m.d.comb += [
            q_ar.r_en.eq(self.ar.ready),
            self.data.valid.eq(q_data.r_rdy), self.data.payload.eq(q_data.r_data),
            q_data.r_en.eq(self.data.ready),
        ]

        size = Signal(32)       # table entries
        m.d.sync += size.eq(Mux(row, gm.rows, gm.rows * gm.cols))

        s1_valid, s1_move = Signal(), Signal()
        s2_valid, s2_done = Signal(), Signal()
        # WRAP only: the modulo pipeline cannot stall, so issue waits for room for every index in it.
        inflight = Signal(range(self._words + UnifiedBuffer.READ_LATENCY + 32 + 2 + 2))
        s3_valid = Signal()      # a run in stage 3 (below), not yet in the FIFOs
        room = ((q_data.level + inflight + s3_valid < self._depth - 1) &
                (q_ar.level + inflight + s3_valid < self._depth - 1))

        # ---- stage 0: walk segments (i, j .. j + n - 1) and read their index word -----------------
        # Running pointers, no multiply: ``idx_ptr``/``dst_ptr`` are the byte addresses of element (i, j)
        # in the index tile and in dst (same cols), ``*_row`` those of (i, 0); strides are shifts of the
        # held command. In the ``start`` cycle (walk idle) the element is (0, 0): the tiles' bases.
        busy = Signal()
        i = Signal(16)           # (i, j) is back at (0, 0) whenever the walk is idle
        j = Signal(16)
        ncols = Mux(row, 1, dst.valid_cols)
        idx_row, idx_ptr, dst_row, dst_ptr = Signal(24), Signal(24), Signal(24), Signal(24)
        idx_stride, dst_stride = Signal(18), Signal(18)
        m.d.comb += [idx_stride.eq(idx.cols << 2), dst_stride.eq(dst.cols << esz)]
        idx_addr, dst_addr = Signal(24), Signal(24)
        m.d.comb += [idx_addr.eq(Mux(busy, idx_ptr, idx.base)), dst_addr.eq(Mux(busy, dst_ptr, dst.base))]
        dst_off = dst_addr[:sh]
        lo = idx_addr[2:sh]
        n = Signal(range(L + 1))
        fit_idx = Signal(range(L + 1))
        fit_dst = Signal(range(W + 1))   # elements left in the destination word (binds only if W > 32)
        rem = Signal(16)
        m.d.comb += [fit_idx.eq(L - lo), fit_dst.eq((W - dst_off) >> esz), rem.eq(ncols - j),
                     n.eq(fit_idx)]
        with m.If(wrap):
            m.d.comb += n.eq(1)
        with m.Else():
            with m.If((rem < fit_idx) & (rem <= fit_dst)):        # n = min(fit_idx, rem, fit_dst)
                m.d.comb += n.eq(rem)
            with m.Elif(fit_dst < fit_idx):
                m.d.comb += n.eq(fit_dst)
        nonempty = (dst.valid_rows != 0) & (dst.valid_cols != 0)
        # Index words come back READ_LATENCY cycles after their read: a read is issued only when a place
        # waits for its word (``credits``: in flight, in the word queue or in stage 1 count).
        credits = Signal(range(self._words + 1), init=self._words)
        issue = (busy | (self.start & nonempty)) & (credits != 0) & (~wrap | room)
        m.d.sync += credits.eq(credits - issue + s1_move)
        m.d.comb += [self.ub_rd.addr.eq(idx_addr >> sh), self.ub_rd.en.eq(issue)]
        with m.If(self.start):
            m.d.sync += [busy.eq(nonempty), idx_row.eq(idx.base), idx_ptr.eq(idx.base),
                         dst_row.eq(dst.base), dst_ptr.eq(dst.base)]
        with m.If(issue):
            with m.If(j + n == ncols):
                m.d.sync += [j.eq(0), i.eq(i + 1), idx_ptr.eq(idx_row + idx_stride),
                             idx_row.eq(idx_row + idx_stride), dst_ptr.eq(dst_row + dst_stride),
                             dst_row.eq(dst_row + dst_stride)]
                with m.If(~busy):            # the start cycle: the rows are the bases
                    m.d.sync += [idx_ptr.eq(idx.base + idx_stride), idx_row.eq(idx.base + idx_stride),
                                 dst_ptr.eq(dst.base + dst_stride), dst_row.eq(dst.base + dst_stride)]
                with m.If(i == dst.valid_rows - 1):
                    m.d.sync += [busy.eq(0), i.eq(0)]
            with m.Else():
                m.d.sync += [j.eq(j + n), idx_ptr.eq(idx_addr + (n << 2)), dst_ptr.eq(dst_addr + (n << esz))]

        # ---- stage 1: the index word (READ_LATENCY cycles after its read) ----------------------------
        # The segment's fields travel beside the read; its word is taken from the UB port as it arrives,
        # straight into stage 1 when that is free and nothing waits, else into the word queue.
        meta = data.StructLayout({"lo": range(L), "n": range(L + 1), "dst": 24})
        a_valid, a_meta = issue, Signal(meta)
        m.d.comb += [a_meta.lo.eq(lo), a_meta.n.eq(n), a_meta.dst.eq(dst_addr)]
        for k in range(UnifiedBuffer.READ_LATENCY):
            nv, nm = Signal(name=f"rd{k}_valid"), Signal(meta, name=f"rd{k}_meta")
            m.d.sync += [nv.eq(a_valid), nm.eq(a_meta)]
            a_valid, a_meta = nv, nm
        m.submodules.q_word = q_word = fifo.SyncFIFO(width=8 * W + meta.size, depth=self._words)
        s1 = Signal(meta)
        word = Signal(8 * W)
        m.d.comb += [
            q_word.w_data.eq(Cat(self.ub_rd.data, a_meta)),
            q_word.w_en.eq(a_valid & (q_word.r_rdy | ~s1_move)),
            q_word.r_en.eq(s1_move),
            s1_valid.eq(q_word.r_rdy | a_valid),
        ]
        with m.If(q_word.r_rdy):
            m.d.comb += [word.eq(q_word.r_data[:8 * W]), s1.eq(q_word.r_data[8 * W:])]
        with m.Else():
            m.d.comb += [word.eq(self.ub_rd.data), s1.eq(a_meta)]
        s1_lo, s1_n, s1_dst = s1.lo, s1.n, s1.dst
        s2a_valid, s2a_move = Signal(), Signal()
        m.d.comb += s1_move.eq(s1_valid & (wrap | ~s2a_valid | s2a_move))
        u = [word.word_select(k, 32) for k in range(L)]

        # ---- stage 2a: out-of-bounds resolution of every lane (WRAP: one lane, through the pipeline) -
        m.submodules.mod = mod = ModuloPipeline(32, 24 + len(s1_lo))
        m.d.comb += [mod.i_valid.eq(s1_valid & wrap), mod.i_u.eq(u[0]), mod.i_s.eq(size),
                     mod.i_tag.eq(Cat(s1_dst, s1_lo))]
        with m.If(wrap):
            m.d.comb += mod.i_u.eq(word.word_select(s1_lo, 32))
        r = [Signal(32, name=f"r{k}", reset_less=True) for k in range(L)]    # resolved table entry per lane
        zero = [Signal(name=f"zero{k}") for k in range(L)]
        pend_a = Signal(L)
        s2a_dst, s2a_lo = Signal(24), Signal(range(L))
        with m.If(s2a_move):
            m.d.sync += s2a_valid.eq(0)
        with m.If(wrap & mod.o_valid):
            m.d.sync += [s2a_valid.eq(1), Cat(s2a_dst, s2a_lo).eq(mod.o_tag),
                         pend_a.eq(C(1, L) << mod.o_tag[24:])]
            m.d.sync += [x.eq(mod.o_r) for x in r] + [z.eq(0) for z in zero]
        with m.Elif(~wrap & s1_move):
            m.d.sync += [s2a_valid.eq(1), s2a_dst.eq(s1_dst), s2a_lo.eq(s1_lo),
                         pend_a.eq(((C(1, L + 1) << s1_n) - 1) << s1_lo)]
            for k in range(L):
                inside = u[k] < size
                m.d.sync += [r[k].eq(Mux(inside, u[k], size - 1)),
                             zero[k].eq((cmd.oob == OobMode.ZERO) & ~inside)]

        # ---- stage 2b: every lane's table address, and which lanes share a beat with the lane before -
        # (registered, so that choosing a run below is logic over registers only)
        ea = [Signal(cfg.gm_addr_bits, name=f"ea{k}", reset_less=True) for k in range(L)]  # element-mode byte address
        zero_b = [Signal(name=f"zero_b{k}") for k in range(L)]
        same = [Signal(name=f"same{k}") for k in range(L)]                   # lane k joins lane k - 1's run
        r_row = Signal(32, reset_less=True)                                 # row mode: the row's index
        pend = Signal(L)                                                    # lanes not yet sent out
        s2_dst, s2_lo = Signal(24), Signal(range(L))
        m.d.comb += s2a_move.eq(s2a_valid & (~s2_valid | s2_done))
        run = Signal(L)                                                     # lanes of the run leaving now
        emit = Signal()
        with m.If(emit):                                        # (a segment loading now overrides)
            m.d.sync += pend.eq(pend & ~run)
        with m.If(s2_done):
            m.d.sync += s2_valid.eq(0)
        with m.If(s2a_move):
            ea_a = [gm.base + (x << esz) for x in r]
            m.d.sync += [s2_valid.eq(1), s2_dst.eq(s2a_dst), s2_lo.eq(s2a_lo), pend.eq(pend_a),
                         r_row.eq(Array(r)[s2a_lo])]
            m.d.sync += [ea[k].eq(ea_a[k]) for k in range(L)] + [zero_b[k].eq(zero[k]) for k in range(L)]
            m.d.sync += [same[k].eq((zero[k] == zero[k - 1]) &
                                    (zero[k] | (ea_a[k][sh:] == ea_a[k - 1][sh:]))) for k in range(1, L)]

        # ---- stage 2b, out: the next run of the segment ----------------------------------------------
        chain = C(0, 1)
        for k in range(L):
            head = pend[k] if k == 0 else pend[k] & ~pend[k - 1]
            chain = head | ((chain & pend[k] & same[k]) if k else C(0, 1))
            m.d.comb += run[k].eq(chain)
        # the pending lanes are contiguous: this run is the segment's last when no neighbouring pending
        # lanes break (two levels of logic, not the run's ripple: it reaches back to the index read)
        last_run = ~Cat(pend[k] & pend[k - 1] & ~same[k] for k in range(1, L)).any() if L > 1 else C(1, 1)
        first = Signal(range(L))
        for k in reversed(range(L)):
            with m.If(pend[k]):
                m.d.comb += first.eq(k)
        count = Signal(range(L + 1))
        m.d.comb += count.eq(sum(run[k] for k in range(L)))
        ea_first, zero_first = Signal(cfg.gm_addr_bits), Signal()
        m.d.comb += [ea_first.eq(Array(ea)[first]), zero_first.eq(Array(zero_b)[first])]

        # Stage 3: the run leaves stage 2 into a register (``s3``), then into the FIFOs. Row mode's table
        # offset (row index x row stride, a 32 x 32 multiply) is computed on the way into s3 and added to
        # the table base on the way out, so no path holds the multiply and an add and the address logic.
        s3_line = Signal(layout, reset_less=True)
        s3_prod = Signal(cfg.gm_addr_bits, reset_less=True)     # row mode: r x gm.row_stride
        s3_out = Signal()                           # s3 leaves into the FIFOs (or straight to ``ar``)
        m.d.comb += [s3_out.eq(s3_valid & q_ar.w_rdy & q_data.w_rdy),
                     emit.eq(s2_valid & (~s3_valid | s3_out))]

        line = Signal(layout)
        m.d.comb += [
            line.gm_addr.eq(ea_first),              # element mode; row mode adds the product in s3
            line.ub_addr.eq(s2_dst + ((first - s2_lo) << esz)),
            line.length.eq(Mux(row, dst.valid_cols << esz, count << esz)),
            line.zero.eq(zero_first),
            line.first.eq(first),
        ]
        m.d.comb += [line.offs[k].eq(ea[k][:sh]) for k in range(L)]
        last_beat = Signal(cfg.gm_addr_bits - sh)
        have_beat = Signal()
        m.d.comb += [
            s2_done.eq(emit & last_run),
            line.reuse.eq(~row & ~zero_first & have_beat & (last_beat == (ea_first >> sh))),
        ]
        with m.If(self.start):
            m.d.sync += have_beat.eq(0)
        with m.Elif(emit & ~zero_first):
            m.d.sync += [last_beat.eq(ea_first >> sh), have_beat.eq(1)]
        with m.If(emit):
            m.d.sync += [s3_valid.eq(1), s3_line.eq(line), s3_prod.eq(r_row * gm.row_stride)]
        with m.Elif(s3_out):
            m.d.sync += s3_valid.eq(0)
        with m.If(self.start):
            m.d.sync += s3_valid.eq(0)

        out = Signal(layout)
        m.d.comb += [out.eq(s3_line), out.gm_addr.eq(Mux(row, gm.base + s3_prod, s3_line.gm_addr))]
        read = Signal(GatherRead(cfg))
        m.d.comb += [
            read.gm_addr.eq(out.gm_addr),
            # an element run's bytes all lie in the beat of its first element
            read.length.eq(Mux(row, out.length, 1)),
            read.skip.eq(out.zero | out.reuse),
        ]
        # The address side bypasses its FIFO when that is empty (the FIFO's write-to-read cycle would
        # delay every instruction's first AR); the data side has the memory latency to hide its own.
        with m.If(q_ar.r_rdy):
            m.d.comb += [self.ar.valid.eq(1), self.ar.payload.eq(q_ar.r_data), q_ar.w_en.eq(s3_out)]
        with m.Else():
            # (only a run that also enters the data FIFO now may leave: else its AR would go out twice)
            m.d.comb += [self.ar.valid.eq(s3_out), self.ar.payload.eq(read),
                         q_ar.w_en.eq(s3_out & ~self.ar.ready)]
        m.d.comb += [q_ar.w_data.eq(read), q_data.w_data.eq(out), q_data.w_en.eq(s3_out)]

        m.d.sync += inflight.eq(inflight + issue - s2_done)
        return m


class ElementPlacer(wiring.Component):
    """Element mode's data path: places a run's elements from one bus beat into one UB word.

    Destination lane ``l`` (byte) in ``[line.ub_addr mod W, + line.length)`` belongs to run element
    ``e = (l - ub_addr mod W) >> esz`` and byte ``b`` of it; it takes beat byte
    ``line.offs[(line.first + e) mod (W / 4)] + b``. ``be`` covers exactly the run's bytes.

    Ports: ``line`` (a :func:`GatherLine`), ``esz`` (log2 element bytes), ``beat`` in; ``data``, ``be``
    out. Purely combinational (a byte crossbar).
    """

    def __init__(self, config):
        self._config = config
        W = config.ub_word_bytes
        super().__init__({
            "line": In(GatherLine(config)), "esz": In(2), "beat": In(8 * W),
            "data": Out(8 * W), "be": Out(W),
        })

    def elaborate(self, platform):
        m = Module()
        W = self._config.ub_word_bytes
        sh = W.bit_length() - 1
        L = W // 4
        line = self.line
        lo = Signal(sh)
        m.d.comb += lo.eq(line.ub_addr[:sh])
        for lane in range(W):
            rel = Signal(sh, name=f"rel{lane}")
            elem = Signal(range(L), name=f"elem{lane}")
            src = Signal(sh, name=f"src{lane}")
            m.d.comb += [
                rel.eq(lane - lo),
                elem.eq(line.first + (rel >> self.esz)),
                src.eq(line.offs[elem] + (rel & ((C(1, 4) << self.esz) - 1))),
                self.data.word_select(lane, 8).eq(self.beat.word_select(src, 8)),
                self.be[lane].eq((lane >= lo) & (lane < lo + line.length)),
            ]
        return m
