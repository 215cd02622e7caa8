"""The GEMV engine: TGEMV, TGEMV_ACC and TGEMV_BIAS (``C[0, j] = init + sum_k A[0, k] * B[k, j]``)."""

from amaranth import *
from amaranth.lib import data, fifo, wiring

from rtl.engines.base import Engine
from rtl.engines.gemv.mac import MacArray, MacTag, mac_latency, ring_length
from rtl.engines.gemv.operands import operand_kind
from rtl.engines.gemv.reduce import Reducer, schedule, turnaround
from rtl.isa import DTYPE_BYTES, GEMV_MAX_DIM, INSTRUCTIONS, UB_ALIGN, DType, Opcode, Status
from rtl.lib.fanout import variant_copies
from rtl.lib.tile import LINE_BYTES_BITS, elem_log2
from rtl.ub.reader import UbReader
from rtl.ub.writer import UbWriter

__all__ = ["GemvEngine", "GEMV_OPCODES"]

#: The GEMV family (rtl/isa/instructions.py), in opcode order.
GEMV_OPCODES = tuple(op for op, ins in INSTRUCTIONS.items() if ins.family == "gemv")


class GemvEngine(Engine):
    """Executes TGEMV, TGEMV_ACC and TGEMV_BIAS exactly as docs/semantics.md defines them, including the
    float accumulation order for ``P = config.gemv_partial_sums``.

    Parameters: ``config`` (``ub_word_bytes`` = W, ``gemv_lanes``, ``gemv_partial_sums``; needs
    ``ub_read_ports >= 2``, see :meth:`available`).

    Ports: :class:`rtl.engines.base.EngineSignature` with two UB read ports and the UB write port (no AXI).

    Schedule: the ``N`` output columns are worked through in *blocks* of ``lanes(config, B type)``
    columns. For each block the walker issues one B line per row ``k`` (``B[k, block]``, at most one
    word, any alignment: the UB's two-word window) to UB port 0, and A's row ``A[0, 0:K]`` plus the
    block's init (C_in / bias) to port 1: A is re-read once per block, ``K * size / W`` words.

    Datapath, one row of B per cycle:

    1. setup (``start`` cycle): geometry, operand kinds and the constants the counters compare with,
       registered (nothing later is computed from ``cmd``);
    2. walker: B lines -> :class:`rtl.ub.reader.UbReader` (port 0); per block an (A line, init line)
       pair -> a second reader (port 1), whose words go to the A serializer or the init assembler; C
       lines -> the writer. The line FIFOs' room is tracked in registers;
    3. fire: a B word and ``A[0, k]`` with their :data:`rtl.engines.gemv.mac.MacTag` into
       :class:`rtl.engines.gemv.mac.MacArray` (products, then the accumulation ring); when ``P`` is smaller
       than the ring's adder, ``R - P`` dummy steps follow every ``P`` products; a block starts only
       when one of the reducer's two banks is free. The A serializer is a shift register (the next
       element always in its low bits) with a second word behind it; the counters' comparisons are
       flags registered with every product, so ``fire`` is one gate over four registers;
    4. :class:`rtl.engines.gemv.reduce.Reducer`: tree and init add per block, in block order;
    5. C words: the block's results shifted to the C line's lanes, into :class:`rtl.ub.writer.UbWriter`.

    Before ``go`` the readers fill their buffers but nothing fires, so nothing is written. ``done``
    when every block's C line is written (a count from ``start``).

    Latency and throughput: one B row per cycle per block when ``P >= ADD_DEPTH`` (``P / ADD_DEPTH`` of
    that otherwise): ``K * ceil(N / lanes)`` cycles plus :meth:`latency` (``FIXED`` 12, the last
    product to its partial sum ``mac_latency`` 16, the reducer ``Reducer.CYCLES`` 32: 60 for P = 8).
    The reducer starts a block at most every ``Reducer.INTERVAL`` (26) cycles, so blocks shorter than
    :meth:`keep_up` (26 steps for P = 8) wait for it (see ``make bench``).
    """

    name = "gemv"
    opcodes = GEMV_OPCODES
    UB_READ_PORTS = 2           # B on one, A (or the init) on the other
    UB_WRITE = True
    #: Cycles from ``start`` to ``done`` beyond the products' steps and the pipeline: walker 1, line FIFO
    #: 1, the reader (``UbReader.LATENCY``), the A word's register ``nxt`` 1, fire 1, writer and done 1
    #: (the reducer starts in the cycle the block's last partial sum is written).
    FIXED = 5 + UbReader.LATENCY

    @classmethod
    def latency(cls, config):
        """Cycles from ``start`` to ``done`` beyond the steps of the blocks: ``FIXED`` + the last product
        to its sum (``rtl.engines.gemv.mac.mac_latency``: ``PRODUCT_LATENCY + ADD_DEPTH``) + the reducer
        (``Reducer.CYCLES``)."""
        return cls.FIXED + mac_latency(config) + schedule(config.gemv_partial_sums)[1]

    @staticmethod
    def steps(config, K):
        """Ring steps of one block of ``K`` products: ``K``, plus ``R - P`` dummies after every ``P``
        products but the last group when ``P < ADD_DEPTH``."""
        P, R = config.gemv_partial_sums, ring_length(config)
        return K + (-(-K // P) - 1) * (R - P)

    @staticmethod
    def keep_up(config):
        """The fewest steps per block for which the reducer keeps up, so that :meth:`cycles` is exact: a
        block's reduction may start ``Reducer.INTERVAL`` cycles after the previous one's, and a block
        starts only into a bank the reducer has read for the last time (``Reducer.LAST_READ``), which is
        ``mac_latency + LAST_READ + 1`` cycles after the block before the previous one ended
        (:func:`rtl.engines.gemv.reduce.turnaround`)."""
        last_read, _, _, interval = turnaround(config.gemv_partial_sums)
        return max(interval, mac_latency(config) + last_read + 1)

    @classmethod
    def cycles(cls, config, K, N, b_dtype):
        """Cycles from ``start`` to ``done`` when the reducer keeps up (``steps(K) >= keep_up``): one
        step per cycle for every block, plus :meth:`latency`."""
        return -(-N // cls.lanes(config, b_dtype)) * cls.steps(config, K) + cls.latency(config)

    @staticmethod
    def lanes(config, b_dtype):
        """Products per cycle (output columns per block) for B elements of ``b_dtype``."""
        return min(config.ub_word_bytes // DTYPE_BYTES[DType(b_dtype)], config.gemv_lanes)

    @classmethod
    def bound(cls, config, cmd):
        """One B row of a block of :meth:`lanes` columns per cycle: ``K * ceil(N / lanes)``."""
        b = cmd["src1"]
        return b["valid_rows"] * -(-b["valid_cols"] // cls.lanes(config, b["dtype"]))

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

        # ---- 1. setup: everything derived from the command, registered at start -----------------------------
        Params = data.StructLayout({
            "esz": 2, "lc": range(HL + 1), "lc_bytes": range(W + 1), "pitch": 18, "K": 13,
            "km2": 13,                      # K - 2: the row before the last
            "kfin1": signed(14),            # K - P - 1: the product before the first final one
            "pw2": range(W),                # (W >> esz) - 2: the element before a word's last
            "b_base": 24, "a_base": 24, "c_base": 24, "i_base": 24, "a_bytes": LINE_BYTES_BITS,
            "has_init": 1, "acc_int": 1, "present": P,
            "last_n": range(HL + 1),        # the last block's columns: N mod lc, or lc
        })
        setup = Signal(Params)
        prm = Signal(Params, reset_less=True)
        esz = elem_log2(m, b.dtype)
        lc = Signal(range(HL + 1))
        pw2 = Signal(range(W))
        with m.Switch(esz):
            for e in range(3):
                with m.Case(e):
                    m.d.comb += [lc.eq(min(W >> e, HL)), pw2.eq((W >> e) - 2)]
        K = b.valid_rows
        m.d.comb += [
            setup.esz.eq(esz), setup.lc.eq(lc), setup.lc_bytes.eq(lc << esz), setup.pw2.eq(pw2),
            setup.pitch.eq(b.cols << esz), setup.K.eq(K), setup.km2.eq(K - 2), setup.kfin1.eq(K - P - 1),
            setup.b_base.eq(b.base), setup.a_base.eq(a.base), setup.c_base.eq(c.base), setup.i_base.eq(i.base),
            setup.a_bytes.eq(K << esz),
            setup.has_init.eq(cmd.opcode != Opcode.TGEMV), setup.acc_int.eq(c.dtype == DType.INT32),
            setup.present.eq(Cat(K > q for q in range(P))),
            setup.last_n.eq(Mux((b.valid_cols & (lc - 1)) == 0, lc, b.valid_cols & (lc - 1))),
        ]
        a_kind = Signal.like(mac.a_kind, reset_less=True)
        b_kind = Signal.like(mac.b_kind, reset_less=True)
        with m.If(self.start):
            m.d.sync += [prm.eq(setup), a_kind.eq(operand_kind(m, a.dtype)), b_kind.eq(operand_kind(m, b.dtype))]
        # the MAC array's own copy of ``acc_int`` (a cycle late: its first step is a UB read after
        # ``start``): it selects every lane's 32-bit sum, which the reducer's LUT RAM stores; one register
        # for both was the worst path of `small` at seeds 1 and 2 (9.4-10.0 ns, docs/synthesis.md)
        acc_int_mac = Signal(reset_less=True)
        m.d.sync += acc_int_mac.eq(prm.acc_int)
        m.d.comb += [mac.a_kind.eq(a_kind), mac.b_kind.eq(b_kind), mac.acc_int.eq(acc_int_mac),
                     red.acc_int.eq(prm.acc_int), red.has_init.eq(prm.has_init), red.present.eq(prm.present)]

        # ---- 2. walker: B lines, (A, init) line pairs, C lines ---------------------------------------------
        q_b = fifo.SyncFIFO(width=rd_b.LineLayout.size, depth=4)
        Pair = data.StructLayout({"a": rd_a.LineLayout, "i": rd_a.LineLayout})
        q_p = fifo.SyncFIFO(width=Pair.size, depth=2)
        q_c = fifo.SyncFIFO(width=wr.LineLayout.size, depth=4)
        m.submodules += [q_b, q_p, q_c]
        walking = Signal()
        wk = Signal(13, reset_less=True)    # row of the next B line
        blk0 = Signal(reset_less=True)      # wk == 0: the block's first line (queues its A / init and C lines)
        wk_last = Signal(reset_less=True)   # wk == K - 1: the block's last line
        b_ptr = Signal(24, reset_less=True)     # its UB address
        blk_ptr = Signal(24, reset_less=True)   # the block's first column in B's row 0
        ic_off = Signal(24, reset_less=True)    # the block's byte offset in C and in the init tile
        # blocks left to walk (this one included) and "this is the last": a count and a flag, not a
        # compare and subtract of the columns left (20 cells in one cycle, 9.6 ns in ``small`` seed 2)
        wblk = Signal(13, reset_less=True)
        last_blk = Signal(reset_less=True)
        ncols = Signal(range(HL + 1))           # the block's columns
        m.d.comb += ncols.eq(Mux(last_blk, prm.last_n, prm.lc))
        # room in the line FIFOs for the next push, registers: a FIFO has room in the next cycle if its level
        # plus this cycle's push is below its depth (pops only add room)
        push = Signal()
        b_room, pc_room = Signal(init=1), Signal(init=1)
        m.d.comb += push.eq(walking & b_room & (~blk0 | pc_room))
        m.d.sync += [b_room.eq(q_b.w_level + push < q_b.depth),
                     pc_room.eq((q_p.w_level + (push & blk0) < q_p.depth) & (q_c.w_level + (push & blk0) < q_c.depth))]
        b_line, pair, c_line = Signal(rd_b.LineLayout), Signal(Pair), Signal(wr.LineLayout)
        m.d.comb += [
            b_line.ub_addr.eq(b_ptr), b_line.length.eq(ncols << prm.esz),
            pair.a.ub_addr.eq(prm.a_base), pair.a.length.eq(prm.a_bytes),
            pair.i.ub_addr.eq(prm.i_base + ic_off), pair.i.length.eq(ncols << 2),
            c_line.ub_addr.eq(prm.c_base + ic_off), c_line.length.eq(ncols << 2),
            q_b.w_data.eq(b_line), q_p.w_data.eq(pair), q_c.w_data.eq(c_line),
            q_b.w_en.eq(push), q_p.w_en.eq(push & blk0), q_c.w_en.eq(push & blk0),
        ]
        left = Signal(13)                   # blocks not yet written (ceil(N / lc), from start)
        with m.If(wr.done):
            m.d.sync += left.eq(left - 1)
        with m.If(push):
            with m.If(wk_last):
                m.d.sync += [wk.eq(0), blk0.eq(1), wk_last.eq(prm.K == 1),
                             blk_ptr.eq(blk_ptr + prm.lc_bytes), b_ptr.eq(blk_ptr + prm.lc_bytes),
                             ic_off.eq(ic_off + (prm.lc << 2)), wblk.eq(wblk - 1), last_blk.eq(wblk == 2)]
                with m.If(last_blk):
                    m.d.sync += walking.eq(0)
            with m.Else():
                m.d.sync += [wk.eq(wk + 1), blk0.eq(0), wk_last.eq(wk == prm.km2), b_ptr.eq(b_ptr + prm.pitch)]
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
        with m.If(rd_a.words.valid & rd_a.words.ready & word.last):
            m.d.sync += out_i.eq(~out_i & prm.has_init)

        # init assembler: an init line's words (dst_off 0) into one vector of lanes x 32 bits, then into the
        # init FIFO (``ipend``: the vector is complete and waits for room there)
        q_init = fifo.SyncFIFO(width=32 * HL, depth=2)
        m.submodules.q_init = q_init
        NWI = -(-4 * HL // W)
        ivec = Signal(32 * HL, reset_less=True)
        iw = Signal(range(NWI + 1))
        ipend = Signal()
        m.d.comb += i_take.eq(rd_a.words.valid & out_i & ~ipend)
        with m.If(i_take):
            if NWI == 1:
                m.d.sync += ivec.eq(word.data[:32 * HL])
            else:
                m.d.sync += [ivec.word_select(iw, 8 * W).eq(word.data), iw.eq(Mux(word.last, 0, iw + 1))]
            with m.If(word.last):
                m.d.sync += ipend.eq(1)
        with m.Elif(q_init.w_rdy):
            m.d.sync += ipend.eq(0)
        m.d.comb += [q_init.w_data.eq(ivec), q_init.w_en.eq(ipend)]
        m.d.comb += [red.init.valid.eq(q_init.r_rdy), red.init.payload.eq(q_init.r_data),
                     q_init.r_en.eq(red.init.ready)]

        # A serializer: ``cur`` holds the current A word, its next element in the low bits (it shifts by
        # one element per product: no element select); ``nxt`` the following word, so that taking a word
        # from the reader depends on registers only, never on ``fire``. Every word goes through ``nxt``:
        # the reader's head is LUT RAM read asynchronously, too slow to reach ``cur``'s multiplexers
        # in the same cycle (10.5 ns in default, seed 2, at 3d1e861). (W >= 16: a word holds >= 4
        # elements, so a word just loaded never holds its last element.) ``cur`` is driven in G byte
        # groups, each from its own copies of the registers its enable and select come from (fan-out).
        G = min(W // 4, 4)
        starting = Signal()                 # IDLE and start
        cur = Signal(8 * W, reset_less=True)
        nxt = Signal(8 * W, reset_less=True)
        cur_valid_n, nxt_valid_n, last_e_n, last_k_n, ok_n = Signal(), Signal(), Signal(), Signal(), Signal()
        cur_valid = variant_copies(m, "cur_valid", cur_valid_n, G)
        nxt_valid = variant_copies(m, "nxt_valid", nxt_valid_n, G)
        last_e = variant_copies(m, "last_e", last_e_n, G)      # the element in ``cur``'s low bits is its last
        last_k = variant_copies(m, "last_k", last_k_n, G)      # k == K - 1 (below)
        ok = variant_copies(m, "ok", ok_n, G)                  # a product may fire (below)
        esz_g = variant_copies(m, "esz", prm.esz, G)           # constant during the instruction
        e = Signal(range(W), reset_less=True)           # elements of ``cur`` used
        # the reader's ready comes from registers only (a wide buffer hangs on it)
        a_room = Signal()
        m.d.comb += [a_room.eq(~(cur_valid[0] & nxt_valid[0])), a_take.eq(rd_a.words.valid & ~out_i & a_room),
                     rd_a.words.ready.eq(Mux(out_i, ~ipend, a_room))]

        # ---- 3. fire --------------------------------------------------------------------------------------
        # The product counter k and its flags are registers, updated with every product; so is ``ok``, the
        # part of the fire condition that is the engine's own state (a block may start: a reducer bank is
        # free; not a dummy step), computed from the next state: fire is one gate over four registers.
        k = Signal(13, reset_less=True)
        k0 = Signal(reset_less=True)            # k == 0: a block starts (needs a free reducer bank)
        first = Signal(reset_less=True)         # k < P
        final = Signal(reset_less=True)         # k >= K - P
        bank = Signal()
        credits = Signal(2, init=2)             # reducer banks free for a new block
        fire, dummy = Signal(), Signal()
        k0_n, credits_n, in_dummy_n = Signal(), Signal(2), Signal()
        # ``go`` through local copies, a cycle late (the front end's register drove every group from
        # across the die): the first product needs the first B word, which comes later than that
        # (``FIXED`` > ``GO_DELAY`` + 1), so no cycle is lost; after ``done`` nothing is left to fire.
        go = variant_copies(m, "go", self.go, G)
        if R > P:
            gpos = Signal(range(R), reset_less=True)    # position in the group of R steps
            in_dummy = Signal(reset_less=True)          # gpos >= P: the group's dummy steps
            m.d.comb += dummy.eq(go[0] & in_dummy)
        fires = [go[x] & cur_valid[x] & rd_b.words.valid & ok[x] for x in range(G)]
        m.d.comb += fire.eq(fires[0])
        # ``cur`` moves on when it is empty or with every product (``fire`` reaches it as a clock enable
        # only): to the next word (``nxt``, or the reader's word when both are empty) after its last
        # element or the block's last product, else by one element. A word from the reader goes into
        # ``nxt`` unless both are empty.
        gb = 8 * W // G
        for x in range(G):
            part = slice(gb * x, gb * (x + 1))
            shifted = Signal(8 * W, name=f"shifted{x}")
            with m.Switch(esz_g[x]):
                for z in range(3):
                    with m.Case(z):
                        m.d.comb += shifted.eq(cur >> (8 << z))
            with m.If(fires[x] | ~cur_valid[x]):
                with m.If(~cur_valid[x] | last_e[x] | last_k[x]):
                    m.d.sync += cur[part].eq(nxt[part])
                with m.Else():
                    m.d.sync += cur[part].eq(shifted[part])
        cur_ce, endw = Signal(), Signal()
        m.d.comb += [cur_ce.eq(fire | ~cur_valid[0]), endw.eq(~cur_valid[0] | last_e[0] | last_k[0])]
        with m.If(a_take):
            m.d.sync += nxt.eq(word.data)
        with m.If(cur_ce & endw):          # the next word (if any) into cur; a word taken now goes to nxt
            m.d.comb += [cur_valid_n.eq(nxt_valid[0]), nxt_valid_n.eq(a_take), last_e_n.eq(0)]
            m.d.sync += e.eq(0)
        with m.Else():
            m.d.comb += [cur_valid_n.eq(cur_valid[0]), nxt_valid_n.eq(nxt_valid[0] | a_take),
                         last_e_n.eq(Mux(cur_ce, e == prm.pw2, last_e[0]))]
            with m.If(cur_ce):
                m.d.sync += e.eq(e + 1)
        m.d.comb += rd_b.words.ready.eq(fire)
        m.d.comb += [k0_n.eq(Mux(fire, last_k[0], k0)), credits_n.eq(credits - (fire & k0) + red.bank_free)]
        with m.If(starting):
            m.d.comb += last_k_n.eq(K == 1)
        with m.Elif(fire):
            m.d.comb += last_k_n.eq(Mux(last_k[0], prm.K == 1, k == prm.km2))
        with m.Else():
            m.d.comb += last_k_n.eq(last_k[0])
        with m.If(fire):
            with m.If(last_k[0]):
                m.d.sync += [k.eq(0), first.eq(1), final.eq(prm.kfin1 < 0), bank.eq(~bank)]
            with m.Else():
                m.d.sync += [k.eq(k + 1), first.eq(k < P - 1), final.eq(k.as_signed() >= prm.kfin1)]
        if R > P:
            with m.If(fire):
                m.d.sync += gpos.eq(Mux(last_k[0], 0, gpos + 1))
                m.d.comb += in_dummy_n.eq(~last_k[0] & (gpos == P - 1))
            with m.Elif(dummy):
                m.d.sync += gpos.eq(Mux(gpos == R - 1, 0, gpos + 1))
                m.d.comb += in_dummy_n.eq(gpos != R - 1)
            with m.Else():
                m.d.comb += in_dummy_n.eq(in_dummy)
            m.d.sync += in_dummy.eq(in_dummy_n)
        m.d.sync += [k0.eq(k0_n), credits.eq(credits_n)]
        m.d.comb += ok_n.eq(Mux(starting, credits_n != 0, (~k0_n | (credits_n != 0)) & ~in_dummy_n))
        tag = Signal(MacTag)
        m.d.comb += [
            tag.real.eq(fire), tag.first.eq(first), tag.final.eq(final),
            tag.last.eq(fire & last_k[0]), tag.q.eq(k[:max(1, P.bit_length() - 1)] if P > 1 else 0), tag.bank.eq(bank),
            mac.valid.eq(fire | dummy if R > P else fire), mac.tag.eq(tag), mac.a.eq(cur[:32]),
            mac.b.eq(rd_b.words.payload.data),
        ]
        m.d.comb += [red.fin_valid.eq(mac.fin_valid), red.fin_q.eq(mac.fin_q), red.fin_bank.eq(mac.fin_bank),
                     red.fin_last.eq(mac.fin_last), red.fin_data.eq(mac.fin_data)]

        # ---- 5. C words: the block's results in the C line's lanes ------------------------------------------
        # A C line starts at C.base + block * lanes * 4: a multiple of g bytes (bases are UB_ALIGN-aligned).
        # The current C line's first lane, in G copies, each selecting a slice of the word (one register
        # drove every bit's multiplexer: 10.0 ns in ``default`` seed 2 at 1203a0e). Copy x holds the
        # offset XOR x, so that synthesis keeps the copies apart.
        wc_reg = [Signal(range(W), name=f"wc_off{x}", reset_less=True) for x in range(G)]
        wc_off = [r ^ x for x, r in enumerate(wc_reg)]
        wi = Signal(range(-(-(W + 4 * HL) // W) + 1))
        ext = Cat(C(0, 8 * W), red.result.payload, C(0, 8 * W))
        out_word = Signal(8 * W)
        for x in range(G):
            part = slice(gb * x, gb * (x + 1))
            with m.Switch(wc_off[x]):
                for off in range(0, W, g):
                    with m.Case(off):
                        nw = -(-(off + 4 * HL) // W)
                        words = [ext[8 * (W + w * W - off):8 * (2 * W + w * W - off)][part] for w in range(nw)]
                        m.d.comb += out_word[part].eq(Array(words)[wi] if nw > 1 else words[0])
        m.d.comb += [wr.words.valid.eq(red.result.valid), wr.words.payload.eq(out_word),
                     red.result.ready.eq(wr.done)]
        with m.If(wr.words.valid & wr.words.ready):
            m.d.sync += wi.eq(Mux(wr.done, 0, wi + 1))
        with m.If(wr.done):
            m.d.sync += [r.eq((o + (prm.lc << 2)) ^ x) for x, (r, o) in enumerate(zip(wc_reg, wc_off))]

        # ---- control ------------------------------------------------------------------------------------
        nblk = Signal(13)                   # ceil(N / lc): lc is a power of two
        with m.Switch(esz):
            for z in range(3):
                with m.Case(z):
                    lcz = min(W >> z, HL)
                    m.d.comb += nblk.eq((b.valid_cols + (lcz - 1)) >> (lcz.bit_length() - 1))
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [walking.eq(1), wk.eq(0), blk0.eq(1), wk_last.eq(K == 1),
                                 b_ptr.eq(b.base), blk_ptr.eq(b.base), ic_off.eq(0), left.eq(nblk),
                                 wblk.eq(nblk), last_blk.eq(nblk == 1), wi.eq(0),
                                 k.eq(0), k0.eq(1), first.eq(1), final.eq(K <= P), in_i.eq(0), out_i.eq(0)]
                    m.d.sync += [r.eq(c.base[:W.bit_length() - 1] ^ x) for x, r in enumerate(wc_reg)]
                    m.d.comb += starting.eq(1)
                    if R > P:
                        m.d.sync += [gpos.eq(0), in_dummy.eq(0)]
                    m.next = "RUN"
            with m.State("RUN"):
                with m.If(left == 0):
                    m.d.comb += [self.done.eq(1), self.status.eq(Status.OK)]
                    m.next = "IDLE"
        return m
