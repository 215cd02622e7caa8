"""The LOCAL_GATHER engine's control: its state registers (:func:`control_registers`), the registers that
carry each slot down the pipeline (:func:`slot_registers`) and the state machine that issues one slot
per cycle (:func:`slot_issue`): index reads, piece reads or a flush of a pending word."""

from types import SimpleNamespace

from amaranth import *

from rtl.engines.local_gather.geometry import GROUP, GROUP_LOG2, GROUPS_BITS, INDEX_BYTES, INDEX_BYTES_LOG2, K_BITS, \
    K_INDEX_BITS, N_BITS, SLOT_BITS, legal_geometry
from rtl.isa import Status
from rtl.lib.contract import require

__all__ = ["control_registers", "slot_registers", "slot_issue"]


def control_registers(m, eng, sz, geo):
    """The control state (reset-less: loaded while idle or at a block's or row's start before any use;
    the state machine, the slots' valid bits, ``stall`` and the pending byte enables have resets): the
    group, block and row pointers, the index-read counters, the running byte offsets of a row's block,
    and the per-block values derived continuously from ``kcnt``, ``n_left`` and the geometry (a
    register, ``BLOCK_VALUES_DELAY``: they must be valid when a block's first row is begun, in its last
    index cycle; checked here for the first block, whose geometry comes ``GEOMETRY_DELAY`` cycles after
    ``start``). Returns them as a namespace."""
    UA, WA = sz.UA, sz.WA
    rstep = 2 if sz.two else 1       # indices read per index cycle (one per read port)
    rstep_log2 = rstep.bit_length() - 1
    require(eng.INDEX_MIN_CYCLES * rstep <= GROUP,
            f"a block's index reads, at least INDEX_MIN_CYCLES = {eng.INDEX_MIN_CYCLES} cycles of {rstep}, "
            f"go to the {GROUP} entries of the index banks (a slot's r has {K_INDEX_BITS} bits): "
            f"{eng.INDEX_MIN_CYCLES * rstep} reads would wrap onto the block's first indices")
    ready = eng.GEOMETRY_DELAY + eng.BLOCK_VALUES_DELAY
    require(ready <= eng.INDEX_MIN_CYCLES - 1,
            f"the first block's first row is begun in its last index cycle, INDEX_MIN_CYCLES - 1 = "
            f"{eng.INDEX_MIN_CYCLES - 1} cycles after start at the earliest, from the per-block values, valid "
            f"GEOMETRY_DELAY + BLOCK_VALUES_DELAY = {ready} cycles after start")
    most = max(((GROUP << t["npc_log2"]) - 1) >> t["pmode"] for t in legal_geometry(sz.sh, sz.two))
    require(most < 1 << SLOT_BITS, f"the slot counters (SLOT_BITS = {SLOT_BITS}) hold a row's block's "
                                   f"slots - 1, up to {most} with {sz.W}-byte words")

    def creg(width, name):
        return Signal(width, name=name, reset_less=True)
    g_left = creg(GROUPS_BITS, "g_left")  # groups after the current one
    n_left = creg(N_BITS, "n_left")  # chunks of the group from the current block on
    kcnt = creg(K_BITS, "kcnt")       # chunks in the current block (1..16)
    km1 = creg(K_INDEX_BITS, "km1")   # kcnt - 1
    grp_src, grp_dst, grp_idx = (Signal(UA, name=f"grp_{t}", reset_less=True) for t in ("src", "dst", "idx"))
    blk_dst, blk_idx = (Signal(UA, name=f"blk_{t}", reset_less=True) for t in ("dst", "idx"))
    src_row, dst_row, dst_ptr = (creg(UA, t) for t in ("src_row", "dst_row", "dst_ptr"))
    idx_ptr = Signal(UA, reset_less=True)    # the next index read (port 1 reads idx_ptr + idx_stride)
    p = creg(K_INDEX_BITS, "p")  # row in the group
    p_last = creg(1, "p_last")   # p == 15
    r = creg(K_BITS, "r")        # next index to read (up to GROUP after the block's last index cycle)
    icnt = creg(range(eng.INDEX_MIN_CYCLES + 1), "icnt")   # index cycles so far (saturating)
    ilast = creg(1, "ilast")     # this is the block's last index cycle
    qA, qB = creg(sz.QW, "qA"), creg(sz.QW, "qB")  # byte offsets in the row's block of the slot's pieces
    sl = creg(SLOT_BITS, "sl")   # slots left in the row's block after this one
    seg_last = creg(1, "seg_last")   # this slot ends the row's block
    stall = Signal()             # flush a spilled word: no piece slot this cycle
    flush_waddr = Signal(WA, reset_less=True)

    # per-block values, derived continuously from kcnt: slots per row's block - 1 = (pieces - 1) >> pmode,
    # pieces = kcnt << npc_log2
    b_slm1 = creg(SLOT_BITS, "b_slm1")   # slots per row's block - 1
    b_sl1 = creg(1, "b_sl1")     # one slot per row's block
    b_lastb = creg(1, "b_lastb") # the last slot of a row's block has a second piece
    more_blk = creg(1, "more_blk")   # n_left > 16: another block in this group
    more_grp = creg(1, "more_grp")   # g_left != 0
    nk_blk, nk_blk_m1 = creg(K_BITS, "nk_blk"), creg(K_INDEX_BITS, "nk_blk_m1")   # chunks of the next block
    nk_grp, nk_grp_m1 = creg(K_BITS, "nk_grp"), creg(K_INDEX_BITS, "nk_grp_m1")   # chunks of a group's first
    slm1 = Signal(SLOT_BITS)
    m.d.comb += slm1.eq((((km1 << geo.g_npc_log2) | ((C(1, len(km1)) << geo.g_npc_log2) - 1)) >> geo.g_pmode))
    m.d.sync += [
        b_slm1.eq(slm1), b_sl1.eq(slm1 == 0), b_lastb.eq(geo.g_pmode & (km1[0] | (geo.g_npc_log2 != 0))),
        more_blk.eq(n_left > GROUP), more_grp.eq(g_left != 0),
        nk_blk.eq(Mux(n_left > 2 * GROUP, GROUP, (n_left - GROUP)[:K_BITS])),
        nk_blk_m1.eq(Mux(n_left > 2 * GROUP, GROUP - 1, (n_left - GROUP - 1)[:K_INDEX_BITS])),
        nk_grp.eq(Mux(geo.g_n > GROUP, GROUP, geo.g_n)),
        nk_grp_m1.eq(Mux(geo.g_n > GROUP, GROUP - 1, (geo.g_n - 1)[:K_INDEX_BITS])),
    ]
    return SimpleNamespace(
        rstep=rstep, rstep_log2=rstep_log2, g_left=g_left, n_left=n_left, kcnt=kcnt, km1=km1,
        grp_src=grp_src, grp_dst=grp_dst, grp_idx=grp_idx, blk_dst=blk_dst, blk_idx=blk_idx,
        src_row=src_row, dst_row=dst_row, dst_ptr=dst_ptr, idx_ptr=idx_ptr, p=p, p_last=p_last,
        r=r, icnt=icnt, ilast=ilast, qA=qA, qB=qB, sl=sl, seg_last=seg_last, stall=stall, flush_waddr=flush_waddr,
        b_slm1=b_slm1, b_sl1=b_sl1, b_lastb=b_lastb, more_blk=more_blk, more_grp=more_grp,
        nk_blk=nk_blk, nk_blk_m1=nk_blk_m1, nk_grp=nk_grp, nk_grp_m1=nk_grp_m1)


def slot_registers(m, eng, sz):
    """The pipeline's slot registers: ``st[t]`` describes the slot issued ``t`` cycles ago, from D
    (``st[D_STAGE]``, set by the control) to the write stage (``st[PIPELINE]``), one register stage per
    cycle; each stage's valid bits (``cap``: index reads, ``pc``: piece reads, ``wen``: a UB write,
    ``fin``: the instruction's last slot) have resets. D's ``k`` and source pointers of the two pieces
    (``d_kA``, ``d_kB``, ``d_srpA``, ``d_srpB``) are registers of their own; the byte offsets ``offA`` /
    ``offB`` enter at ``READ_STAGE``, from D's sums. Returns the namespace of ``st``, ``d`` and those."""
    sh, WA, UA = sz.sh, sz.WA, sz.UA
    S3 = eng.STAGE_1 + eng.PLACE_STAGES          # the write stage
    require(S3 == eng.PIPELINE, f"the write stage STAGE_1 + PLACE_STAGES = {S3} must be PIPELINE = "
                                f"{eng.PIPELINE} (``done`` and the cycle model count PIPELINE)")

    def info(t):
        return {
            "cap": Signal(name=f"s{t}_cap"),       # index read(s)
            "pc": Signal(name=f"s{t}_pc"),         # piece read(s)
            "wen": Signal(name=f"s{t}_wen"),       # a UB write in stage 3
            "fin": Signal(name=f"s{t}_fin"),       # the instruction's last slot
            "pair": Signal(name=f"s{t}_pair", reset_less=True),
            "r": Signal(K_INDEX_BITS, name=f"s{t}_r", reset_less=True),
            "lo": Signal(sh, name=f"s{t}_lo", reset_less=True),
            "waddr": Signal(WA, name=f"s{t}_waddr", reset_less=True),
            "offA": Signal(sh, name=f"s{t}_offA", reset_less=True),
            "offB": Signal(sh, name=f"s{t}_offB", reset_less=True),
        }
    st = [None] + [info(t) for t in range(1, S3 + 1)]
    for t in range(eng.D_STAGE + 1, S3 + 1):
        for key, sig in st[t].items():
            if not (t == eng.READ_STAGE and key in ("offA", "offB")):
                m.d.sync += sig.eq(st[t - 1][key])
    d = st[eng.D_STAGE]
    d_kA, d_kB = Signal(K_INDEX_BITS, reset_less=True), Signal(K_INDEX_BITS, reset_less=True)
    d_srpA, d_srpB = Signal(UA, reset_less=True), Signal(UA, reset_less=True)

    # every cycle the control emits a slot into D (nothing unless set below)
    for key in ("cap", "pc", "wen", "fin"):
        m.d.sync += d[key].eq(0)
    return SimpleNamespace(st=st, d=d, d_kA=d_kA, d_kB=d_kB, d_srpA=d_srpA, d_srpB=d_srpB)


def slot_issue(m, eng, sz, geo, c, pl, wq):
    """The state machine that issues one slot per cycle into D (``pl.d``): index reads (``INDEX``: the
    first in the ``start`` cycle), piece reads (``RUN``: a piece, or two paired, of a row's block), or a
    flush of a word spilled at the end of a row's block (``stall``); ``WAIT`` holds the first block's
    first piece slot until ``go``; ``DRAIN`` answers ``done`` when the write port takes the last word
    (marked ``last`` in the write queue ``wq``); an empty command is done from ``EMPTY``. Drives
    ``idle``, ``done`` and ``status``.

    With the engine's ``overlap`` (:mod:`rtl.engines.local_gather.overlap`) the issue returns to ``IDLE``
    in the cycle after the instruction's last slot (``DRAIN`` only flushes the last row's spilled word,
    when it spills, and is left when that flush goes), an empty command never leaves ``IDLE``, and
    ``done``, ``status`` and ``release`` are driven by ``overlap.release_and_done`` (no ``EMPTY`` state).
    Returns the namespace of ``idle`` (the state machine in ``IDLE``) and ``last_taken`` (the port takes
    an instruction's last word in this cycle).

    The write queue's ``room`` (a register) gates the slots that may write: ``RUN`` (a piece slot or a
    flush) and the flushes of ``INDEX`` and ``DRAIN`` wait for it, holding their state (a cycle without
    a slot, a bubble, as in ``WAIT``); ``stall`` stays set until its flush goes. Index reads write
    nothing and go on."""
    W, sh = sz.W, sz.sh
    cmd = eng.cmd
    overlap = eng._overlap
    d = pl.d
    room = wq.room
    # the instruction's last word, taken by the port in this cycle
    last_taken = Signal()
    m.d.comb += last_taken.eq(wq.o.valid & wq.o.ready & wq.o.payload.last)

    # ---- issue: the piece slot's values (used in RUN)
    pair = Signal()
    m.d.comb += pair.eq(geo.g_pmode & (~c.seg_last | c.b_lastb))
    L = Mux(pair, geo.g_P << 1, geo.g_P)
    lo = c.dst_ptr[:sh]
    lane_end = Signal(sh + 2)        # < 2 W (one bit spare)
    m.d.comb += lane_end.eq(lo + L)
    spill = c.seg_last & (lane_end > W)
    final = c.p_last & ~c.more_blk & ~c.more_grp

    def emit_flush(fin):
        """The flush of the spilled word (``stall``): its valid bits only with ``room``. (Its address
        is a don't-care without ``wen``: loaded whether or not the flush goes, so that ``room`` reaches
        no data register.)"""
        m.d.sync += d["waddr"].eq(c.flush_waddr)
        with m.If(room):
            m.d.sync += [d["wen"].eq(1), d["fin"].eq(fin)]

    def begin_block(src_base, dst_base, idx_base, k, km1_, first=0):
        """The next block's state (``k`` chunks, ``km1_`` = k - 1); ``first``: how many index cycles
        were already issued (at start)."""
        m.d.sync += [
            c.r.eq(first * c.rstep), c.icnt.eq(first), c.ilast.eq(0), c.idx_ptr.eq(idx_base),
            c.kcnt.eq(k), c.km1.eq(km1_), c.p.eq(0), c.p_last.eq(0), c.src_row.eq(src_base),
            c.dst_row.eq(dst_base), c.dst_ptr.eq(dst_base),
        ]

    def begin_row():
        m.d.sync += [c.qA.eq(0), c.qB.eq(geo.g_P), c.sl.eq(c.b_slm1), c.seg_last.eq(c.b_sl1)]

    idx_step2 = geo.g_idx_stride << c.rstep_log2 if sz.two else geo.g_idx_stride    # index stride x rstep
    with m.FSM(name="local_gather") as fsm:
        with m.State("IDLE"):
            with m.If(eng.start):
                if overlap:
                    # (an empty gather issues nothing: its ``done`` waits for the older ones',
                    # ``overlap.release_and_done``)
                    with m.If(~geo.empty):
                        m.next = "INDEX"
                else:
                    # (an empty gather is done a cycle later, from the state register: ``done`` from
                    # the command's decode drove the front end's state logic, a 10.6 ns path)
                    with m.If(geo.empty):
                        m.next = "EMPTY"
                    with m.Else():
                        m.next = "INDEX"
            # the first block's state, from the command; its first index read(s) go in the start cycle
            dst, src, idx = cmd.dst, cmd.src0, cmd.src1
            nv = cmd.num_valid
            big = (nv == 0) | (nv > GROUP)           # the first block has 16 chunks
            m.d.sync += [
                c.g_left.eq(geo.groups_c - 1), c.n_left.eq(geo.n_c),
                c.grp_src.eq(src.base), c.grp_dst.eq(dst.base), c.grp_idx.eq(idx.base),
                c.blk_dst.eq(dst.base), c.blk_idx.eq(idx.base),
                d["cap"].eq(eng.start & ~geo.empty), d["r"].eq(0), pl.d_srpA.eq(idx.base), pl.d_srpB.eq(idx.base),
            ]
            # (the start cycle read index rows 0 .. rstep - 1: the block's reads go on at row rstep)
            begin_block(src.base, dst.base, idx.base + (idx.cols << (INDEX_BYTES_LOG2 + c.rstep_log2)),
                        Mux(big, GROUP, nv[:K_BITS]), Mux(big, GROUP - 1, (nv - 1)[:K_INDEX_BITS]), first=1)

        if not overlap:
            with m.State("EMPTY"):   # nothing to gather: done
                m.d.comb += [eng.done.eq(1), eng.status.eq(Status.OK)]
                m.next = "IDLE"

        with m.State("INDEX"):   # read the block's indices (index k at idx row 16 g + k, column kb)
            # a pending word spilled by the previous block's last row is flushed beside the reads (with
            # room; else in a later index cycle, or first thing in RUN)
            with m.If(c.stall):
                emit_flush(0)
            m.d.sync += [d["cap"].eq(1), d["r"].eq(c.r), pl.d_srpA.eq(c.idx_ptr), pl.d_srpB.eq(c.idx_ptr),
                         c.idx_ptr.eq(c.idx_ptr + idx_step2),
                         c.r.eq(c.r + c.rstep),
                         c.icnt.eq(Mux(c.icnt == eng.INDEX_MIN_CYCLES, c.icnt, c.icnt + 1))]
            # registered one cycle ahead: next cycle's r and icnt are r + rstep and icnt + 1 (icnt counts
            # the index cycles before the current one)
            m.d.sync += c.ilast.eq((c.r + 2 * c.rstep >= c.kcnt) & (c.icnt >= eng.INDEX_MIN_CYCLES - 2))
            with m.If(c.ilast):
                begin_row()
                # no write before the checker has passed the command (``go``): wait for it (only
                # the first block can get here before ``go``)
                with m.If(eng.go):
                    m.next = "RUN"
                with m.Else():
                    m.next = "WAIT"

        with m.State("WAIT"):
            with m.If(eng.go):
                m.next = "RUN"

        with m.State("RUN"):
            _run(m, sz, geo, c, pl, room, SimpleNamespace(
                pair=pair, lo=lo, lane_end=lane_end, spill=spill, final=final,
                emit_flush=emit_flush, begin_block=begin_block, begin_row=begin_row), overlap=overlap)

        if not overlap:
            with m.State("DRAIN"):   # until the port takes the last word (the last piece's, or the flush's)
                with m.If(c.stall):
                    emit_flush(1)
                with m.If(last_taken):
                    m.d.comb += [eng.done.eq(1), eng.status.eq(Status.OK)]
                    m.next = "IDLE"
        else:
            # entered only when the last row spills: its flush is the instruction's last slot; once it is
            # issued nothing behind the issue reads the setup, and ``done`` is the marked word's
            with m.State("DRAIN"):
                with m.If(c.stall):
                    emit_flush(1)
                with m.If(~c.stall | room):
                    m.next = "IDLE"
    with m.If(c.stall & room):     # its flush went (INDEX, RUN or DRAIN: the states stall is set in)
        m.d.sync += c.stall.eq(0)
    m.d.comb += geo.idle.eq(fsm.ongoing("IDLE"))
    return SimpleNamespace(idle=fsm.ongoing("IDLE"), last_taken=last_taken)


def _run(m, sz, geo, c, pl, room, slot, overlap=False):
    """The ``RUN`` state: a piece slot (or a flush), the row's block's running offsets, and at the end of
    a row's block the next row, the next block or the next group (back to ``INDEX``), or ``DRAIN``.
    ``slot``: the piece slot's values and :func:`slot_issue`'s actions. Without the write queue's
    ``room`` nothing is issued and nothing advances (a bubble): ``room`` gates the slot's valid bits and
    the control state's enables, not the slot's values (addresses, offsets: don't-cares without the
    valid bits, loaded in every cycle of ``RUN`` as before)."""
    W, sh = sz.W, sz.sh
    d = pl.d
    pair, lo, lane_end, spill, final = slot.pair, slot.lo, slot.lane_end, slot.spill, slot.final
    emit_flush, begin_block, begin_row = slot.emit_flush, slot.begin_block, slot.begin_row
    with m.If(c.stall):
        emit_flush(0)
    with m.Else():
        m.d.sync += [
            d["pair"].eq(pair), d["lo"].eq(lo), d["waddr"].eq(c.dst_ptr[sh:]),
            pl.d_kA.eq(c.qA >> geo.g_blog2), pl.d_kB.eq(c.qB >> geo.g_blog2),
            pl.d_srpA.eq(c.src_row + (c.qA & geo.g_bmask)), pl.d_srpB.eq(c.src_row + (c.qB & geo.g_bmask)),
        ]
        with m.If(c.seg_last):      # (the same value whether or not the slot goes: nothing else moves)
            m.d.sync += c.flush_waddr.eq(c.dst_ptr[sh:] + 1)
    with m.If(~c.stall & room):
        m.d.sync += [d["pc"].eq(1), d["wen"].eq((lane_end >= W) | c.seg_last),
                     d["fin"].eq(c.seg_last & final & ~spill)]
        with m.If(~c.seg_last):
            m.d.sync += [c.qA.eq(c.qA + geo.g_step), c.qB.eq(c.qB + geo.g_step), c.dst_ptr.eq(c.dst_ptr + geo.g_step),
                         c.sl.eq(c.sl - 1), c.seg_last.eq(c.sl == 1)]
        with m.Else():
            m.d.sync += c.stall.eq(spill)
            with m.If(~c.p_last):
                nd = c.dst_row + geo.g_dst_stride
                m.d.sync += [c.p.eq(c.p + 1), c.p_last.eq(c.p == GROUP - 2),
                             c.src_row.eq(c.src_row + geo.g_src_stride), c.dst_row.eq(nd), c.dst_ptr.eq(nd)]
                begin_row()
            with m.Elif(c.more_blk):
                nd = c.blk_dst + geo.g_blkstep
                ni = c.blk_idx + INDEX_BYTES                 # the next column of the index block
                m.d.sync += [c.n_left.eq(c.n_left - GROUP), c.blk_dst.eq(nd), c.blk_idx.eq(ni)]
                begin_block(c.grp_src, nd, ni, c.nk_blk, c.nk_blk_m1)
                m.next = "INDEX"
            with m.Elif(c.more_grp):
                ns = c.grp_src + (geo.g_src_stride << GROUP_LOG2)
                nd = c.grp_dst + (geo.g_dst_stride << GROUP_LOG2)
                ni = c.grp_idx + (geo.g_idx_stride << GROUP_LOG2)
                m.d.sync += [c.g_left.eq(c.g_left - 1), c.n_left.eq(geo.g_n),
                             c.grp_src.eq(ns), c.grp_dst.eq(nd), c.grp_idx.eq(ni),
                             c.blk_dst.eq(nd), c.blk_idx.eq(ni)]
                begin_block(ns, nd, ni, c.nk_grp, c.nk_grp_m1)
                m.next = "INDEX"
            with m.Else():
                if overlap:
                    # the instruction's last slot: the issue is free for the next one, unless the
                    # last row's spilled word is still to be flushed (DRAIN)
                    with m.If(spill):
                        m.next = "DRAIN"
                    with m.Else():
                        m.next = "IDLE"
                else:
                    m.next = "DRAIN"
