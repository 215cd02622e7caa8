"""NKI ``local_gather`` inside the unified buffer (LOCAL_GATHER)."""

from amaranth import *
from amaranth.lib import memory, wiring

from rtl.checker.stages import stage
from rtl.engines.base import Engine, tile_lines, words_of
from rtl.isa import LOCAL_GATHER_GROUP, LOCAL_GATHER_MAX_INDICES, LOCAL_GATHER_MAX_NEPI_LOG2, Opcode, Status
from rtl.lib.tile import elem_log2
from rtl.ub.buffer import UnifiedBuffer, read_window

__all__ = ["LocalGatherEngine"]

GROUP = LOCAL_GATHER_GROUP                  #: rows (partitions) per group; one index list per group
MAX_INDICES = LOCAL_GATHER_MAX_INDICES      #: indices per group
MAX_NEPI_LOG2 = LOCAL_GATHER_MAX_NEPI_LOG2  #: num_elem_per_idx <= 32

#: Offset bits the second (fine) step of a byte rotation resolves (an 8:1 multiplexer per bit), as in
#: :func:`rtl.ub.byteshift.select_bytes`.
_FINE_BITS = 3


class LocalGatherEngine(Engine):
    """Executes LOCAL_GATHER: ``dst`` (destination), ``src0`` (source), ``src1`` (UINT16 index tile),
    immediates ``nepi_log2`` and ``num_valid`` (docs/semantics.md, "local_gather").

    For every group of 16 source rows the group's ``16 x X`` index block, flattened column by column
    (``indices_1d[k] = idx[16 g + k % 16, k // 16]``), lists ``n`` element offsets; row ``p`` of the
    group gets ``dst[p, k * nepi + e] = src[p, indices_1d[k] + e]`` (a bit copy of ``B = nepi * size``
    bytes per *chunk*).

    Parameters: ``config`` (uses ``ub_word_bytes`` = W, ``ub_bytes``, ``ub_read_ports``).

    Ports: :class:`EngineSignature` with ``min(2, config.ub_read_ports)`` UB read ports and the UB write
    port (no AXI).

    Operation. Work is cut into *blocks* of up to 16 consecutive ``k`` (one column of the group's index
    block). For each block the engine first reads its indices (two per cycle, one per read port, for
    at least :attr:`INDEX_MIN_CYCLES` cycles), then, for each of the 16 rows, moves the block's chunks as
    *pieces* of ``P = min(B, W, 32)`` bytes. A UB read port returns a 2-word window (the word at
    ``addr`` and the next one, :class:`rtl.ub.buffer.UnifiedBuffer`), so one read of a piece's first source
    word holds the whole piece, straddling two words or not: one piece per cycle on one port, and two
    consecutive pieces of a row's block with ``2 P <= W`` go together in one cycle (one read port each).
    Pieces are packed into destination words (a row's chunks are contiguous in ``dst``), so a
    destination word is written once per block and row, with exact byte enables; nothing outside
    ``dst``'s valid region is written, whatever the offsets. An offset with ``indices_1d[k] + nepi > C``
    reads whatever lies there (addresses wrap at the end of the UB): the result is undefined, the
    status ``OK``.

    Structure (pipelined for the clock: every path is a register, a few LUT levels or one carry chain,
    and a register; ``ub_rd.addr`` / ``en`` come straight from registers, ``ub_wr`` through one LUT):

    - Geometry: the element size, the strides and the first block's state are registered from ``cmd``
      while the engine is idle (``cmd`` is valid and held from the ``start`` cycle on), and everything
      that depends on the element size and ``nepi`` alone (chunk and piece sizes, pairing, masks) one
      cycle later, from tables; so no path starts at ``cmd`` once the engine runs, and ``start`` only
      decides the next state and the first index read. Addresses are byte addresses modulo the UB
      (``log2(ub_bytes)`` bits: reads wrap at its end).
    - Issue, cycle ``c``: the control registers one *slot*: index reads, piece reads, or a flush of a
      pending word. Running pointers, no multiplies: the source row plus the piece's offset in its
      chunk (one add), the chunk number(s) ``k`` (a shift of the offset in the row's block), the
      destination pointer. ``c + 1`` (D): each piece's index, read from LUT RAM (two banks, even and
      odd ``k``) and scaled by the element size, is added (for an index read: nothing on port 0, the
      index stride on port 1); the word addresses go to the registers that drive ``ub_rd`` in
      ``c + 2``, and the UB's words arrive in ``c + 2 + READ_LATENCY``, in the engine's input register a
      cycle later (stage 1: ``c + 2 + IN_LATENCY``).
    - Index capture (stage 1): the index half-word of each read window into its bank (the indices of
      a block are read two per cycle, ``k`` even on port 0 and odd on port 1).
    - Placement, stages 1 and 2: a piece's bytes are taken from the window's two words (byte ``i`` from
      the first word when ``i >= offset``, else from the second: a piece of at most ``W`` bytes uses each
      byte position once) and that word is rotated by ``offset - lane`` modulo ``W`` so that every
      piece byte lands in its destination lane: by a multiple of 8 bytes into a register in stage 1,
      by 0-7 bytes in stage 2 (as :func:`rtl.ub.byteshift.select_bytes`; the fine amount is registered
      in one copy per 8 lanes, which keeps its fan-out down). The two pieces of a pair are merged
      per lane into one registered word; the lane masks (which lanes each piece covers, which belong
      to the current destination word) are registered a stage ahead.
    - Packing, stage 3: lanes at or above the slot's first lane belong to the current destination
      word, the lower ones (wrapped around) to the next; the current word is written (the pending
      bytes and the new ones, exact byte enables) when it is complete or the row's block ends, the
      rest stays pending. When a row's block ends with bytes spilled into the next word (destination
      rows not word-aligned), the issue side gives up one slot so that the pending word gets the write
      port (at the end of a block that flush goes with the next block's first index reads and costs
      nothing; at the end of the instruction it is the last write).

    Latency: the first index read(s) go in the ``start`` cycle; ``done`` (status ``OK``) comes in the
    cycle of the last UB write, :attr:`PIPELINE` (8) cycles after the last slot was issued; an empty
    destination (no rows or ``n = 0``) is done in the cycle after ``start``. Cycles from ``start`` to
    ``done``: the sum over blocks of (index cycles + moving cycles, below) + ``PIPELINE - 1`` (e.g. 16
    rows of 16 chunks of ``W / 2`` bytes: 8 + 128 + 7 = 143).

    Throughput, per block of ``K`` chunks and 16 rows: ``max(INDEX_MIN_CYCLES, ceil(K / 2))`` cycles of
    index reads (``max(INDEX_MIN_CYCLES, K)`` with one read port; ``INDEX_MIN_CYCLES`` = 6) plus one cycle
    per piece (half a cycle for a paired piece; where a piece lies in its source words does not
    matter) plus one cycle at the end of a row's block when its last destination word spills into the
    next word and another row of the block follows (only when ``dst`` rows are not word-aligned).
    Hence, with two read ports and word-aligned ``dst`` rows, at any offsets: ``B >= W`` moves ``W``
    bytes per cycle, ``32 / 33`` = 97% of the write port once the index reads of full blocks are
    counted (``B = W``: ``K / 2`` index cycles per ``16 K`` moving ones; a block of ``K < 12`` chunks
    has 6); ``B = W / 2`` also moves ``W`` bytes per cycle, ``16 / 17`` = 94% (``K / 2`` per ``8 K``);
    ``B < W / 2`` is bound by the read ports at ``2 B`` bytes per cycle. With one read port: one piece
    per cycle, nothing is paired.
    """

    name = "local_gather"
    opcodes = (Opcode.LOCAL_GATHER,)
    UB_READ_PORTS = 1           # two where the configuration has them (:meth:`read_ports`)
    UB_WRITE = True

    #: Cycles from a UB read's ``en`` to its words in the engine's input register (the UB's read latency
    #: and that register: stage 1 works on registers of its own, not on the UB's read data).
    IN_LATENCY = UnifiedBuffer.READ_LATENCY + 1
    #: Least cycles of index reads per block: an index read issued in cycle ``c`` is in its LUT RAM from
    #: ``c + 3 + IN_LATENCY``, where the first piece slot ``c'`` reads it (in ``c' + 1``).
    INDEX_MIN_CYCLES = IN_LATENCY + 2
    #: Cycles from a slot's issue to its UB write (stage 3).
    PIPELINE = IN_LATENCY + 4
    #: Copies of each input register's load enable and of its read's parity, each for a slice of its two
    #: words.
    IN_EN_COPIES = 8

    @classmethod
    def read_ports(cls, config):
        """Two UB read ports where the configuration has them (two pieces per cycle), else one."""
        return min(2, config.ub_read_ports)

    @classmethod
    def bound(cls, config, cmd):
        """The UB write port: one word of the destination per cycle."""
        W = config.ub_word_bytes
        return sum(words_of(address, n, W) for address, n in tile_lines(cmd["dst"]))

    def __init__(self, config):
        self._ports = self.read_ports(config)
        super().__init__(config)

    @staticmethod
    def add_checks(m, config, cmd, fail):
        """LOCAL_GATHER constraints beyond the common ones (``rtl.checker``), as
        ``golden.check._rules_local_gather``."""
        en = cmd.opcode == Opcode.LOCAL_GATHER
        dst, src, idx = cmd.dst, cmd.src0, cmd.src1
        nv = cmd.num_valid
        per_group = Signal(21)       # 16 x index valid cols
        n = Signal(21)
        m.d.comb += [per_group.eq(idx.valid_cols << 4), n.eq(Mux(nv != 0, nv, per_group))]
        # n x nepi (nepi = 1 << nepi_log2 as encoded): a variable shift, registered before its compare
        width = stage(m, n << cmd.nepi_log2, "lg_width")
        fail[Status.SHAPE_MISMATCH].append(
            en & ((idx.valid_rows != src.valid_rows) | (dst.valid_rows != src.valid_rows) |
                  (dst.valid_cols != width)))
        fail[Status.PARAM_INVALID].append(
            en & ((cmd.nepi_log2 > MAX_NEPI_LOG2) | (nv > MAX_INDICES) | (nv > per_group)))
        fail[Status.DIM_OUT_OF_RANGE].append(
            en & ((src.valid_rows[:4] != 0) | (n > MAX_INDICES)))

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W = cfg.ub_word_bytes
        sh = W.bit_length() - 1
        two = self._ports >= 2
        UA = cfg.ub_bytes.bit_length() - 1       # byte addresses modulo the UB (reads wrap at its end)
        WA = UA - sh                             # word addresses
        IW = min(UA, 16)                         # an index modulo the UB (scaled when it is read)
        QW = 12                                  # byte offset in a row's block: < 16 x 128
        LAT = self.IN_LATENCY
        cmd = self.cmd
        dst, src, idx = cmd.dst, cmd.src0, cmd.src1
        rd0 = self.ub_rd[0]
        rd1 = self.ub_rd[1] if two else None
        wr = self.ub_wr

        # ---- geometry: registered from the command while idle (level 1: the command is valid and held in
        # the start cycle, and the engine ignores these registers until then), then derived from those
        # registers (level 2). Only the next state and the first index read depend on ``start``.
        idle = Signal()
        esz_c = elem_log2(m, src.dtype)
        n_c = Signal(13)
        groups_c = Signal(12)
        m.d.comb += [n_c.eq(Mux(cmd.num_valid != 0, cmd.num_valid, idx.valid_cols << 4)),
                     groups_c.eq(src.valid_rows >> 4)]
        empty = (groups_c == 0) | ((cmd.num_valid == 0) & (idx.valid_cols == 0))

        def greg(width, name):
            return Signal(width, name=f"g_{name}", reset_less=True)
        g_esz, g_nepi, g_n = greg(2, "esz"), greg(3, "nepi_log2"), greg(13, "n")
        g_src_stride, g_dst_stride, g_idx_stride = (greg(UA, f"{t}_stride") for t in ("src", "dst", "idx"))
        with m.If(idle):
            m.d.sync += [g_esz.eq(esz_c), g_nepi.eq(cmd.nepi_log2), g_n.eq(n_c),
                         g_src_stride.eq(src.cols << esz_c), g_dst_stride.eq(dst.cols << esz_c),
                         g_idx_stride.eq(idx.cols << 1)]
        # level 2: everything that depends on the element size and nepi only, as tables of those 5 bits
        # (one LUT level each), valid from the second cycle after start (the first row starts >= 4 later)
        def geometry(esz, nepi_log2):
            b = esz + nepi_log2
            pl = min(b, sh, 5)
            pm = int(two and pl < sh)
            return {"b_log2": b, "p_log2": pl, "psize": 1 << pl, "pmode": pm, "step": 1 << (pl + pm),
                    "bmask": (1 << b) - 1, "blkstep": GROUP << b, "npc_log2": b - pl}
        table = [geometry(i & 3, i >> 2) for i in range(32)]
        widths = {"b_log2": 3, "p_log2": 3, "psize": 7, "pmode": 1, "step": 8, "bmask": 8, "blkstep": 12,
                  "npc_log2": 3}
        geo = {}
        for key, width in widths.items():
            reg = geo[key] = greg(width, key)
            rom = Array(C(t[key] % (1 << width), width) for t in table)
            m.d.sync += reg.eq(rom[Cat(g_esz, g_nepi)])
        g_blog2, g_plog2, g_P, g_pmode = geo["b_log2"], geo["p_log2"], geo["psize"], geo["pmode"]
        g_step, g_bmask, g_blkstep, g_npc_log2 = geo["step"], geo["bmask"], geo["blkstep"], geo["npc_log2"]

        # ---- control state (reset-less: loaded while idle or at a block's or row's start before any use;
        # the state machine, the slots' valid bits, ``stall`` and the pending byte enables have resets)
        def creg(width, name):
            return Signal(width, name=name, reset_less=True)
        g_left = creg(12, "g_left")  # groups after the current one
        n_left = creg(13, "n_left")  # chunks of the group from the current block on
        kcnt = creg(5, "kcnt")       # chunks in the current block (1..16)
        km1 = creg(4, "km1")         # kcnt - 1
        grp_src, grp_dst, grp_idx = (Signal(UA, name=f"grp_{t}", reset_less=True) for t in ("src", "dst", "idx"))
        blk_dst, blk_idx = (Signal(UA, name=f"blk_{t}", reset_less=True) for t in ("dst", "idx"))
        src_row, dst_row, dst_ptr = (creg(UA, t) for t in ("src_row", "dst_row", "dst_ptr"))
        idx_ptr = Signal(UA, reset_less=True)    # the next index read (port 1 reads idx_ptr + idx_stride)
        p = creg(4, "p")             # row in the group
        p_last = creg(1, "p_last")   # p == 15
        r = creg(5, "r")             # next index to read
        icnt = creg(range(self.INDEX_MIN_CYCLES + 1), "icnt")   # index cycles so far (saturating)
        ilast = creg(1, "ilast")     # this is the block's last index cycle
        qA, qB = creg(QW, "qA"), creg(QW, "qB")  # byte offsets in the row's block of the slot's pieces
        sl = creg(8, "sl")           # slots left in the row's block after this one
        seg_last = creg(1, "seg_last")   # this slot ends the row's block
        stall = Signal()             # flush a spilled word: no piece slot this cycle
        flush_waddr = Signal(WA, reset_less=True)

        # per-block values, derived continuously from kcnt (a block's first row starts >= 4 cycles after
        # kcnt is set): slots per row's block - 1 = (pieces - 1) >> pmode, pieces = kcnt << npc_log2
        b_slm1 = creg(8, "b_slm1")   # slots per row's block - 1
        b_sl1 = creg(1, "b_sl1")     # one slot per row's block
        b_lastb = creg(1, "b_lastb") # the last slot of a row's block has a second piece
        more_blk = creg(1, "more_blk")   # n_left > 16: another block in this group
        more_grp = creg(1, "more_grp")   # g_left != 0
        nk_blk, nk_blk_m1 = creg(5, "nk_blk"), creg(4, "nk_blk_m1")   # chunks of the next block of this group
        nk_grp, nk_grp_m1 = creg(5, "nk_grp"), creg(4, "nk_grp_m1")   # chunks of a group's first block
        slm1 = Signal(8)
        m.d.comb += slm1.eq((((km1 << g_npc_log2) | ((C(1, 4) << g_npc_log2) - 1)) >> g_pmode))
        m.d.sync += [
            b_slm1.eq(slm1), b_sl1.eq(slm1 == 0), b_lastb.eq(g_pmode & (km1[0] | (g_npc_log2 != 0))),
            more_blk.eq(n_left > GROUP), more_grp.eq(g_left != 0),
            nk_blk.eq(Mux(n_left > 2 * GROUP, GROUP, (n_left - GROUP)[:5])),
            nk_blk_m1.eq(Mux(n_left > 2 * GROUP, GROUP - 1, (n_left - GROUP - 1)[:4])),
            nk_grp.eq(Mux(g_n > GROUP, GROUP, g_n)),
            nk_grp_m1.eq(Mux(g_n > GROUP, GROUP - 1, (g_n - 1)[:4])),
        ]

        # ---- the pipeline: D (set by the control), then one register stage per cycle -------------------
        S1 = 2 + LAT                 # stage index at which the read data is in the input register
        S3 = S1 + 2                  # the write stage
        assert S3 == self.PIPELINE

        def info(t):
            return {
                "cap": Signal(name=f"s{t}_cap"),       # index read(s)
                "pc": Signal(name=f"s{t}_pc"),         # piece read(s)
                "wen": Signal(name=f"s{t}_wen"),       # a UB write in stage 3
                "fin": Signal(name=f"s{t}_fin"),       # the instruction's last slot
                "pair": Signal(name=f"s{t}_pair", reset_less=True),
                "r": Signal(4, name=f"s{t}_r", reset_less=True),
                "lo": Signal(sh, name=f"s{t}_lo", reset_less=True),
                "waddr": Signal(WA, name=f"s{t}_waddr", reset_less=True),
                "offA": Signal(sh, name=f"s{t}_offA", reset_less=True),
                "offB": Signal(sh, name=f"s{t}_offB", reset_less=True),
            }
        st = [None] + [info(t) for t in range(1, S3 + 1)]
        for t in range(2, S3 + 1):
            for key, sig in st[t].items():
                if not (t == 2 and key in ("offA", "offB")):
                    m.d.sync += sig.eq(st[t - 1][key])
        d = st[1]
        d_kA, d_kB = Signal(4, reset_less=True), Signal(4, reset_less=True)
        d_srpA, d_srpB = Signal(UA, reset_less=True), Signal(UA, reset_less=True)

        # every cycle the control emits a slot into D (nothing unless set below)
        for key in ("cap", "pc", "wen", "fin"):
            m.d.sync += d[key].eq(0)

        def emit_flush(fin):
            m.d.sync += [d["wen"].eq(1), d["waddr"].eq(flush_waddr), d["fin"].eq(fin)]

        def begin_block(src_base, dst_base, idx_base, k, km1_, first=0):
            """The next block's state (``k`` chunks, ``km1_`` = k - 1); ``first``: how many index cycles
            were already issued (at start)."""
            m.d.sync += [
                r.eq(first * (2 if two else 1)), icnt.eq(first), ilast.eq(0), idx_ptr.eq(idx_base),
                kcnt.eq(k), km1.eq(km1_), p.eq(0), p_last.eq(0), src_row.eq(src_base), dst_row.eq(dst_base),
                dst_ptr.eq(dst_base),
            ]

        def begin_row():
            m.d.sync += [qA.eq(0), qB.eq(g_P), sl.eq(b_slm1), seg_last.eq(b_sl1)]

        # ---- issue: the piece slot's values (used in RUN) ----------------------------------------------
        pair = Signal()
        m.d.comb += pair.eq(g_pmode & (~seg_last | b_lastb))
        L = Mux(pair, g_P << 1, g_P)
        lo = dst_ptr[:sh]
        lane_end = Signal(sh + 2)
        m.d.comb += lane_end.eq(lo + L)
        spill = seg_last & (lane_end > W)
        final = p_last & ~more_blk & ~more_grp

        idx_step2 = g_idx_stride << 1 if two else g_idx_stride
        with m.FSM(name="local_gather") as fsm:
            with m.State("IDLE"):
                with m.If(self.start):
                    # (an empty gather is done a cycle later, from the state register: ``done`` from
                    # the command's decode drove the front end's state logic, a 10.6 ns path)
                    with m.If(empty):
                        m.next = "EMPTY"
                    with m.Else():
                        m.next = "INDEX"
                # the first block's state, from the command; its first index read(s) go in the start cycle
                nv = cmd.num_valid
                big = (nv == 0) | (nv > GROUP)           # the first block has 16 chunks
                m.d.sync += [
                    g_left.eq(groups_c - 1), n_left.eq(n_c),
                    grp_src.eq(src.base), grp_dst.eq(dst.base), grp_idx.eq(idx.base),
                    blk_dst.eq(dst.base), blk_idx.eq(idx.base),
                    d["cap"].eq(self.start & ~empty), d["r"].eq(0), d_srpA.eq(idx.base), d_srpB.eq(idx.base),
                ]
                begin_block(src.base, dst.base, idx.base + (idx.cols << (2 if two else 1)),
                            Mux(big, GROUP, nv[:5]), Mux(big, GROUP - 1, (nv - 1)[:4]), first=1)

            with m.State("EMPTY"):   # nothing to gather: done
                m.d.comb += [self.done.eq(1), self.status.eq(Status.OK)]
                m.next = "IDLE"

            with m.State("INDEX"):   # read the block's indices (index k at idx row 16 g + k, column kb)
                # a pending word spilled by the previous block's last row is flushed beside the reads
                with m.If(stall):
                    emit_flush(0)
                m.d.sync += [d["cap"].eq(1), d["r"].eq(r), d_srpA.eq(idx_ptr), d_srpB.eq(idx_ptr),
                             idx_ptr.eq(idx_ptr + idx_step2),
                             r.eq(r + (2 if two else 1)),
                             icnt.eq(Mux(icnt == self.INDEX_MIN_CYCLES, icnt, icnt + 1))]
                # registered one cycle ahead: next cycle's r and icnt are r + rstep and icnt + 1
                rstep = 2 if two else 1
                m.d.sync += ilast.eq((r + 2 * rstep >= kcnt) & (icnt >= self.INDEX_MIN_CYCLES - 2))
                with m.If(ilast):
                    begin_row()
                    # no write before the checker has passed the command (``go``): wait for it (only
                    # the first block can get here before ``go``)
                    with m.If(self.go):
                        m.next = "RUN"
                    with m.Else():
                        m.next = "WAIT"

            with m.State("WAIT"):
                with m.If(self.go):
                    m.next = "RUN"

            with m.State("RUN"):
                with m.If(stall):
                    emit_flush(0)
                with m.Else():
                    m.d.sync += [
                        d["pc"].eq(1), d["pair"].eq(pair), d["lo"].eq(lo), d["waddr"].eq(dst_ptr[sh:]),
                        d["wen"].eq((lane_end >= W) | seg_last), d["fin"].eq(seg_last & final & ~spill),
                        d_kA.eq(qA >> g_blog2), d_kB.eq(qB >> g_blog2),
                        d_srpA.eq(src_row + (qA & g_bmask)), d_srpB.eq(src_row + (qB & g_bmask)),
                    ]
                    with m.If(~seg_last):
                        m.d.sync += [qA.eq(qA + g_step), qB.eq(qB + g_step), dst_ptr.eq(dst_ptr + g_step),
                                     sl.eq(sl - 1), seg_last.eq(sl == 1)]
                    with m.Else():
                        m.d.sync += [stall.eq(spill), flush_waddr.eq(dst_ptr[sh:] + 1)]
                        with m.If(~p_last):
                            nd = dst_row + g_dst_stride
                            m.d.sync += [p.eq(p + 1), p_last.eq(p == GROUP - 2),
                                         src_row.eq(src_row + g_src_stride), dst_row.eq(nd), dst_ptr.eq(nd)]
                            begin_row()
                        with m.Elif(more_blk):
                            nd = blk_dst + g_blkstep
                            ni = blk_idx + 2
                            m.d.sync += [n_left.eq(n_left - GROUP), blk_dst.eq(nd), blk_idx.eq(ni)]
                            begin_block(grp_src, nd, ni, nk_blk, nk_blk_m1)
                            m.next = "INDEX"
                        with m.Elif(more_grp):
                            ns = grp_src + (g_src_stride << 4)
                            nd = grp_dst + (g_dst_stride << 4)
                            ni = grp_idx + (g_idx_stride << 4)
                            m.d.sync += [g_left.eq(g_left - 1), n_left.eq(g_n),
                                         grp_src.eq(ns), grp_dst.eq(nd), grp_idx.eq(ni),
                                         blk_dst.eq(nd), blk_idx.eq(ni)]
                            begin_block(ns, nd, ni, nk_grp, nk_grp_m1)
                            m.next = "INDEX"
                        with m.Else():
                            m.next = "DRAIN"

            with m.State("DRAIN"):   # until the last write (or the flush after it) reaches stage 3
                with m.If(stall):
                    emit_flush(1)
                with m.If(st[S3]["fin"]):
                    m.d.comb += [self.done.eq(1), self.status.eq(Status.OK)]
                    m.next = "IDLE"
        with m.If(stall):
            m.d.sync += stall.eq(0)
        m.d.comb += idle.eq(fsm.ongoing("IDLE"))

        # ---- D: the chunks' scaled indices added; read addresses into registers --------------------------
        # The 16 scaled indices of the block: two banks (even and odd k) of LUT RAM (asynchronous reads,
        # one write each per cycle), one copy per read (piece A, piece B).
        banks = []
        for name in ("even", "odd"):
            mem = memory.Memory(shape=IW, depth=GROUP // 2, init=[])
            m.submodules[f"index_{name}"] = mem
            banks.append(mem)

        esz_d = Signal(2, name="esz_d", reset_less=True)     # a copy near the adders
        m.d.sync += esz_d.eq(g_esz)

        def index_of(k, tag, in_index_slot):
            """The scaled index of chunk ``k``, or ``in_index_slot`` in an index slot (the addend of an index
            read's address: 0 on port 0, the index stride on port 1)."""
            ports = [b.read_port(domain="comb") for b in banks]
            out = Signal(UA, name=f"index_{tag}")
            for rp in ports:
                m.d.comb += rp.addr.eq(k[1:])
            m.d.comb += out.eq(Mux(d["cap"], in_index_slot, Mux(k[0], ports[1].data, ports[0].data) << esz_d))
            return out
        sumA, sumB = Signal(UA), Signal(UA)
        m.d.comb += sumA.eq(d_srpA + index_of(d_kA, "a", 0))
        if two:
            m.d.comb += sumB.eq(d_srpB + index_of(d_kB, "b", g_idx_stride))
        addrA, addrB = sumA, (sumB if two else d_srpB)
        raddr0, ren0 = Signal(WA, reset_less=True), Signal()
        m.d.sync += [raddr0.eq(addrA[sh:]), ren0.eq(d["cap"] | d["pc"]), st[2]["offA"].eq(addrA[:sh])]
        m.d.comb += [rd0.addr.eq(raddr0), rd0.en.eq(ren0)]
        if two:
            raddr1, ren1 = Signal(WA, reset_less=True), Signal()
            m.d.sync += [raddr1.eq(addrB[sh:]), ren1.eq(d["cap"] | (d["pc"] & d["pair"])),
                         st[2]["offB"].eq(addrB[:sh])]
            m.d.comb += [rd1.addr.eq(raddr1), rd1.en.eq(ren1)]

        # ---- stage 1: index capture -------------------------------------------------------------------
        # The UB's words pass the engine's input register first: they come from across the die, and
        # stage 1's selects (the index half-word, the merge and the coarse rotation) are the engine's
        # registers (10.3-10.4 ns, 90% routing, in `default` seed 1 at 32c38fc and at 6c333bc with HeAP,
        # when the rotation read the port directly). The registers load only when this engine's reads
        # arrive (stage S1 - 1 has a read, IN_EN_COPIES copies of that flag per port): the ports are
        # shared, and other engines' reads must not move the shifters behind them.
        # (ordered from the UB's even / odd bank words here, with copies of each read's parity of the
        # engine's own: rtl.ub.buffer.ordered_window)
        s1 = st[S1]
        arrive = st[S1 - 2]["cap"] | st[S1 - 2]["pc"]      # registered below: stage S1 - 1's

        def inreg(port, raddr, name):   # (the read's parity in stage 2, the read)
            w = read_window(m, port, raddr[0], arrive, self.IN_EN_COPIES, name)
            return w[:8 * W], w[8 * W:]
        d0, n0 = inreg(rd0, raddr0, "in0")
        d1, n1 = inreg(rd1, raddr1, "in1") if two else (C(0, 8 * W), C(0, 8 * W))

        def scaled(word, off):
            return word.word_select(off[1:], 16)[:IW]
        wp_even, wp_odd = banks[0].write_port(), banks[1].write_port()
        m.d.comb += [wp_even.addr.eq(s1["r"][1:]), wp_odd.addr.eq(s1["r"][1:]),
                     wp_even.data.eq(scaled(d0, s1["offA"]))]
        if two:             # r is even: index r from port 0, r + 1 from port 1
            m.d.comb += [wp_odd.data.eq(scaled(d1, s1["offB"])), wp_even.en.eq(s1["cap"]), wp_odd.en.eq(s1["cap"])]
        else:
            m.d.comb += [wp_odd.data.eq(wp_even.data),
                         wp_even.en.eq(s1["cap"] & ~s1["r"][0]), wp_odd.en.eq(s1["cap"] & s1["r"][0])]

        # ---- stage 1-2: place the piece(s) ------------------------------------------------------------
        # One stage before the data: which word of the window each byte position takes (a piece's byte
        # at position i >= offset is in the first word, one below in the second) and the rotation
        # (offset - lane modulo W): coarse (multiples of 8 bytes) in stage 1, fine (0-7) in stage 2.
        pre = st[S1 - 1]
        mmA, mmB = Signal(W, name="wordsel_a", reset_less=True), Signal(W, name="wordsel_b", reset_less=True)
        rotA, rotB = Signal(sh, name="rot_a", reset_less=True), Signal(sh, name="rot_b", reset_less=True)
        m.d.sync += [
            mmA.eq(Cat(C(i, sh + 1) >= pre["offA"] for i in range(W))),
            mmB.eq(Cat(C(i, sh + 1) >= pre["offB"] for i in range(W))),
            rotA.eq(pre["offA"] - pre["lo"]),
            rotB.eq(pre["offB"] - pre["lo"] - g_P),
        ]

        def rotate_coarse(word, amount, name):
            """Register: byte i = byte (i + 8 amount) modulo W of ``word``."""
            out = Signal(8 * W, name=name, reset_less=True)
            m.d.sync += out.eq(Cat(word, word).bit_select(Cat(C(0, 3 + _FINE_BITS), amount), 8 * W)
                               if len(amount) else word)
            return out

        def merged(first, second, sel):
            return Cat(Mux(sel[i], first.word_select(i, 8), second.word_select(i, 8)) for i in range(W))
        cA = rotate_coarse(merged(d0, n0, mmA), rotA[_FINE_BITS:], "coarse_a")
        if two:
            cB = rotate_coarse(merged(d1, n1, mmB), rotB[_FINE_BITS:], "coarse_b")

        # lanes of the slot (computed one stage before the data, registered for stage 1): rel = lane - lo
        # modulo W; piece A covers rel < P, piece B (paired) P <= rel < 2 P; lanes >= lo are the current
        # destination word, the others (wrapped around) the next one
        la1, lb1 = Signal(W, name="lanes_a1"), Signal(W, name="lanes_b1")
        ge1 = Signal(W, name="lanes_ge1", reset_less=True)
        lanes_a, lanes_b, ge = [], [], []
        for x in range(W):
            rel = Signal(sh, name=f"rel{x}")
            m.d.comb += rel.eq(x - pre["lo"])
            lanes_a.append((rel >> g_plog2) == 0)
            lanes_b.append(pre["pair"] & ((rel >> g_plog2) == 1))
            ge.append(C(x, sh) >= pre["lo"])
        m.d.sync += [la1.eq(Cat(lanes_a) & pre["pc"].replicate(W)), lb1.eq(Cat(lanes_b) & pre["pc"].replicate(W)),
                     ge1.eq(Cat(ge))]
        vB = Signal(W, name="lanes_b2", reset_less=True)
        pcur2, pnext2 = Signal(W, name="cur_lanes2"), Signal(W, name="next_lanes2")
        m.d.sync += [vB.eq(lb1), pcur2.eq((la1 | lb1) & ge1), pnext2.eq((la1 | lb1) & ~ge1)]

        # The fine rotation amounts: one copy per group of lanes (the amount fans out to every bit's
        # multiplexer), each loaded only when its piece has a lane in the group (distinct enables keep
        # synthesis from merging the copies; a lane no piece uses is not written).
        GL = min(W, 4)               # lanes per fine-amount copy (16: 11.1 ns in `default` seed 3 at
                                     # ea2de51; 8: 10.8 ns at e1b106f)

        def fine_amounts(rot, lanes, tag):
            out = []
            for g in range(W // GL):
                f = Signal(_FINE_BITS, name=f"fine_{tag}{g}", reset_less=True)
                with m.If(lanes[GL * g:GL * (g + 1)].any()):
                    m.d.sync += f.eq(rot[:_FINE_BITS])
                out.append(f)
            return out

        def rotate_fine(word, amounts):
            """Lane x = byte (x + amount) modulo W of ``word``, one amount per group of GL lanes (a
            logarithmic shifter per group)."""
            ext = Cat(word, word[:8 * ((1 << _FINE_BITS) - 1)])
            return Cat(ext[8 * GL * g:8 * (GL * (g + 1) + (1 << _FINE_BITS) - 1)].bit_select(
                           Cat(C(0, 3), f), 8 * GL) for g, f in enumerate(amounts))

        # stage 2: the fine rotation, the pair merged per lane
        placed = Signal(8 * W, name="placed", reset_less=True)
        fineA = rotate_fine(cA, fine_amounts(rotA, la1, "a"))
        if two:
            fineB = rotate_fine(cB, fine_amounts(rotB, lb1, "b"))
            m.d.sync += placed.eq(Cat(Mux(vB[x], fineB.word_select(x, 8), fineA.word_select(x, 8))
                                      for x in range(W)))
        else:
            m.d.sync += placed.eq(fineA)
        pcur, pnext = Signal(W, name="cur_lanes"), Signal(W, name="next_lanes")
        m.d.sync += [pcur.eq(pcur2), pnext.eq(pnext2)]

        # ---- stage 3: pack and write --------------------------------------------------------------------
        s3 = st[S3]
        pend = Signal(8 * W, name="pend", reset_less=True)
        pend_be = Signal(W)
        m.d.comb += [
            wr.addr.eq(s3["waddr"]),
            wr.data.eq(Cat(Mux(pcur[x], placed.word_select(x, 8), pend.word_select(x, 8)) for x in range(W))),
            wr.be.eq(Mux(s3["wen"], pend_be | pcur, 0)),
        ]
        m.d.sync += [
            pend.eq(Cat(Mux(pcur[x] | pnext[x], placed.word_select(x, 8), pend.word_select(x, 8))
                        for x in range(W))),
            pend_be.eq(Mux(s3["wen"], pnext, pend_be | pcur)),
        ]
        return m
