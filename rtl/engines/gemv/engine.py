"""The GEMV engine: TGEMV, TGEMV_ACC and TGEMV_BIAS (``C[0, j] = init + sum_k A[0, k] * B[k, j]``)."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data, fifo, wiring

from rtl.engines.base import Engine, words_of
from rtl.engines.gemv.checks import gemv_checks
from rtl.engines.gemv.feed import a_serializer, advance_a, init_assembler, port1_dispatch
from rtl.engines.gemv.fire import count, fire_logic, issue
from rtl.engines.gemv.mac import MacArray, mac_latency, ring_length
from rtl.engines.gemv.operands import ESZ_MAX
from rtl.engines.gemv import overlap as ovl
from rtl.engines.gemv.params import COUNT_BITS, SUM_BYTES, SUM_LOG2, setup_params
from rtl.engines.gemv.reduce import Reducer, schedule, turnaround
from rtl.isa import DTYPE_BYTES, INSTRUCTIONS, UB_ALIGN, DType, Status, TileDesc
from rtl.lib.contract import require
from rtl.ub.reader import UbReader
from rtl.ub.writer import UbWriter

__all__ = ["GemvEngine", "GEMV_OPCODES"]

#: The GEMV family (rtl/isa/instructions.py), in opcode order.
GEMV_OPCODES = tuple(op for op, ins in INSTRUCTIONS.items() if ins.family == "gemv")


class GemvEngine(Engine):
    """Executes TGEMV, TGEMV_ACC and TGEMV_BIAS exactly as docs/semantics.md defines them, including the
    float accumulation order for ``P = config.gemv_partial_sums``.

    Parameters
    ----------
    config : :class:`rtl.config.Config`
        ``ub_word_bytes`` = W, ``gemv_lanes``, ``gemv_partial_sums`` = P; needs ``ub_read_ports >= 2``
        (:meth:`available`).
    overlap : bool
        Build with ``release`` (:class:`rtl.engines.base.EngineSignature`, the concurrent unit): the engine
        takes its next instruction once its walker has pushed the running one's last line and the fire side
        has taken that one, and fires the next one's first product ``overlap.FIRE_GAP`` cycles after the
        running one's last, while that one's last blocks are still in the MAC array, the reducer and the C
        writer; up to ``overlap.IN_FLIGHT`` instructions, ``done`` in start order. The walker's and the fire
        side's setup copies, and what travels with each line, step, block and instruction:
        :mod:`rtl.engines.gemv.overlap`. Without it the netlist is the serial one.

    Ports
    -----
    cmd, start, go, done, status (release with ``overlap``) : :class:`rtl.engines.base.EngineSignature`.
    ub_rd[0] : a UB read port: B's rows (:class:`rtl.ub.reader.UbReader`, ``out_bytes`` = ``min(W, 4 lanes)``).
    ub_rd[1] : a UB read port: A's row and the init lines (C_in / bias), in pairs per block.
    ub_wr : the UB write port: C's lines (:class:`rtl.ub.writer.UbWriter`). No AXI.

    Schedule: the ``N`` output columns are worked through in *blocks* of ``lanes(config, B type)``
    columns. For each block the walker issues one B line per row ``k`` (``B[k, block]``, at most one
    word, any alignment: the UB's two-word window) to UB port 0, and A's row ``A[0, 0:K]`` plus the
    block's init (C_in / bias) to port 1: A is re-read once per block, ``K * size / W`` words.

    Datapath, one row of B per cycle (:meth:`elaborate`'s sections):

    1. setup (``start`` cycle): geometry, operand kinds and the constants the counters compare with,
       registered (nothing later is computed from ``cmd``);
    2. walker: B lines -> :class:`rtl.ub.reader.UbReader` (port 0); per block an (A line, init line)
       pair -> a second reader (port 1), whose words go to the A serializer or the init assembler
       (:mod:`rtl.engines.gemv.feed`); C lines -> the writer. The line FIFOs' room is tracked in registers;
    3. fire: a B word and ``A[0, k]`` with their :data:`rtl.engines.gemv.mac.MacTag` into
       :class:`rtl.engines.gemv.mac.MacArray` (products, then the accumulation ring); when ``P`` is
       smaller than the ring's adder, ``R - P`` dummy steps follow every ``P`` products; a block starts
       only when one of the reducer's two banks is free. The A serializer is a shift register (the next
       element always in its low bits) with a second word behind it; the counters' comparisons are
       flags registered with every product, so ``fire`` is one gate over four registers;
    4. :class:`rtl.engines.gemv.reduce.Reducer`: tree and init add per block, in block order;
    5. C words: the block's results shifted to the C line's lanes, into :class:`rtl.ub.writer.UbWriter`.

    Before ``go`` the readers fill their buffers but nothing fires, so nothing is written. ``done``
    when every block's C line is written (a count from ``start``).

    Latency
    -------
    ``start`` to ``done`` (:meth:`cycles`, exact while the reducer keeps up): the blocks' steps
    (:meth:`steps` each), then :meth:`latency`: ``FIXED`` = 12 (``FIRST_STEP`` - 1 +
    ``Reducer.START_CYCLES`` + ``DONE_CYCLES``), the last product to its partial sum (``mac_latency``,
    16), the reducer (``Reducer.CYCLES``, 32 for P = 8): 60 for P = 8; plus the last C line's words
    beyond its first (a C line of more than one word: ``lanes * 4 > W``).
    With ``overlap``, a stream of independent instructions started at ``release`` costs the first one's
    cycles plus, for each later one, its blocks' steps and ``FIRE_GAP - 1`` = 1 (its ``latency`` hidden
    behind the next one's products, its way to its first product behind the previous one's), when its
    first operands are there by then (``steps(K) >= keep_up``; ``tests/rtl/test_rtl_gemv_overlap.py``).

    Throughput
    ----------
    One B row of a block per cycle (``lanes`` products) when ``P >= MacArray.ADD_DEPTH`` (``P`` rows of
    every ``ADD_DEPTH`` cycles otherwise: the dummy steps). The reducer starts a block at most every
    ``Reducer.INTERVAL`` (26 for P = 8) cycles, so blocks shorter than :meth:`keep_up` (26 steps for
    P = 8) wait for it (see ``make bench``).
    """

    name = "gemv"
    opcodes = GEMV_OPCODES
    OVERLAP = True              # rtl/engines/gemv/overlap.py
    UB_READ_PORTS = 2           # B on one, A (or the init) on the other
    UB_WRITE = True
    #: ``start`` -> the walker's first line pushed (the setup and the walker's state: registers loaded at
    #: ``start``).
    SETUP_CYCLES = 1
    #: A line pushed -> taken by its reader (the line FIFOs: a line is readable the cycle after its write).
    LINE_QUEUE_CYCLES = 1
    #: An A word on port 1's reader -> in the serializer's second register ``nxt``.
    A_WORD_CYCLES = 1
    #: ``nxt`` -> ``cur``, whose low element fires with the B word (every A word passes ``nxt``).
    SERIALIZER_CYCLES = 1
    #: ``start`` -> the first product fires (given ``go`` and a reducer bank): the A element's way; the
    #: B word's is shorter (it waits in port 0's reader).
    FIRST_STEP = SETUP_CYCLES + LINE_QUEUE_CYCLES + UbReader.LATENCY + A_WORD_CYCLES + SERIALIZER_CYCLES
    #: ``go`` -> its local copies, which the fire logic uses (:func:`rtl.lib.fanout.variant_copies`).
    GO_COPY_CYCLES = 1
    #: A reducer bank freed (``bank_free``) -> a block's first product may fire into it (``credits`` and
    #: ``ok``: registers computed from the next state).
    CREDIT_CYCLES = 1
    #: The writer's last word of the last C line (``wr.done``) -> ``done`` (the count ``left``, a register).
    DONE_CYCLES = 1
    #: Cycles from ``start`` to ``done`` beyond the products' steps, the MAC array's latency and the
    #: reducer's ``CYCLES`` (one-word C lines): to the first step (the step itself is one of the steps),
    #: the reduction's start cycle (it starts in the cycle the block's last partial sum is written), and
    #: the writer (taking the result's word in the cycle it comes) to ``done``.
    FIXED = FIRST_STEP - 1 + Reducer.START_CYCLES + DONE_CYCLES
    #: Depth of the B line FIFO (walker -> port 0's reader): with 3, every block after the first lost a
    #: cycle (measured, ``default``, P = 8: ``cycles`` is exact with 4; ``test_cycles`` checks it).
    B_QUEUE_DEPTH = 4
    #: Depth of the (A line, init line) pair FIFO, a pair per block (walker -> port 1's reader).
    PAIR_QUEUE_DEPTH = 2
    #: Depth of the C line FIFO, a line per block (walker -> the writer).
    C_QUEUE_DEPTH = 4
    #: Depth of the init FIFO, an init vector per block (init assembler -> the reducer).
    INIT_QUEUE_DEPTH = 2
    #: Copies of registers that feed every group of the A serializer and the C words (fan-out).
    COPIES = 4

    @classmethod
    def latency(cls, config):
        """Cycles from ``start`` to ``done`` beyond the steps of the blocks, for one-word C lines:
        ``FIXED`` + the last product to its sum (``rtl.engines.gemv.mac.mac_latency``:
        ``MacArray.PRODUCT_LATENCY + MacArray.ADD_DEPTH``) + the reducer (``Reducer.CYCLES``)."""
        return cls.FIXED + mac_latency(config) + schedule(config.gemv_partial_sums)[1]

    @staticmethod
    def steps(config, K):
        """Ring steps of one block of ``K`` products: ``K``, plus ``R - P`` dummies after every ``P``
        products but the last group when ``P < MacArray.ADD_DEPTH``."""
        P, R = config.gemv_partial_sums, ring_length(config)
        return K + (-(-K // P) - 1) * (R - P)

    @classmethod
    def keep_up(cls, config):
        """The fewest steps per block for which the reducer keeps up, so that :meth:`cycles` is exact: a
        block's reduction may start ``Reducer.INTERVAL`` cycles after the previous one's, and a block
        starts only into a bank the reducer has read for the last time (``Reducer.LAST_READ``), which
        frees it ``mac_latency + Reducer.START_CYCLES + LAST_READ`` cycles after the block before the
        previous one ended; ``CREDIT_CYCLES`` later the block may fire (:func:`rtl.engines.gemv.reduce.turnaround`)."""
        last_read, _, _, interval = turnaround(config.gemv_partial_sums)
        return max(interval, mac_latency(config) + Reducer.START_CYCLES + last_read + cls.CREDIT_CYCLES - 1)

    @classmethod
    def steady_cycles(cls, config, K, N, b_dtype):
        """Cycles from ``start`` to ``done`` when the reducer keeps up (``steps(K) >= keep_up``) and the
        last C line is one word: one step per cycle for every block, plus :meth:`latency`."""
        return -(-N // cls.lanes(config, b_dtype)) * cls.steps(config, K) + cls.latency(config)

    @classmethod
    def cycles(cls, config, cmd):
        """Cycles from ``start`` to ``done`` of ``cmd`` (decoded): :meth:`steady_cycles` plus the last C
        line's words beyond its first (the writer takes one per cycle), exact when the reducer keeps up
        (``steps(K) >= keep_up``); None otherwise (blocks wait for the reducer)."""
        b, c = cmd["src1"], cmd["dst"]
        K, N = b["valid_rows"], b["valid_cols"]
        if cls.steps(config, K) < cls.keep_up(config):
            return None
        lc = cls.lanes(config, b["dtype"])
        blocks = -(-N // lc)
        last = words_of(c["base"] + (blocks - 1) * lc * SUM_BYTES, (N - (blocks - 1) * lc) * SUM_BYTES,
                        config.ub_word_bytes)
        return cls.steady_cycles(config, K, N, b["dtype"]) + last - 1

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
        """The family's shape rules (:func:`rtl.engines.gemv.checks.gemv_checks`)."""
        gemv_checks(m, config, cmd, fail, GEMV_OPCODES)

    def elaborate(self, platform):
        m = Module()
        parts = self._parts(m)
        setup = setup_params(m, self, parts)
        # the fire side's setup: the walker's (``setup``) or, with overlap, its own copy, loaded when the fire
        # side begins an instruction (rtl/engines/gemv/overlap.py)
        fset = ovl.fire_setup(m, self, parts, setup) if self._overlap else setup
        walk = self._walker(m, parts, setup)
        port1 = port1_dispatch(m, parts, fset, walk)
        ipend = init_assembler(m, parts, port1, self.INIT_QUEUE_DEPTH)
        # the A serializer's byte groups: at most COPIES, of at least 4 bytes
        ser = a_serializer(m, parts, fset, port1, ipend, min(self._config.ub_word_bytes // 4, self.COPIES))
        fire = fire_logic(m, self, parts, ser)
        advance_a(m, parts, fset, port1, ser, fire)
        count(m, parts, fset, ser, fire)
        issue(m, parts, ser, fire)
        wc = self._c_words(m, parts, setup, ser)
        if self._overlap:
            ovl.control(m, self, parts, setup, fset, walk, ser, fire, wc, self._nblk(m, parts, setup))
        else:
            self._control(m, parts, setup, walk, port1, ser, fire, wc)
        return m

    def _parts(self, m):
        """The sub-components: the B reader on UB port 0, the A / init reader on port 1, the writer, the
        MAC array and the reducer; connected to the engine's UB ports."""
        cfg = self._config
        W, HL = cfg.ub_word_bytes, cfg.gemv_lanes
        # port 0 reads B rows of a block: at most lanes x size <= min(W, 4 lanes) bytes, to dst_off 0
        m.submodules.rd_b = rd_b = UbReader(cfg, out_bytes=min(W, HL << ESZ_MAX))
        # port 1 reads A (its tile's base: UB_ALIGN) and the init lines (the block's first column: a
        # multiple of g bytes into a UB_ALIGN-aligned tile), both to dst_off 0
        g = min(UB_ALIGN, SUM_BYTES * min(W >> ESZ_MAX, HL))
        m.submodules.rd_a = rd_a = UbReader(cfg, align=g)
        m.submodules.wr = wr = UbWriter(cfg)
        ovl_kw = {"overlap": True} if self._overlap else {}
        m.submodules.mac = mac = MacArray(cfg, **ovl_kw)
        m.submodules.red = red = Reducer(cfg, **ovl_kw)
        wiring.connect(m, rd_b.ub_rd, wiring.flipped(self.ub_rd[0]))
        wiring.connect(m, rd_a.ub_rd, wiring.flipped(self.ub_rd[1]))
        wiring.connect(m, wr.ub_wr, wiring.flipped(self.ub_wr))
        return SimpleNamespace(cfg=cfg, rd_b=rd_b, rd_a=rd_a, wr=wr, mac=mac, red=red, g=g)

    def _walker(self, m, parts, setup):
        """Section 2, the walker: per block one B line per row into the B line FIFO, and with the block's
        first line its (A line, init line) pair and its C line into their FIFOs (room tracked in
        registers); the B and C FIFOs' outputs to port 0's reader and the writer; ``left``, the blocks not
        yet written. Returns its state (loaded at ``start`` by :meth:`_control`) and the pair FIFO."""
        cfg, rd_b, rd_a, wr = parts.cfg, parts.rd_b, parts.rd_a, parts.wr
        prm = setup.prm
        UB_ADDR = TileDesc["base"].shape
        q_b = fifo.SyncFIFO(width=rd_b.LineLayout.size, depth=self.B_QUEUE_DEPTH)
        # (with overlap a pair carries its instruction's ``has_init``: port 1 may take the next one's pairs
        # while the fire side is still on the previous one)
        Pair = data.StructLayout({"a": rd_a.LineLayout, "i": rd_a.LineLayout, **({"h": 1} if self._overlap else {})})
        q_p = fifo.SyncFIFO(width=Pair.size, depth=self.PAIR_QUEUE_DEPTH)
        q_c = fifo.SyncFIFO(width=wr.LineLayout.size, depth=self.C_QUEUE_DEPTH)
        m.submodules += [q_b, q_p, q_c]
        walking = Signal()
        wk = Signal(COUNT_BITS, reset_less=True)    # row of the next B line
        blk0 = Signal(reset_less=True)      # wk == 0: the block's first line (queues its A / init and C lines)
        wk_last = Signal(reset_less=True)   # wk == K - 1: the block's last line
        b_ptr = Signal(UB_ADDR, reset_less=True)     # its UB address
        blk_ptr = Signal(UB_ADDR, reset_less=True)   # the block's first column in B's row 0
        ic_off = Signal(UB_ADDR, reset_less=True)    # the block's byte offset in C and in the init tile
        # blocks left to walk (this one included) and "this is the last": a count and a flag, not a
        # compare and subtract of the columns left (20 cells in one cycle, 9.6 ns in ``small`` seed 2)
        wblk = Signal(COUNT_BITS, reset_less=True)
        last_blk = Signal(reset_less=True)
        ncols = Signal(range(cfg.gemv_lanes + 1))           # the block's columns
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
            pair.i.ub_addr.eq(prm.i_base + ic_off), pair.i.length.eq(ncols << SUM_LOG2),
            c_line.ub_addr.eq(prm.c_base + ic_off), c_line.length.eq(ncols << SUM_LOG2),
            q_b.w_data.eq(b_line), q_p.w_data.eq(pair), q_c.w_data.eq(c_line),
            q_b.w_en.eq(push), q_p.w_en.eq(push & blk0), q_c.w_en.eq(push & blk0),
        ]
        if self._overlap:
            m.d.comb += pair.h.eq(prm.has_init)
        left = None
        if not self._overlap:               # (with overlap: overlap.dones, a count per instruction)
            left = Signal(COUNT_BITS)       # blocks not yet written (ceil(N / lc), from start)
            with m.If(wr.done):
                m.d.sync += left.eq(left - 1)
        with m.If(push):
            with m.If(wk_last):
                m.d.sync += [wk.eq(0), blk0.eq(1), wk_last.eq(prm.K == 1),
                             blk_ptr.eq(blk_ptr + prm.lc_bytes), b_ptr.eq(blk_ptr + prm.lc_bytes),
                             ic_off.eq(ic_off + (prm.lc << SUM_LOG2)), wblk.eq(wblk - 1), last_blk.eq(wblk == 2)]
                with m.If(last_blk):
                    m.d.sync += walking.eq(0)
            with m.Else():
                m.d.sync += [wk.eq(wk + 1), blk0.eq(0), wk_last.eq(wk == prm.km2), b_ptr.eq(b_ptr + prm.pitch)]
        m.d.comb += [rd_b.lines.valid.eq(q_b.r_rdy), rd_b.lines.payload.eq(q_b.r_data), q_b.r_en.eq(rd_b.lines.ready),
                     wr.lines.valid.eq(q_c.r_rdy), wr.lines.payload.eq(q_c.r_data), q_c.r_en.eq(wr.lines.ready)]
        return SimpleNamespace(q_p=q_p, Pair=Pair, walking=walking, wk=wk, blk0=blk0, wk_last=wk_last, b_ptr=b_ptr,
                               blk_ptr=blk_ptr, ic_off=ic_off, wblk=wblk, last_blk=last_blk, left=left,
                               push=push, c_line=c_line)

    def _c_words(self, m, parts, setup, ser):
        """Section 5, C words: the reducer's result shifted to the current C line's first lane (``G``
        copies of the lane offset, each selecting a slice of the word) into the writer, one word per
        cycle; the result is taken with the line's last word. Returns the offset registers and the word
        index (loaded at ``start``)."""
        cfg, wr, red, g = parts.cfg, parts.wr, parts.red, parts.g
        W, HL = cfg.ub_word_bytes, cfg.gemv_lanes
        G, gb = ser.G, ser.gb
        # A C line starts at C.base + block * lanes * 4: a multiple of g bytes (bases are UB_ALIGN-aligned).
        # The current C line's first lane, in G copies, each selecting a slice of the word (one register
        # drove every bit's multiplexer: 10.0 ns in ``default`` seed 2 at 1203a0e). Copy x holds the
        # offset XOR x, so that synthesis keeps the copies apart.
        wc_reg = [Signal(range(W), name=f"wc_off{x}", reset_less=True) for x in range(G)]
        wc_off = [r ^ x for x, r in enumerate(wc_reg)]
        wi = Signal(range(-(-(W + SUM_BYTES * HL) // W) + 1))
        ext = Cat(C(0, 8 * W), red.result.payload, C(0, 8 * W))
        out_word = Signal(8 * W)
        c_words = 0                         # the most words a C line takes
        for x in range(G):
            part = slice(gb * x, gb * (x + 1))
            with m.Switch(wc_off[x]):
                for off in range(0, W, g):
                    with m.Case(off):
                        nw = -(-(off + SUM_BYTES * HL) // W)
                        c_words = max(c_words, nw)
                        words = [ext[8 * (W + w * W - off):8 * (2 * W + w * W - off)][part] for w in range(nw)]
                        m.d.comb += out_word[part].eq(Array(words)[wi] if nw > 1 else words[0])
        # The reducer holds a result until its next one, ``INTERVAL`` cycles later at the earliest; the
        # writer takes a C line's words one per cycle from the cycle the result comes (the line, queued
        # when its block started, is the writer's active one by then).
        require(c_words <= red.INTERVAL,
                f"GemvEngine: a C line's words (up to {c_words}, one per cycle) are written before the reducer's "
                f"next result (Reducer.INTERVAL = {red.INTERVAL} cycles for P = {red.P})")
        require(self.LINE_QUEUE_CYCLES + UbWriter.LINE_LATENCY <= mac_latency(cfg) + Reducer.START_CYCLES + red.CYCLES,
                f"GemvEngine: a block's C line (queued with its first B line) reaches the writer "
                f"(LINE_QUEUE_CYCLES + UbWriter.LINE_LATENCY = {self.LINE_QUEUE_CYCLES + UbWriter.LINE_LATENCY}) "
                f"before the block's result can ({mac_latency(cfg) + Reducer.START_CYCLES + red.CYCLES})")
        m.d.comb += [wr.words.valid.eq(red.result.valid), wr.words.payload.eq(out_word),
                     red.result.ready.eq(wr.done)]
        with m.If(wr.words.valid & wr.words.ready):
            m.d.sync += wi.eq(Mux(wr.done, 0, wi + 1))
        if not self._overlap:               # (with overlap: per block, overlap.c_offsets)
            with m.If(wr.done):
                m.d.sync += [r.eq((o + (setup.prm.lc << SUM_LOG2)) ^ x) for x, (r, o) in enumerate(zip(wc_reg, wc_off))]
        return SimpleNamespace(wc_reg=wc_reg, wi=wi)

    def _nblk(self, m, parts, setup):
        """``ceil(N / lc)``, the command's blocks (``lc`` is a power of two), for the ``start`` cycle."""
        W, HL = parts.cfg.ub_word_bytes, parts.cfg.gemv_lanes
        b = self.cmd.src1
        nblk = Signal(COUNT_BITS)           # ceil(N / lc): lc is a power of two
        with m.Switch(setup.esz):
            for z in range(ESZ_MAX + 1):
                with m.Case(z):
                    lcz = min(W >> z, HL)
                    m.d.comb += nblk.eq((b.valid_cols + (lcz - 1)) >> (lcz.bit_length() - 1))
        return nblk

    def _start_loads(self, m, parts, setup, walk, ser, fire, nblk):
        """What a serial ``start`` loads (called in the ``start`` cycle's ``If``): the walker and the fire
        counters from the command (``nblk``: its blocks)."""
        self._walker_loads(m, setup, walk, nblk)
        self.fire_loads(m, parts, setup.K, ser, fire)

    def _walker_loads(self, m, setup, walk, nblk):
        """The walker's state from the command at its ``start`` (``nblk``: its blocks)."""
        K, w, b = setup.K, walk, self.cmd.src1
        m.d.sync += [w.walking.eq(1), w.wk.eq(0), w.blk0.eq(1), w.wk_last.eq(K == 1),
                     w.b_ptr.eq(b.base), w.blk_ptr.eq(b.base), w.ic_off.eq(0),
                     w.wblk.eq(nblk), w.last_blk.eq(nblk == 1)]

    @staticmethod
    def fire_loads(m, parts, K, ser, fire):
        """The fire counters for an instruction of ``K`` rows whose products begin (serial: at its ``start``;
        with overlap: when the fire side takes it, ``overlap.fire_side``); raises ``ser.starting``."""
        P, R = parts.cfg.gemv_partial_sums, ring_length(parts.cfg)
        f = fire
        m.d.sync += [f.k.eq(0), f.k0.eq(1), f.first.eq(1), f.final.eq(K <= P)]
        m.d.comb += ser.starting.eq(1)
        if R > P:
            m.d.sync += [f.gpos.eq(0), f.in_dummy.eq(0)]

    def _control(self, m, parts, setup, walk, port1, ser, fire, wc):
        """The instruction's state machine: at ``start`` the walker, the counters, port 1's dispatch and
        the C words are loaded (the block count ``nblk`` from ``N`` and the lanes); ``done`` when every
        block's C line is written (``left`` = 0)."""
        W, c, w = parts.cfg.ub_word_bytes, self.cmd.dst, walk
        nblk = self._nblk(m, parts, setup)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    self._start_loads(m, parts, setup, walk, ser, fire, nblk)
                    # (with overlap these are per block or per instruction instead: rtl/engines/gemv/overlap.py)
                    m.d.sync += [w.left.eq(nblk), wc.wi.eq(0), port1.in_i.eq(0), port1.out_i.eq(0)]
                    m.d.sync += [r.eq(c.base[:W.bit_length() - 1] ^ x) for x, r in enumerate(wc.wc_reg)]
                    m.next = "RUN"
            with m.State("RUN"):
                with m.If(w.left == 0):
                    m.d.comb += [self.done.eq(1), self.status.eq(Status.OK)]
                    m.next = "IDLE"
