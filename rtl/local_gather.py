"""NKI ``local_gather`` inside the unified buffer (LOCAL_GATHER)."""

from amaranth import *
from amaranth.lib import wiring

from .checker import stage
from .engine import EngineSignature
from .instructions import LOCAL_GATHER_GROUP, LOCAL_GATHER_MAX_INDICES, LOCAL_GATHER_MAX_NEPI_LOG2
from .isa import Opcode
from .status import Status
from .tile import elem_log2
from .ub import UnifiedBuffer

__all__ = ["LocalGatherEngine"]

GROUP = LOCAL_GATHER_GROUP                  #: rows (partitions) per group; one index list per group
MAX_INDICES = LOCAL_GATHER_MAX_INDICES      #: indices per group
MAX_NEPI_LOG2 = LOCAL_GATHER_MAX_NEPI_LOG2  #: num_elem_per_idx <= 32


class LocalGatherEngine(wiring.Component):
    """Executes LOCAL_GATHER: ``dst`` (destination), ``src0`` (source), ``src1`` (UINT16 index tile),
    immediates ``nepi_log2`` and ``num_valid`` (docs/semantics.md, "local_gather").

    For every group of 16 source rows the group's ``16 x X`` index block, flattened column by column
    (``indices_1d[k] = idx[16 g + k % 16, k // 16]``), lists ``n`` element offsets; row ``p`` of the
    group gets ``dst[p, k * nepi + e] = src[p, indices_1d[k] + e]`` (a bit copy of ``B = nepi * size``
    bytes per *chunk*).

    Parameters: ``config`` (uses ``ub_word_bytes`` = W, ``ub_read_ports``).

    Ports: :class:`EngineSignature` with ``min(2, config.ub_read_ports)`` UB read ports and the UB write
    port (no AXI).

    Operation. Work is cut into *blocks* of up to 16 consecutive ``k`` (one column of the group's index
    block). For each block the engine first reads its indices into 16 registers (two per cycle, at
    least 2 cycles), then, for each of the 16 rows, moves the block's chunks as *pieces* of
    ``P = min(B, W, 32)`` bytes. A UB read port returns a 2-word window (the word at ``addr`` and the
    next one, :class:`rtl.ub.UnifiedBuffer`), so one read of a piece's first source word holds the whole
    piece, straddling two words or not: one piece per cycle on one port, and two consecutive pieces of
    a row's block with ``2 P <= W`` go together in one cycle (one read port each). Pieces are packed
    into destination words (a row's chunks are contiguous in ``dst``), so a destination word is written
    once per block and row, with exact byte enables; nothing outside ``dst``'s valid region is written,
    whatever the offsets. An offset with
    ``indices_1d[k] + nepi > C`` reads whatever lies there (addresses wrap at the end of the UB): the
    result is undefined, the status ``OK``.

    Latency: ``done`` (status ``OK``) comes in the cycle of the last UB write; an empty destination
    (no rows or ``n = 0``) is done in the ``start`` cycle.

    Throughput, per block of ``K`` chunks and 16 rows: ``max(2, ceil(K / 2))`` cycles of index reads
    (``max(2, K)`` with one read port) plus one cycle per piece (half a cycle for a paired piece; where a
    piece lies in its source words does not matter) plus one cycle at the end of a row's block when its
    last destination word spills into the next word (only when ``dst`` rows are not word-aligned).
    Hence, with two read ports and word-aligned ``dst`` rows, at any offsets: ``B >= W`` moves ``W``
    bytes per cycle, at least ``32 / 33`` = 97% of the write port once the index reads are counted
    (``B = W``: ``K / 2`` index cycles per ``16 K`` moving ones); ``B = W / 2`` also moves ``W``
    bytes per cycle, ``16 / 17`` = 94% (``K / 2`` per ``8 K``); ``B < W / 2`` is bound by the read
    ports at ``2 B`` bytes per cycle. With one read port: one piece per cycle, nothing is paired.
    """

    opcodes = (Opcode.LOCAL_GATHER,)

    def __init__(self, config):
        self._config = config
        self._ports = min(2, config.ub_read_ports)
        super().__init__(EngineSignature(config, ub_read_ports=self._ports, ub_write=True))

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
        AW = 26                      # byte addresses: UB (<= 2**24) + offset (<= 2**18) + piece
        cmd = self.cmd
        dst, src, idx = cmd.dst, cmd.src0, cmd.src1
        rd0 = self.ub_rd[0]
        rd1 = self.ub_rd[1] if two else None
        wr = self.ub_wr

        # ---- geometry, from the held command ---------------------------------------------------------
        esz = elem_log2(m, src.dtype)
        b_log2 = Signal(3)           # log2 chunk bytes
        p_log2 = Signal(3)           # log2 piece bytes
        p_cap = min(sh, 5)
        npc_log2 = Signal(3)
        npc_m1 = Signal(4)           # pieces per chunk - 1
        psize = Signal(range(W + 1))
        n = Signal(13)
        groups = Signal(12)
        src_stride, dst_stride, idx_stride = Signal(19), Signal(19), Signal(17)
        m.d.comb += [
            b_log2.eq(esz + cmd.nepi_log2),
            p_log2.eq(Mux(b_log2 > p_cap, p_cap, b_log2)),
            npc_log2.eq(b_log2 - p_log2),
            npc_m1.eq((C(1, 8) << npc_log2) - 1),
            psize.eq(C(1, 6) << p_log2),
            n.eq(Mux(cmd.num_valid != 0, cmd.num_valid, idx.valid_cols << 4)),
            groups.eq(src.valid_rows >> 4),
            src_stride.eq(src.cols << esz),
            dst_stride.eq(dst.cols << esz),
            idx_stride.eq(idx.cols << 1),
        ]
        empty = (groups == 0) | (n == 0)

        # ---- state -----------------------------------------------------------------------------------
        idx_regs = [Signal(16, name=f"index{i}", reset_less=True) for i in range(GROUP)]
        idx_arr = Array(idx_regs)
        g_left = Signal(12)          # groups after the current one
        n_left = Signal(13)          # chunks of the group from the current block on
        kcnt = Signal(5)             # chunks in the current block (1..16)
        grp_src, grp_dst, grp_idx = Signal(AW), Signal(AW), Signal(AW)   # row 16 g of each tile
        blk_dst, blk_idx = Signal(AW), Signal(AW)    # dst row 16 g at chunk 16 kb; idx (16 g, kb)
        src_row, dst_row, dst_ptr = Signal(AW), Signal(AW), Signal(AW)
        idx_addr = Signal(AW)
        p = Signal(4)                # row in the group
        k = Signal(5)                # chunk in the block
        j = Signal(4)                # piece in the chunk
        r = Signal(5)                # index being read
        stall = Signal()             # skip one issue cycle: the packer flushes a spilled word

        # Issue (cycle t) -> stage 1 (cycle t + READ_LATENCY, when the read data arrives): what stage 1
        # needs travels beside the reads, set in the issue cycle (the ``i_*`` signals, zero when nothing
        # is issued) and delayed by ``LAT`` registers.
        LAT = UnifiedBuffer.READ_LATENCY
        i_cap, i_pc = Signal(), Signal()
        i_cap_r = Signal(4)
        i_cap_off0, i_cap_off1 = Signal(sh), Signal(sh)
        i_offA, i_offB, i_lo = Signal(sh), Signal(sh), Signal(sh)
        i_pair, i_write = Signal(), Signal()
        i_waddr = Signal(range(cfg.ub_words))
        m.d.sync += stall.eq(0)
        issued = [Cat(i_cap, i_pc, i_cap_r, i_cap_off0, i_cap_off1, i_offA, i_offB, i_lo, i_pair, i_write,
                      i_waddr, stall)]
        for d in range(LAT):
            r_ = Signal(len(issued[0]), name=f"issued{d + 1}")
            m.d.sync += r_.eq(issued[-1])
            issued.append(r_)
        cap, pc = Signal(), Signal()
        cap_r = Signal(4)
        cap_off0, cap_off1 = Signal(sh), Signal(sh)
        s_offA, s_offB, s_lo = Signal(sh), Signal(sh), Signal(sh)
        s_pair, s_write = Signal(), Signal()
        s_waddr = Signal(range(cfg.ub_words))
        s_flush = Signal()           # a skipped issue cycle reaches stage 1: the spilled word is written
        m.d.comb += Cat(cap, pc, cap_r, cap_off0, cap_off1, s_offA, s_offB, s_lo, s_pair, s_write, s_waddr,
                        s_flush).eq(issued[-1])
        # pieces or flushes still on their way to stage 1 (the last one ends the instruction)
        in_flight = Cat(x[1] for x in issued[1:-1]).any() | Cat(x[-1] for x in issued[:-1]).any()

        def begin_block(src_base, dst_base, idx_base, left):
            m.d.sync += [
                r.eq(0), idx_addr.eq(idx_base), kcnt.eq(Mux(left > GROUP, GROUP, left)),
                p.eq(0), k.eq(0), j.eq(0), src_row.eq(src_base), dst_row.eq(dst_base), dst_ptr.eq(dst_base),
            ]

        # ---- issue: piece addresses ------------------------------------------------------------------
        last_j = j == npc_m1
        lastA = (k == kcnt - 1) & last_j
        kB = Signal(5)
        jB = Signal(4)
        m.d.comb += [kB.eq(Mux(last_j, k + 1, k)), jB.eq(Mux(last_j, 0, j + 1))]
        lastB_j = jB == npc_m1
        lastB = (kB == kcnt - 1) & lastB_j
        srcA, srcB = Signal(AW), Signal(AW)
        m.d.comb += [
            srcA.eq(src_row + (idx_arr[k[:4]] << esz) + (j << p_log2)),
            srcB.eq(src_row + (idx_arr[kB[:4]] << esz) + (jB << p_log2)),
        ]
        offA, offB, lo = srcA[:sh], srcB[:sh], dst_ptr[:sh]
        # a read port returns a 2-word window (``data``, ``next``): any piece of P <= W bytes is in the
        # window of its first word, so two pieces with 2 P <= W always pair, straddling or not
        pair = Signal()
        if two:
            m.d.comb += pair.eq(~lastA & ((psize << 1) <= W))
        seg_end = Mux(pair, lastB, lastA)
        L = Mux(pair, psize << 1, psize)
        lane_end = lo + L
        spill = seg_end & (lane_end > W)

        with m.FSM(name="local_gather"):
            with m.State("IDLE"):
                with m.If(self.start):
                    with m.If(empty):
                        m.d.comb += [self.done.eq(1), self.status.eq(Status.OK)]
                    with m.Else():
                        m.d.sync += [
                            g_left.eq(groups - 1), n_left.eq(n),
                            grp_src.eq(src.base), grp_dst.eq(dst.base), grp_idx.eq(idx.base),
                            blk_dst.eq(dst.base), blk_idx.eq(idx.base),
                        ]
                        begin_block(src.base, dst.base, idx.base, n)
                        m.next = "INDEX"

            with m.State("INDEX"):   # read the block's indices (index k at idx row 16 g + k, column kb)
                with m.If(~stall):
                    a1 = idx_addr + idx_stride
                    m.d.comb += [rd0.addr.eq(idx_addr >> sh), rd0.en.eq(1)]
                    m.d.comb += [i_cap.eq(1), i_cap_r.eq(r), i_cap_off0.eq(idx_addr[:sh])]
                    if two:
                        m.d.comb += [rd1.addr.eq(a1 >> sh), rd1.en.eq(1)]
                        m.d.comb += i_cap_off1.eq(a1[:sh])
                        m.d.sync += [r.eq(r + 2), idx_addr.eq(idx_addr + (idx_stride << 1))]
                        last = (r + 2 >= kcnt) & (r >= 2 * LAT)
                    else:
                        m.d.sync += [r.eq(r + 1), idx_addr.eq(a1)]
                        last = (r + 1 >= kcnt) & (r >= LAT)
                    # at least LAT + 1 cycles: an index read in cycle t is in its register from t + LAT + 1
                    with m.If(last):
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
                with m.If(~stall):
                    m.d.comb += [rd0.addr.eq(srcA >> sh), rd0.en.eq(1)]
                    if two:
                        m.d.comb += [rd1.addr.eq(srcB >> sh), rd1.en.eq(pair)]
                    m.d.comb += [
                        i_pc.eq(1), i_offA.eq(offA), i_offB.eq(offB), i_lo.eq(lo), i_pair.eq(pair),
                        i_write.eq((lane_end >= W) | seg_end), i_waddr.eq(dst_ptr >> sh),
                    ]
                    m.d.sync += dst_ptr.eq(dst_ptr + L)
                    with m.If(pair):
                        m.d.sync += [k.eq(Mux(lastB_j, kB + 1, kB)), j.eq(Mux(lastB_j, 0, jB + 1))]
                    with m.Else():
                        m.d.sync += [k.eq(kB), j.eq(jB)]
                    with m.If(seg_end):
                        m.d.sync += stall.eq(spill)
                        with m.If(p != GROUP - 1):
                            m.d.sync += [
                                p.eq(p + 1), k.eq(0), j.eq(0), src_row.eq(src_row + src_stride),
                                dst_row.eq(dst_row + dst_stride), dst_ptr.eq(dst_row + dst_stride),
                            ]
                        with m.Elif(n_left > GROUP):
                            nd = blk_dst + (C(GROUP, 5) << b_log2)
                            ni = blk_idx + 2
                            m.d.sync += [n_left.eq(n_left - GROUP), blk_dst.eq(nd), blk_idx.eq(ni)]
                            begin_block(grp_src, nd, ni, n_left - GROUP)
                            m.next = "INDEX"
                        with m.Elif(g_left != 0):
                            ns = grp_src + (src_stride << 4)
                            nd = grp_dst + (dst_stride << 4)
                            ni = grp_idx + (idx_stride << 4)
                            m.d.sync += [
                                g_left.eq(g_left - 1), n_left.eq(n),
                                grp_src.eq(ns), grp_dst.eq(nd), grp_idx.eq(ni), blk_dst.eq(nd), blk_idx.eq(ni),
                            ]
                            begin_block(ns, nd, ni, n)
                            m.next = "INDEX"
                        with m.Else():
                            m.next = "DONE"

            with m.State("DONE"):    # until the last write (or the flush after it) happens
                with m.If(~stall & ~in_flight):
                    m.d.comb += [self.done.eq(1), self.status.eq(Status.OK)]
                    m.next = "IDLE"

        # ---- stage 1: index capture -------------------------------------------------------------------
        d0 = rd0.data
        d1 = rd1.data if two else C(0, 8 * W)
        with m.If(cap):
            for i in range(GROUP):
                with m.If(cap_r == i):
                    m.d.sync += idx_regs[i].eq(d0.word_select(cap_off0 >> 1, 16))
                if two:
                    with m.If(cap_r + 1 == i):
                        m.d.sync += idx_regs[i].eq(d1.word_select(cap_off1 >> 1, 16))

        # ---- stage 1: place the piece(s) and pack destination words -----------------------------------
        # Piece A comes from read port 0's window (its source word and the next), piece B (when paired)
        # from port 1's. Lanes 0..2W-1 span the current destination word and the next one.
        selA = Signal(range(2 * W + 1))
        selB = Signal(range(3 * W + 1))
        m.d.comb += [selA.eq(W + s_offA - s_lo), selB.eq(2 * W + s_offB - s_lo - psize)]
        # (every intermediate is a Signal: reusing an expression would copy it into each use)
        plA, plB, placed = Signal(16 * W), Signal(16 * W), Signal(16 * W)
        beA, beB, placed_be = Signal(2 * W), Signal(2 * W), Signal(2 * W)
        pend = Signal(8 * W, reset_less=True)
        pend_be = Signal(W)
        pend_addr = Signal(range(cfg.ub_words))
        cur = Signal(8 * W)
        cur_be = Signal(W)
        m.d.comb += [
            plA.eq(Cat(C(0, 8 * W), d0, rd0.next, C(0, 8 * W)) >> (selA << 3)),
            plB.eq(Cat(C(0, 16 * W), d1, rd1.next if two else C(0, 8 * W), C(0, 8 * W)) >> (selB << 3)),
            beA.eq(Cat((s_lo <= lane) & (lane < s_lo + psize) for lane in range(2 * W))),
            beB.eq(Cat(s_pair & (s_lo + psize <= lane) & (lane < s_lo + (psize << 1)) for lane in range(2 * W))),
            placed.eq(Cat(Mux(beB[lane], plB.word_select(lane, 8), plA.word_select(lane, 8))
                          for lane in range(2 * W))),
            placed_be.eq(beA | beB),
            cur.eq(Cat(Mux(placed_be[lane], placed.word_select(lane, 8), pend.word_select(lane, 8))
                       for lane in range(W))),
            cur_be.eq(pend_be | placed_be[:W]),
        ]
        with m.If(s_flush):
            m.d.comb += [wr.addr.eq(pend_addr), wr.data.eq(pend), wr.be.eq(pend_be)]
            m.d.sync += pend_be.eq(0)
        with m.Elif(pc):
            with m.If(s_write):
                m.d.comb += [wr.addr.eq(s_waddr), wr.data.eq(cur), wr.be.eq(cur_be)]
                m.d.sync += [pend.eq(placed[8 * W:]), pend_be.eq(placed_be[W:]), pend_addr.eq(s_waddr + 1)]
            with m.Else():
                m.d.sync += [pend.eq(cur), pend_be.eq(cur_be)]
        return m
