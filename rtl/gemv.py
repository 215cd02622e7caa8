"""The GEMV engine: TGEMV, TGEMV_ACC and TGEMV_BIAS (``C[0, j] = init + sum_k A[0, k] * B[k, j]``)."""

from amaranth import *
from amaranth.lib import data, fifo, wiring

from .engine import EngineSignature
from .gemv_mac import PRODUCT_LATENCY, MacArray, MacTag, operand_kind, ring_length
from .gemv_reduce import Reducer, schedule
from .instructions import GEMV_MAX_DIM, INSTRUCTIONS
from .isa import DTYPE_BYTES, DType, Opcode, UB_ALIGN
from .status import Status
from .tile import elem_log2
from .ub_stream import UbReader, UbWriter
from .walker import LINE_BYTES_BITS

__all__ = ["GemvEngine", "GEMV_OPCODES"]

#: The GEMV family (rtl/instructions.py), in opcode order.
GEMV_OPCODES = tuple(op for op, ins in INSTRUCTIONS.items() if ins.family == "gemv")


class GemvEngine(wiring.Component):
    """Executes TGEMV, TGEMV_ACC and TGEMV_BIAS exactly as docs/semantics.md defines them, including the
    float accumulation order for ``P = config.gemv_partial_sums``.

    Parameters: ``config`` (``ub_word_bytes`` = W, ``gemv_lanes``, ``gemv_partial_sums``; needs
    ``ub_read_ports >= 2``, see :meth:`available`).

    Ports: :class:`rtl.engine.EngineSignature` with two UB read ports and the UB write port (no AXI).

    Schedule: the ``N`` output columns are worked through in *blocks* of ``lanes(config, B type)``
    columns. For each block the walker issues one B line per row ``k`` (``B[k, block]``, at most one
    word, any alignment: the UB's two-word window) to UB port 0, and A's row ``A[0, 0:K]`` plus the
    block's init (C_in / bias) to port 1: A is re-read once per block, ``K * size / W`` words.

    Datapath, one row of B per cycle:

    1. setup (``start`` cycle): geometry and operand kinds, registered;
    2. walker: B lines -> :class:`rtl.ub_stream.UbReader` (port 0); per block an (A line, init line)
       pair -> a second reader (port 1), whose words go to the A serializer (one element per row) or
       the init assembler; C lines -> the writer;
    3. fire: a B word and ``A[0, k]`` with their :data:`rtl.gemv_mac.MacTag` into
       :class:`rtl.gemv_mac.MacArray` (products, then the accumulation ring); when ``P`` is smaller
       than the ring's adder, ``R - P`` dummy steps follow every ``P`` products; a block starts only
       when one of the reducer's two banks is free;
    4. :class:`rtl.gemv_reduce.Reducer`: tree and init add per block, in block order;
    5. C words: the block's results shifted to the C line's lanes, into :class:`rtl.ub_stream.UbWriter`.

    Before ``go`` the readers fill their buffers but nothing fires, so nothing is written.

    Latency and throughput: one B row per cycle per block when ``P >= ADD_DEPTH`` (``P / ADD_DEPTH`` of
    that otherwise): ``K * ceil(N / lanes)`` cycles plus the pipeline (walker 1, line FIFO 1, reader
    4, fire 1, products ``PRODUCT_LATENCY``, ring ``R`` steps, reducer ``Reducer.CYCLES``, writer 1).
    The reducer takes one block at a time, so blocks with ``K`` below ``Reducer.CYCLES`` are limited by
    it (see ``make bench``).
    """

    opcodes = GEMV_OPCODES
    #: Cycles from ``start`` to ``done`` beyond the products' steps and the pipeline (walker, line FIFO,
    #: reader, fire, reducer start, writer, done).
    FIXED = 5 + UbReader.LATENCY

    @classmethod
    def latency(cls, config):
        """Cycles from ``start`` to ``done`` beyond the steps of the blocks: ``FIXED`` + products
        (``PRODUCT_LATENCY``) + ring (``R``) + reducer (``Reducer.CYCLES``)."""
        return cls.FIXED + PRODUCT_LATENCY + ring_length(config) + schedule(config.gemv_partial_sums)[1]

    @staticmethod
    def steps(config, K):
        """Ring steps of one block of ``K`` products: ``K``, plus ``R - P`` dummies after every ``P``
        products but the last group when ``P < ADD_DEPTH``."""
        P, R = config.gemv_partial_sums, ring_length(config)
        return K + (-(-K // P) - 1) * (R - P)

    @classmethod
    def cycles(cls, config, K, N, b_dtype):
        """Cycles from ``start`` to ``done`` when the reducer keeps up (``steps(K) > Reducer.CYCLES``):
        one step per cycle for every block, plus :meth:`latency`."""
        return -(-N // cls.lanes(config, b_dtype)) * cls.steps(config, K) + cls.latency(config)

    @staticmethod
    def lanes(config, b_dtype):
        """Products per cycle (output columns per block) for B elements of ``b_dtype``."""
        return min(config.ub_word_bytes // DTYPE_BYTES[DType(b_dtype)], config.gemv_lanes)

    @staticmethod
    def available(config):
        """B and A (or the init) stream at once: the engine needs two UB read ports."""
        return config.ub_read_ports >= 2

    def __init__(self, config):
        self._config = config
        super().__init__(EngineSignature(config, ub_read_ports=2, ub_write=True))

    @staticmethod
    def add_checks(m, config, cmd, fail):
        """The family's shape rules (``golden.check._rules_gemv``); types, layouts and UB ranges are the
        checker's common checks."""
        gemv = Cat(cmd.opcode == op for op in GEMV_OPCODES).any()
        with_init = (cmd.opcode == Opcode.TGEMV_ACC) | (cmd.opcode == Opcode.TGEMV_BIAS)
        c, a, b, i = cmd.dst, cmd.src0, cmd.src1, cmd.src2
        K, N = b.valid_rows, b.valid_cols
        fail[Status.SHAPE_MISMATCH].append(gemv & (
            (a.rows != c.rows) | (a.cols != b.rows) | (b.cols != c.cols) |
            (a.valid_rows != c.valid_rows) | (a.valid_cols != K) | (c.valid_cols != N) |
            (with_init & ((i.rows != c.rows) | (i.cols != c.cols) |
                          (i.valid_rows != c.valid_rows) | (i.valid_cols != c.valid_cols)))))
        fail[Status.DIM_OUT_OF_RANGE].append(gemv & (
            (c.valid_rows != 1) | (K == 0) | (K > GEMV_MAX_DIM) | (N == 0) | (N > GEMV_MAX_DIM)))

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W, HL, P = cfg.ub_word_bytes, cfg.gemv_lanes, cfg.gemv_partial_sums
        R = ring_length(cfg)
        cmd = self.cmd
        c, a, b, i = cmd.dst, cmd.src0, cmd.src1, cmd.src2

        # port 0 reads B rows of a block: at most lanes x size <= min(W, 4 lanes) bytes, to dst_off 0
        m.submodules.rd_b = rd_b = UbReader(cfg, out_bytes=min(W, 4 * HL))
        # port 1 reads A (its tile's base: UB_ALIGN) and the init lines (the block's first column: a
        # multiple of g bytes into a UB_ALIGN-aligned tile), both to dst_off 0
        g = min(UB_ALIGN, 4 * min(W // 4, HL))
        m.submodules.rd_a = rd_a = UbReader(cfg, align=g)
        m.submodules.wr = wr = UbWriter(cfg)
        m.submodules.mac = mac = MacArray(cfg)
        m.submodules.red = red = Reducer(cfg)
        wiring.connect(m, rd_b.ub_rd, wiring.flipped(self.ub_rd[0]))
        wiring.connect(m, rd_a.ub_rd, wiring.flipped(self.ub_rd[1]))
        wiring.connect(m, wr.ub_wr, wiring.flipped(self.ub_wr))

        # ---- 1. setup -------------------------------------------------------------------------------------
        Params = data.StructLayout({
            "esz": 2, "lc": range(HL + 1), "lc_bytes": range(W + 1), "pitch": 18, "K": 13, "kfin": signed(14),
            "b_base": 24, "a_base": 24, "c_base": 24, "i_base": 24, "a_bytes": LINE_BYTES_BITS,
            "has_init": 1, "acc_int": 1, "present": P,
        })
        setup, prm = Signal(Params), Signal(Params)
        esz = elem_log2(m, b.dtype)
        lc = Signal(range(HL + 1))
        with m.Switch(esz):
            for e in range(3):
                with m.Case(e):
                    m.d.comb += lc.eq(min(W >> e, HL))
        m.d.comb += [
            setup.esz.eq(esz), setup.lc.eq(lc), setup.lc_bytes.eq(lc << esz),
            setup.pitch.eq(b.cols << esz), setup.K.eq(b.valid_rows), setup.kfin.eq(b.valid_rows - P),
            setup.b_base.eq(b.base), setup.a_base.eq(a.base), setup.c_base.eq(c.base), setup.i_base.eq(i.base),
            setup.a_bytes.eq(b.valid_rows << esz),
            setup.has_init.eq(cmd.opcode != Opcode.TGEMV), setup.acc_int.eq(c.dtype == DType.INT32),
            setup.present.eq(Cat(b.valid_rows > q for q in range(P))),
        ]
        a_kind, b_kind = Signal.like(mac.a_kind), Signal.like(mac.b_kind)
        with m.If(self.start):
            m.d.sync += [prm.eq(setup), a_kind.eq(operand_kind(m, a.dtype)), b_kind.eq(operand_kind(m, b.dtype))]
        m.d.comb += [mac.a_kind.eq(a_kind), mac.b_kind.eq(b_kind), mac.acc_int.eq(prm.acc_int),
                     red.acc_int.eq(prm.acc_int), red.has_init.eq(prm.has_init), red.present.eq(prm.present)]

        # ---- 2. walker: B lines, (A, init) line pairs, C lines ---------------------------------------------
        q_b = fifo.SyncFIFO(width=rd_b.LineLayout.size, depth=4)
        Pair = data.StructLayout({"a": rd_a.LineLayout, "i": rd_a.LineLayout})
        q_p = fifo.SyncFIFO(width=Pair.size, depth=2)
        q_c = fifo.SyncFIFO(width=wr.LineLayout.size, depth=4)
        m.submodules += [q_b, q_p, q_c]
        walking = Signal()
        wk = Signal(13)                     # row of the next B line
        b_ptr = Signal(24)                  # its UB address
        blk_ptr = Signal(24)                # the block's first column in B's row 0
        ic_off = Signal(24)                 # the block's byte offset in C and in the init tile
        cols = Signal(13)                   # columns from this block on
        ncols = Signal(range(HL + 1))       # the block's columns
        m.d.comb += ncols.eq(Mux(cols < prm.lc, cols, prm.lc))
        blk0 = wk == 0
        push = Signal()
        m.d.comb += push.eq(walking & q_b.w_rdy & (~blk0 | (q_p.w_rdy & q_c.w_rdy)))
        b_line, pair, c_line = Signal(rd_b.LineLayout), Signal(Pair), Signal(wr.LineLayout)
        m.d.comb += [
            b_line.ub_addr.eq(b_ptr), b_line.length.eq(ncols << prm.esz),
            pair.a.ub_addr.eq(prm.a_base), pair.a.length.eq(prm.a_bytes),
            pair.i.ub_addr.eq(prm.i_base + ic_off), pair.i.length.eq(ncols << 2),
            c_line.ub_addr.eq(prm.c_base + ic_off), c_line.length.eq(ncols << 2),
            q_b.w_data.eq(b_line), q_p.w_data.eq(pair), q_c.w_data.eq(c_line),
            q_b.w_en.eq(push), q_p.w_en.eq(push & blk0), q_c.w_en.eq(push & blk0),
        ]
        pending = Signal(range(4096 + 1))   # blocks started by the walker and not yet written
        m.d.sync += pending.eq(pending + (push & blk0) - wr.done)
        with m.If(push):
            with m.If(wk == prm.K - 1):
                m.d.sync += [wk.eq(0), blk_ptr.eq(blk_ptr + prm.lc_bytes), b_ptr.eq(blk_ptr + prm.lc_bytes),
                             ic_off.eq(ic_off + (prm.lc << 2)), cols.eq(cols - ncols)]
                with m.If(cols <= prm.lc):
                    m.d.sync += walking.eq(0)
            with m.Else():
                m.d.sync += [wk.eq(wk + 1), b_ptr.eq(b_ptr + prm.pitch)]
        m.d.comb += [rd_b.lines.valid.eq(q_b.r_rdy), rd_b.lines.payload.eq(q_b.r_data), q_b.r_en.eq(rd_b.lines.ready),
                     wr.lines.valid.eq(q_c.r_rdy), wr.lines.payload.eq(q_c.r_data), q_c.r_en.eq(wr.lines.ready)]

        # port 1: A line then (ACC / BIAS) the init line of each pair; words dispatched in the same order
        head = Signal(Pair)
        m.d.comb += head.eq(q_p.r_data)
        in_i = Signal()                     # the next line to issue is the pair's init line
        m.d.comb += [rd_a.lines.valid.eq(q_p.r_rdy), rd_a.lines.payload.eq(Mux(in_i, head.i, head.a))]
        with m.If(rd_a.lines.valid & rd_a.lines.ready):
            m.d.comb += q_p.r_en.eq(in_i | ~prm.has_init)
            m.d.sync += in_i.eq(~in_i & prm.has_init)
        out_i = Signal()                    # the words on rd_a are the init line's
        a_take, i_take = Signal(), Signal()
        word = rd_a.words.payload
        m.d.comb += rd_a.words.ready.eq(Mux(out_i, i_take, a_take))
        with m.If(rd_a.words.valid & rd_a.words.ready & word.last):
            m.d.sync += out_i.eq(~out_i & prm.has_init)

        # init assembler: an init line's words (dst_off 0) into one vector of lanes x 32 bits
        q_init = fifo.SyncFIFO(width=32 * HL, depth=2)
        m.submodules.q_init = q_init
        NWI = -(-4 * HL // W)
        ivec = Signal(32 * HL)
        iw = Signal(range(NWI + 1))
        m.d.comb += i_take.eq(rd_a.words.valid & out_i & (~word.last | q_init.w_rdy))
        if NWI == 1:
            m.d.comb += q_init.w_data.eq(word.data[:32 * HL])
        else:
            m.d.comb += q_init.w_data.eq(ivec)
            for w in range(NWI):
                m.d.comb += q_init.w_data.word_select(w, 8 * W).eq(Mux(iw == w, word.data, ivec.word_select(w, 8 * W)))
            with m.If(i_take):
                m.d.sync += [ivec.word_select(iw, 8 * W).eq(word.data), iw.eq(Mux(word.last, 0, iw + 1))]
        m.d.comb += q_init.w_en.eq(i_take & word.last)
        m.d.comb += [red.init.valid.eq(q_init.r_rdy), red.init.payload.eq(q_init.r_data),
                     q_init.r_en.eq(red.init.ready)]

        # A serializer: one element of the current A word per product
        cur = Signal(8 * W)
        cur_valid = Signal()
        e = Signal(range(W))
        a_elem = Signal(32)
        last_e = Signal()
        with m.Switch(prm.esz):
            for z in range(3):
                with m.Case(z):
                    m.d.comb += [a_elem.eq(cur.word_select(e[:(W >> z).bit_length() - 1], 8 << z)),
                                 last_e.eq(e == (W >> z) - 1)]

        # ---- 3. fire --------------------------------------------------------------------------------------
        k = Signal(13)
        bank = Signal()
        credits = Signal(2, init=2)
        fire, dummy = Signal(), Signal()
        if R > P:
            gpos = Signal(range(R))
            m.d.comb += dummy.eq(self.go & (gpos >= P))
        gated = dummy if R > P else C(0)
        m.d.comb += fire.eq(self.go & cur_valid & rd_b.words.valid & ((k != 0) | (credits != 0)) & ~gated)
        last_k = k == prm.K - 1
        pop = fire & (last_e | last_k)
        m.d.comb += [a_take.eq(rd_a.words.valid & ~out_i & (~cur_valid | pop)), rd_b.words.ready.eq(fire)]
        with m.If(a_take):
            m.d.sync += [cur.eq(word.data), cur_valid.eq(1), e.eq(0)]
        with m.Elif(pop):
            m.d.sync += [cur_valid.eq(0), e.eq(0)]
        with m.Elif(fire):
            m.d.sync += e.eq(e + 1)
        with m.If(fire):
            m.d.sync += [k.eq(Mux(last_k, 0, k + 1)), bank.eq(bank ^ last_k)]
        if R > P:
            with m.If(fire):
                m.d.sync += gpos.eq(Mux(last_k, 0, gpos + 1))
            with m.Elif(dummy):
                m.d.sync += gpos.eq(Mux(gpos == R - 1, 0, gpos + 1))
        m.d.sync += credits.eq(credits - (fire & (k == 0)) + red.bank_free)
        tag = Signal(MacTag)
        m.d.comb += [
            tag.real.eq(fire), tag.first.eq(k < P), tag.final.eq(k.as_signed() >= prm.kfin),
            tag.last.eq(fire & last_k), tag.q.eq(k[:max(1, P.bit_length() - 1)] if P > 1 else 0), tag.bank.eq(bank),
            mac.valid.eq(fire | dummy if R > P else fire), mac.tag.eq(tag), mac.a.eq(a_elem),
            mac.b.eq(rd_b.words.payload.data),
        ]
        m.d.comb += [red.fin_valid.eq(mac.fin_valid), red.fin_q.eq(mac.fin_q), red.fin_bank.eq(mac.fin_bank),
                     red.fin_last.eq(mac.fin_last), red.fin_data.eq(mac.fin_data)]

        # ---- 5. C words: the block's results in the C line's lanes ------------------------------------------
        # A C line starts at C.base + block * lanes * 4: a multiple of g bytes (bases are UB_ALIGN-aligned).
        wc_off = Signal(range(W))           # the current C line's first lane
        wi = Signal(range(-(-(W + 4 * HL) // W) + 1))
        ext = Cat(C(0, 8 * W), red.result.payload, C(0, 8 * W))
        out_word = Signal(8 * W)
        with m.Switch(wc_off):
            for off in range(0, W, g):
                with m.Case(off):
                    nw = -(-(off + 4 * HL) // W)
                    words = [ext[8 * (W + w * W - off):8 * (2 * W + w * W - off)] for w in range(nw)]
                    m.d.comb += out_word.eq(Array(words)[wi] if nw > 1 else words[0])
        m.d.comb += [wr.words.valid.eq(red.result.valid), wr.words.payload.eq(out_word),
                     red.result.ready.eq(wr.done)]
        with m.If(wr.words.valid & wr.words.ready):
            m.d.sync += wi.eq(Mux(wr.done, 0, wi + 1))
        with m.If(wr.done):
            m.d.sync += wc_off.eq(wc_off + (prm.lc << 2))

        # ---- control ------------------------------------------------------------------------------------
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [walking.eq(1), wk.eq(0), b_ptr.eq(b.base), blk_ptr.eq(b.base), ic_off.eq(0),
                                 cols.eq(b.valid_cols), wc_off.eq(c.base[:W.bit_length() - 1]), wi.eq(0),
                                 k.eq(0), in_i.eq(0), out_i.eq(0)]
                    m.next = "RUN"
            with m.State("RUN"):
                with m.If(~walking & (pending == 0)):
                    m.d.comb += [self.done.eq(1), self.status.eq(Status.OK)]
                    m.next = "IDLE"
        return m
