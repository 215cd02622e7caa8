"""MGATHER: index tiles in the UB turned into GM lines for the transfer engine's read path.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.engines.transfer.modulo import ModuloPipeline
from rtl.engines.transfer.walker import BurstLine, burst_chunk_beats, span_bits
from rtl.fpga.dsp import product
from rtl.isa import UB_ALIGN, Command, OobMode, Opcode
from rtl.lib.fifo import LutFifo, RegFifo
from rtl.lib.tile import elem_log2
from rtl.ub.buffer import UbReadSignature, UnifiedBuffer, read_window

__all__ = ["GATHER_OPCODES", "GatherLine", "GatherRead", "IndexLines"]

#: The opcodes IndexLines runs for (the transfer engine's others leave it idle).
GATHER_OPCODES = (Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM)


def GatherLine(config):
    """What the data side gets per line (row mode) or *run* (element mode: up to one index word's worth of
    consecutive destination elements of one segment whose table elements share one bus beat, or are all
    ``zero``; one UB write).

    ``ub_addr``: row mode, the line's UB byte address; element mode, a UB byte address in the run's UB
    word (that of the segment's first element). ``delta`` (element mode): the lane of that word where
    index lane 0's element would go, so lane ``k``'s element goes to bytes ``delta + k * size`` (mod
    ``W``) on. ``src_off`` (row mode): the line's byte offset in its first beat.
    ``mask`` (element mode): the run's index lanes; ``offs[k]``: the byte offset in the beat of lane
    ``k``'s element. ``zero``: read nothing, write zeros; ``reuse``: take the previous non-zero run's beat
    again (no AR was issued); ``last``: the instruction's last line or run.
    """
    W = config.ub_word_bytes
    L = W // 4
    return data.StructLayout({
        "ub_addr": 24,
        "src_off": range(W),
        "delta":   range(W),
        "mask":    L,
        "offs":    data.ArrayLayout(range(W), L),
        "zero":    1,
        "reuse":   1,
        "last":    1,
    })


def GatherRead(config):
    """What the address side needs of a line (:func:`rtl.engines.transfer.walker.BurstLine`): the bytes to read; ``skip``
    for a zero or reuse run; element runs are ``single`` (one beat)."""
    return BurstLine(config)


def _less(a, b, chunk=8):
    """``a < b`` for unsigned values of one width, as compares of ``chunk``-bit pieces combined by a
    priority over the pieces (short carry chains side by side instead of one long one)."""
    pieces = [(a[i:i + chunk] < b[i:i + chunk], a[i:i + chunk] == b[i:i + chunk])
              for i in range(0, len(a), chunk)]                  # (less, equal), low piece first
    while len(pieces) > 1:                                       # a balanced tree of pairs
        pairs = [pieces[i:i + 2] for i in range(0, len(pieces), 2)]
        pieces = [((hi[0] | (hi[1] & lo[0])), hi[1] & lo[1]) if len(p) == 2 else p[0]
                  for p in pairs for lo, hi in [p if len(p) == 2 else (p[0], p[0])]]
    return pieces[0][0]


def _lowest(x):
    """The lowest set bit of ``x``, one-hot (zero if none)."""
    return Cat(x[k] & ~x[:k].any() if k else x[0] for k in range(len(x)))


def _at_most_one(x):
    """``x`` has at most one bit set (pairwise: no pair of bits is set together)."""
    return ~Cat(x[i] & x[j] for i in range(len(x)) for j in range(i + 1, len(x))).any()


def _product_pieces(width):
    """The 16 x 16-bit pieces ``(i, j)`` of a 32 x 32-bit product that reach its low ``width`` bits: bits
    ``i`` of one factor times bits ``j`` of the other, shifted by ``i + j``; each is one DSP block."""
    return [(i, j) for i in range(0, 32, 16) for j in range(0, 32, 16) if i + j < width]


class IndexLines(wiring.Component):
    """Reads an MGATHER index tile from the UB and emits its lines in row-major order on two streams, each
    with a :class:`rtl.lib.fifo.RegFifo` of ``depth`` entries (registered heads): ``ar``
    (:func:`GatherRead`, for address issue) and ``data`` (:func:`GatherLine`, for the data path).

    Row mode: one line per destination row. Element mode: the walk takes a *segment* per cycle, the
    indices of one row that share an index word (and a destination word), up to ``W / 4``; their table
    elements are resolved in parallel and the segment leaves as *runs*, one per cycle: maximal groups of
    consecutive elements in the same bus beat (or all ``zero``). A run is one AR (none when it reuses the
    previous non-zero run's beat or is ``zero``) and one UB write, so sorted or clustered indices move
    several elements per cycle and random ones one.

    Out-of-bounds handling of an index ``u`` (read as uint32) against the table size ``S``:
    CLAMP -> ``S - 1``; WRAP -> ``u mod S`` (through a :class:`ModuloPipeline`, one index per segment);
    ZERO -> a ``zero`` line; UNDEFINED -> treated as CLAMP (the result is undefined; clamping keeps every
    read inside the table).

    Ports: ``cmd`` (held), ``start`` (pulse; the walk runs if ``cmd`` is an MGATHER with a non-empty
    destination), ``ub_rd`` (a UB read port, used from the ``start`` cycle until the walk ends), ``ar`` /
    ``data`` (streams out; ``valid`` and the payload are registers).

    Pipeline (every stage a register, so that the unit keeps its clock; ``t`` = ``start``):

    - setup (``t``): the command's fields the walk needs, registered; the first index word is read in
      ``t`` (its segment's fields are formed in ``t + 1`` and join the read on the way);
    - 0, the walk (from ``t + 2`` one segment and one read per cycle): running pointers, no multiply;
      "the row ends in this segment" is a register, computed with the walk state it belongs to;
    - 1, the index word (``READ_LATENCY`` + 1 cycles after its read: the UB's read data registered
      again in the engine);
    - 2a, the resolved index of every lane (out of bounds, compares of 8-bit pieces; WRAP through the
      modulo pipeline, 33 cycles);
    - 2b, every lane's table address (element mode) or the row index (row mode); the run control's
      fields (which lanes share a beat) one register later, into the control queue;
    - 2c, the segment queue (``seg_depth`` entries of LUT RAM; the data half read asynchronously, so
      that taking the next segment only moves a pointer): every lane's beat and offset, the lanes that
      begin a run, the row index x row stride partial products (DSPs, on the way in); the head's run
      control is loaded into registers (straight from stage 2b' when the queue is empty) and runs are
      taken from it one per cycle (the next run's first lane: a one-hot lowest bit; "last run" a
      register);
    - 3, the run, registered: there ``reuse`` (its beat against the last non-zero run's, a register) and
      the row's address (base + the partial products: one add) are formed;
    - 4, the read and the line, registered, into both output queues (whose LUT RAMs the lines' fields
      reach from registers only).

    So the first line is on ``ar`` ``READ_LATENCY + 8`` cycles after ``start`` (``+ 33`` with WRAP).
    Stages 1 to 2b never stall: a read is issued only when the segment queue has room for it and for
    every segment in flight (counted a cycle late; WRAP: when both output queues have room for every
    index in flight, because the modulo pipeline cannot stall; the segment queue then drains one WRAP
    segment per cycle). A run leaves the segment queue only when both output queues have room for it and
    for the ones in stages 3 and 4 (a register, from their levels a cycle late).
    Throughput: one segment per cycle into the queue, one line or run per cycle out of it.
    """

    #: Slices of the output queues' memories, each with its own pointers (rtl.lib.fifo.RegFifo ``groups``).
    Q_AR_GROUPS = 1
    Q_DATA_GROUPS = 2
    #: Copies of the index word register's load enable and of its read's parity, each for a slice of the
    #: 2-word window (the second word, unused, is removed by synthesis).
    WORD_EN_COPIES = 8

    def __init__(self, config, depth=64, seg_depth=16):
        self._config = config
        self._depth = depth
        self._seg_depth = seg_depth
        assert UnifiedBuffer.READ_LATENCY >= 2        # the first segment's fields join its read at stage 1
        super().__init__({
            "cmd": In(Command), "start": In(1),
            "ub_rd": Out(UbReadSignature(config)),
            "ar": Out(stream.Signature(GatherRead(config))),
            "data": Out(stream.Signature(GatherLine(config))),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W = cfg.ub_word_bytes
        sh = W.bit_length() - 1
        L = W // 4                     # indices per UB word
        Lb = L.bit_length() - 1
        A = cfg.gm_addr_bits
        RL = UnifiedBuffer.READ_LATENCY
        cmd = self.cmd
        dst, idx, gm = cmd.dst, cmd.src0, cmd.gm
        op = cmd.opcode.as_value()

        # ---- setup: registered at ``start`` (at most a few LUT levels from the held command) -----------
        row, wrap, zmode = Signal(), Signal(), Signal()
        esz = Signal(2)
        istride, dstride = Signal(24), Signal(24)
        ncols = Signal(16)
        line_bytes = Signal(24)         # row mode: bytes per row
        esz_c = elem_log2(m, dst.dtype)
        row_c = ~op[0]                  # MGATHER_ROW = 0x10, MGATHER_ELEM = 0x11
        nonempty_c = (dst.valid_rows != 0) & (dst.valid_cols != 0)
        with m.If(self.start):
            m.d.sync += [
                row.eq(row_c), wrap.eq(cmd.oob == OobMode.WRAP), zmode.eq(cmd.oob == OobMode.ZERO),
                esz.eq(esz_c), istride.eq(idx.cols << 2), dstride.eq(dst.cols << esz_c),
                ncols.eq(Mux(row_c, 1, dst.valid_cols)), line_bytes.eq(dst.valid_cols << esz_c),
            ]
        # Table entries (row mode: rows; element mode: rows x cols, low 32 bits) from the held command:
        # the partial products in DSP blocks whose operand registers take the command at the edge that
        # ends ``start`` (the held command's register drives only their inputs: a wire across the die,
        # then the multiply from a register next to it), products after the next edge, their sum after
        # one more: ``size`` is ready when the first index word arrives (``start + READ_LATENCY``).
        # ``size - 1``: row mode's (the clamp row, the row products' other factor) from the command a
        # cycle after ``start``; element mode's a cycle after ``size`` (first used in stage 2a -> 2b).
        assert RL >= 3
        size, size_m1 = Signal(32), Signal(32)
        parts = [product(m, gm.rows[i:i + 16], gm.cols[j:j + 16], platform=platform, in_en=self.start,
                         name=f"size_p{k}") for k, (i, j) in enumerate(((0, 0), (16, 0), (0, 16)))]
        m.d.sync += [size.eq(Mux(row, gm.rows, parts[0] + ((parts[1][:16] + parts[2][:16]) << 16))),
                     size_m1.eq(Mux(row, gm.rows - 1, size - 1))]
        base_m1 = Signal(A)             # the table base - 1 and (row mode) + row bytes: a row's last byte
        gm_last0 = Signal(A)            # is gm_last0 + row index x row stride
        line_m1 = Signal(24)
        m.d.sync += [base_m1.eq(gm.base - 1), gm_last0.eq(base_m1 + line_bytes), line_m1.eq(line_bytes - 1)]

        # ---- stage 0: walk segments and read their index words ---------------------------------------
        # A segment is lanes lo .. lo + n - 1 of index word ``iw``; its first element goes to UB byte
        # ``dptr``; ``rem`` elements are left in the row (``irow`` / ``drow``: the row's start in the index
        # tile and in dst). Only W > UB_ALIGN lets a destination word end inside an index word's lanes.
        busy = Signal()
        fix = Signal()                  # the first segment: its read went out with ``start``
        lo = Signal(Lb)
        iw = Signal(24 - sh)
        dptr, irow, drow = Signal(24), Signal(24), Signal(24)
        rem = Signal(16)
        rows_left = Signal(16)
        last_row = Signal()
        with m.If(self.start):
            m.d.sync += [
                busy.eq(op[4] & nonempty_c), fix.eq(op[4] & nonempty_c),
                lo.eq(idx.base[2:sh]), iw.eq(idx.base[sh:]), dptr.eq(dst.base), irow.eq(idx.base),
                drow.eq(dst.base), rem.eq(Mux(row_c, 1, dst.valid_cols)), rows_left.eq(dst.valid_rows),
                last_row.eq(dst.valid_rows == 1),
            ]
        fit = Signal(Lb + 1)            # lanes left in the index word (WRAP: one index per segment)
        m.d.comb += fit.eq(Mux(wrap, 1, L - lo))
        if W > UB_ALIGN:
            fit_dst = Signal(W.bit_length())
            m.d.comb += fit_dst.eq((W - dptr[:sh]) >> esz)
            with m.If(fit_dst < fit):
                m.d.comb += fit.eq(fit_dst)
        rem_lo = rem[:Lb + 1]
        rowend = Signal()               # the row ends in this segment
        n = Signal(Lb + 1)
        if W > UB_ALIGN:                # (general case: computed here)
            m.d.comb += rowend.eq((rem[Lb + 1:] == 0) & (rem_lo <= fit))
        else:                           # a register, computed with the state it belongs to
            rowend_r = Signal()
            m.d.comb += rowend.eq(rowend_r)
            ncols_c = Mux(row_c, 1, dst.valid_cols)
            ncols_le = Signal()         # ncols <= L (a register from the start)
            ncols_le1 = Signal()        # ncols <= 1
            with m.If(self.start):
                m.d.sync += [ncols_le.eq(ncols_c <= L), ncols_le1.eq(ncols_c <= 1),
                             rowend_r.eq(Mux(cmd.oob == OobMode.WRAP, ncols_c <= 1, ncols_c <= L - idx.base[2:sh]))]
        m.d.comb += n.eq(Mux(rowend, rem_lo, fit))

        # credits: segments in flight from their read until their last run has left the segment queue
        # (counted down a cycle late: a credit comes back one cycle later than it could)
        seg_inflight = Signal(range(64 + self._depth))
        # a segment may be read: seg_inflight + 2 <= seg_depth (WRAP: the output queues have room for
        # everything in flight), a cycle late; one register, so that ``step`` is one LUT of registers
        credit = Signal()
        read = Signal()                 # a read with a segment (the first one's segment follows in fix)
        step = Signal()                 # the walk forms a segment
        m.d.comb += [
            step.eq(busy & (fix | credit)),
            read.eq((self.start & op[4] & nonempty_c) | (busy & ~fix & credit)),
            self.ub_rd.en.eq(self.start | (busy & ~fix & credit)),
            self.ub_rd.addr.eq(Mux(self.start, idx.base[sh:], iw)),
        ]
        with m.If(step):
            m.d.sync += fix.eq(0)
            with m.If(rowend):
                nrow_i, nrow_d = irow + istride, drow + dstride
                m.d.sync += [irow.eq(nrow_i), drow.eq(nrow_d), iw.eq(nrow_i[sh:]), lo.eq(nrow_i[2:sh]),
                             dptr.eq(nrow_d), rem.eq(ncols), rows_left.eq(rows_left - 1),
                             last_row.eq(rows_left == 2)]
                with m.If(last_row):
                    m.d.sync += busy.eq(0)
                if W <= UB_ALIGN:       # the next row's first segment ends it: ncols <= L - its lo
                    nlo = (irow[:sh] + istride[:sh])[2:sh]
                    m.d.sync += rowend_r.eq(Mux(wrap, ncols_le1, ncols_le & (ncols[:Lb + 1] + nlo <= L)))
            with m.Else():
                m.d.sync += rem.eq(rem - fit)            # (n = fit)
                if W > UB_ALIGN:
                    nl = lo + n
                    m.d.sync += [lo.eq(nl[:Lb]), iw.eq(iw + nl[Lb]), dptr.eq(dptr + (n << esz))]
                else:       # the segment ends at the index word's end (WRAP: after one lane); the next
                            # one ends the row if rem - fit <= its lanes (L, or 1 with WRAP)
                    m.d.sync += [lo.eq(Mux(wrap, lo + 1, 0)), iw.eq(iw + Mux(wrap, lo == L - 1, 1)),
                                 dptr.eq(dptr + (fit << esz)),
                                 rowend_r.eq(Mux(wrap, rem <= 2, rem <= 2 * L - lo))]

        # ---- stage 1: the index word, READ_LATENCY cycles after its read -------------------------------
        Meta = data.StructLayout({"lo": range(L), "n": range(L + 1), "dptr": 24, "last": 1})
        meta = Signal(Meta)
        m.d.comb += [meta.lo.eq(lo), meta.n.eq(n), meta.dptr.eq(dptr), meta.last.eq(rowend & last_row)]
        a_valid, a_meta = read, meta
        valids = [read]                 # valids[k + 1]: rd{k}_valid
        for k in range(RL + 1):         # the UB's latency, then the index word's register (below)
            nv = Signal(name=f"rd{k}_valid")
            nm = Signal(Meta, name=f"rd{k}_meta", reset_less=True)
            m.d.sync += [nv.eq(a_valid), nm.eq(Mux(fix, meta, a_meta) if k == 1 else a_meta)]
            a_valid, a_meta = nv, nm
            valids.append(nv)
        s1_valid, s1 = a_valid, a_meta
        # the index word registered here first: the lanes' bounds compares (carry chains) and the modulo
        # pipeline's lane select start from a register next to them, not from the UB's read data
        # register across the die (11.2 ns in ``default`` seed 1 at 1ed3ce7)
        # (loaded only when this engine's read arrives, ``rd{RL - 1}_valid`` in copies: the port is shared;
        # ordered from the UB's even / odd bank words here, with copies of the read's parity of its own,
        # see rtl.ub.buffer.ordered_window)
        word = read_window(m, self.ub_rd, self.ub_rd.addr[0], valids[RL - 1], self.WORD_EN_COPIES,
                           "window")[:len(self.ub_rd.data)]
        u = [word.word_select(k, 32) for k in range(L)]
        seg1 = Signal(L)
        m.d.comb += seg1.eq(((C(1, L + 1) << s1.n) - 1) << s1.lo)

        # ---- stage 2a: out-of-bounds resolution of every lane (WRAP: one lane, through the pipeline) --
        m.submodules.mod = mod = ModuloPipeline(32, Meta.size)
        m.d.comb += [mod.i_valid.eq(s1_valid & wrap), mod.i_u.eq(word.word_select(s1.lo, 32)),
                     mod.i_s.eq(size), mod.i_tag.eq(s1)]
        # (the index and whether it is inside the table are registered; the clamp to S - 1 is applied on
        # the way into 2b)
        v2a = Signal()
        u2a = [Signal(32, name=f"u{k}", reset_less=True) for k in range(L)]
        inside = [Signal(name=f"inside{k}", reset_less=True) for k in range(L)]
        meta2a = Signal(Meta, reset_less=True)
        seg2a = Signal(L, reset_less=True)
        wmeta = Signal(Meta)
        m.d.comb += wmeta.eq(mod.o_tag)
        m.d.sync += v2a.eq(Mux(wrap, mod.o_valid, s1_valid))
        with m.If(wrap):
            m.d.sync += [meta2a.eq(wmeta), seg2a.eq(C(1, L) << wmeta.lo)]
            m.d.sync += [x.eq(mod.o_r) for x in u2a] + [x.eq(1) for x in inside]
        with m.Else():
            m.d.sync += [meta2a.eq(s1), seg2a.eq(seg1)]
            m.d.sync += [u2a[k].eq(u[k]) for k in range(L)] + [inside[k].eq(_less(u[k], size)) for k in range(L)]
        r = [Mux(inside[k], u2a[k], size_m1) for k in range(L)]      # resolved table entry per lane

        # ---- stage 2b: every lane's table address (element mode), the row index (row mode) ----------
        v2b = Signal()
        ea = [Signal(A, name=f"ea{k}", reset_less=True) for k in range(L)]
        zero_b = [Signal(name=f"zero_b{k}", reset_less=True) for k in range(L)]
        meta2b = Signal(Meta, reset_less=True)
        seg2b = Signal(L, reset_less=True)
        m.d.sync += [v2b.eq(v2a), meta2b.eq(meta2a), seg2b.eq(seg2a)]
        m.d.sync += [ea[k].eq(gm.base + (r[k] << esz)) for k in range(L)]
        m.d.sync += [zero_b[k].eq(zmode & ~inside[k]) for k in range(L)]

        # Row mode: the row index x the row stride, in 16 x 16-bit pieces, each a DSP block
        # (rtl.fpga.dsp.product) between registers: the index as read (stage 1; WRAP: the modulo pipeline's
        # result, which takes its place) is registered with stage 2a (in the fabric, below) and the
        # product is ready in stage 2b; the clamped row S - 1 has its own pieces (a constant of the
        # instruction, with the blocks' operand registers), chosen in stage 2b.
        # (The stride through a local register: the command is held from ``start``.)
        stride_r = Signal(32, reset_less=True)
        m.d.sync += stride_r.eq(gm.row_stride)
        # (the index through a fabric register beside stage 2a's, the DSP blocks' operand registers
        # unused: the UB's read data -> lane select -> register stays next to the UB)
        u_row = Signal(32, reset_less=True)
        m.d.sync += u_row.eq(Mux(wrap, mod.o_r, word.word_select(s1.lo, 32)))
        pieces = _product_pieces(A)
        terms = [(product(m, u_row[i:i + 16], stride_r[j:j + 16], platform=platform, in_reg=False,
                          name=f"row_prod{n}"),
                  product(m, size_m1[i:i + 16], stride_r[j:j + 16], platform=platform, name=f"last_prod{n}"),
                  i + j) for n, (i, j) in enumerate(pieces)]
        row_in = Signal(reset_less=True)   # stage 2b: the row index is inside the table
        m.d.sync += row_in.eq(Array(inside)[meta2a.lo])
        lane_bits = max(L * (A - sh), 32 * len(terms))
        Seg = data.StructLayout({
            "lanes": lane_bits,         # element mode: every lane's beat; row mode: the partial products
            "offs": data.ArrayLayout(range(W), L), "zero": L,
            "same": L,                  # lane k shares lane k - 1's run (same beat, or both zero)
            "seg": L, "meta": Meta,
        })
        entry = Signal(Seg)
        m.d.comb += [entry.seg.eq(seg2b), entry.meta.eq(meta2b),
                     entry.lanes.eq(Mux(row, Cat(Mux(row_in, pu, pl) for pu, pl, _ in terms), Cat(x[sh:] for x in ea)))]
        for k in range(L):
            # (a zero lane's offset is 0: a zero run then needs no select on its way to stage 3)
            m.d.comb += [entry.offs[k].eq(Mux(zero_b[k], 0, ea[k][:sh])), entry.zero[k].eq(zero_b[k])]
            if k:
                m.d.comb += entry.same[k].eq((zero_b[k] & zero_b[k - 1]) |
                                             (~zero_b[k] & ~zero_b[k - 1] & (ea[k][sh:] == ea[k - 1][sh:])))
        # Two queues, read together. The run control in a narrow one (``seg``, ``zero``, and the segment's
        # run starts: ``first``, its first lane, and ``rest``, the lanes after it that begin a run of their
        # own, ``seg & ~same & ~first``) whose head is loaded into registers (``cur``) that the runs then consume:
        # each run starts at ``cur.h`` and ends before the lowest lane of ``cur.rest``, and whether it is
        # the segment's last (``cur.last``: ``rest`` empty) is a register, so that the pop decision is a
        # gate of registers, not the queue's LUT RAM read through the run logic (10.8 ns at `default`).
        # The rest (lanes, offsets, meta) in a wide queue of its own, read asynchronously at its head,
        # which is the control head's segment (it is popped with that segment's last run). The control
        # fields go through one more register (stage 2b'), so that ``same``'s beat compares end in a
        # register, not in the LUT RAM's write port; the data queue is written a cycle earlier and its
        # entry is always there when the control entry reaches ``cur`` (the credit bounds both). An empty
        # control queue passes stage 2b' straight into ``cur``, so the queue costs no cycle.
        Ctl = data.StructLayout({"seg": L, "zero": L, "h": L, "rest": L, "last": 1})
        data_fields = ("lanes", "offs", "meta")
        m.submodules.q_seg = q_seg = LutFifo(Ctl.size, self._seg_depth)
        m.submodules.q_seg_data = q_seg_data = LutFifo(Seg.size - 3 * L, self._seg_depth)
        v2c = Signal()
        seg2c, zero2c, same2c, first2c = (Signal(L, name=f"{n}2c", reset_less=True)
                                          for n in ("seg", "zero", "same", "first"))
        m.d.sync += [v2c.eq(v2b), seg2c.eq(entry.seg), zero2c.eq(entry.zero), same2c.eq(entry.same),
                     first2c.eq(_lowest(entry.seg))]
        ctl_in = Signal(Ctl)
        m.d.comb += [ctl_in.seg.eq(seg2c), ctl_in.zero.eq(zero2c), ctl_in.h.eq(first2c),
                     ctl_in.rest.eq(seg2c & ~same2c & ~first2c), ctl_in.last.eq(~ctl_in.rest.any())]
        head = Signal(Seg)              # (the data fields: the data queue's head)
        m.d.comb += [Cat(*(getattr(head, f) for f in data_fields)).eq(q_seg_data.r_data),
                     q_seg_data.w_data.eq(Cat(*(getattr(entry, f) for f in data_fields))),
                     q_seg_data.w_en.eq(v2b)]
        beats = [head.lanes.word_select(k, A - sh) for k in range(L)]
        prods = [head.lanes.word_select(k, 32) << s for k, (_, _, s) in enumerate(terms)]

        cur = Signal(Ctl, reset_less=True)      # the head segment's control: its current run from ``h``
        cur_valid = Signal()
        q_ar = RegFifo(GatherRead(cfg).size, self._depth, direct_on_pop=False, groups=self.Q_AR_GROUPS)
        q_data = RegFifo(GatherLine(cfg).size, self._depth, direct_on_pop=False, groups=self.Q_DATA_GROUPS)
        m.submodules.q_ar, m.submodules.q_data = q_ar, q_data
        room = Signal()                 # both output queues have room for a run in stage 3 and one more
        emit, done, load, bypass = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [
            emit.eq(cur_valid & room), done.eq(emit & cur.last), load.eq(~cur_valid | done),
            bypass.eq(load & ~q_seg.r_rdy & v2c),
            q_seg.w_data.eq(ctl_in), q_seg.w_en.eq(v2c & ~bypass), q_seg.r_en.eq(load),
            q_seg_data.r_en.eq(done),
        ]
        nxt = _lowest(cur.rest)         # the next run's first lane
        with m.If(load):
            m.d.sync += [cur.eq(Mux(q_seg.r_rdy, q_seg.r_data, ctl_in)), cur_valid.eq(q_seg.r_rdy | v2c)]
        with m.Elif(emit):
            m.d.sync += [cur.h.eq(nxt), cur.rest.eq(cur.rest & ~nxt), cur.last.eq(_at_most_one(cur.rest))]
        h = cur.h
        # the run: the segment's lanes from ``h`` up to the next run's first lane
        run = Signal(L)
        m.d.comb += run.eq(Cat(cur.seg[k] & cur.h[:k + 1].any() & ~cur.rest[:k + 1].any() for k in range(L)))
        last_run = cur.last

        def pick(values):               # the value of the run's first lane (an AND-OR of the lanes)
            out = 0
            for k, v in enumerate(values):
                out = out | (Value.cast(v) & h[k].replicate(len(Value.cast(v))))
            return out

        # ---- stage 3: the run, registered; reuse, the row's address; into the output queues -------------
        s3_valid = Signal()
        s3_beat = Signal(A - sh, reset_less=True)
        s3_zero = Signal(reset_less=True)
        s3_mask = Signal(L, reset_less=True)
        s3_offs = Signal(data.ArrayLayout(range(W), L), reset_less=True)
        s3_meta = Signal(Meta, reset_less=True)
        # row mode: base + row index x row stride, and the row's last byte, as (base + the unshifted
        # partial product) + (the others' sum): one add left for stage 3
        s3_lo, s3_last_lo, s3_rest = Signal(A, reset_less=True), Signal(A, reset_less=True), Signal(A, reset_less=True)
        m.d.sync += [
            s3_valid.eq(emit), s3_beat.eq(pick(beats)), s3_zero.eq((h & cur.zero).any()), s3_mask.eq(run),
            s3_offs.eq(head.offs), s3_meta.eq(head.meta), s3_meta.last.eq(head.meta.last & last_run),
            s3_lo.eq(gm.base + prods[0]), s3_last_lo.eq(gm_last0 + prods[0]),
            s3_rest.eq(sum(prods[1:]) if len(prods) > 1 else 0),
        ]
        last_beat = Signal(A - sh, reset_less=True)      # the beat of the last non-zero run
        have_beat = Signal()
        reuse = Signal()
        m.d.comb += reuse.eq(~row & ~s3_zero & have_beat & (s3_beat == last_beat))
        with m.If(s3_valid & ~s3_zero):
            m.d.sync += [last_beat.eq(s3_beat), have_beat.eq(1)]
        with m.If(self.start):
            m.d.sync += have_beat.eq(0)
        row_addr = Signal(A)
        row_last = Signal(A)
        m.d.comb += [row_addr.eq(s3_lo + s3_rest), row_last.eq(s3_last_lo + s3_rest)]
        # the chunks the row touches - 1: (its offset in the chunk + bytes - 1) / chunk (the offset from
        # the low bits only: the other partial products are shifted by 16 or more)
        kc = (W * burst_chunk_beats(cfg)).bit_length() - 1
        assert terms[0][2] == 0 and all(t[2] >= kc for t in terms[1:])
        row_span = Signal(span_bits(cfg))
        m.d.comb += row_span.eq((s3_lo[:kc] + line_m1) >> kc)

        rd = Signal(GatherRead(cfg))
        m.d.comb += [
            rd.gm_addr.eq(Mux(row, row_addr, s3_beat << sh)), rd.gm_last.eq(row_last),
            rd.span.eq(row_span), rd.one_chunk.eq(row_span == 0), rd.single.eq(~row), rd.skip.eq(s3_zero | reuse), rd.last.eq(s3_meta.last),
        ]
        line = Signal(GatherLine(cfg))
        m.d.comb += [
            line.ub_addr.eq(s3_meta.dptr), line.src_off.eq(row_addr[:sh]),
            line.delta.eq(s3_meta.dptr[:sh] - (s3_meta.lo << esz)),
            line.mask.eq(s3_mask), line.offs.eq(s3_offs), line.zero.eq(s3_zero), line.reuse.eq(reuse),
            line.last.eq(s3_meta.last),
        ]
        # ---- stage 4: the read and the line, registered, into the output queues -------------------------
        s4_valid = Signal()
        s4_rd = Signal(GatherRead(cfg), reset_less=True)
        s4_line = Signal(GatherLine(cfg), reset_less=True)
        m.d.sync += [s4_valid.eq(s3_valid), s4_rd.eq(rd), s4_line.eq(line)]
        m.d.comb += [
            q_ar.w_data.eq(s4_rd), q_ar.w_en.eq(s4_valid), q_data.w_data.eq(s4_line), q_data.w_en.eq(s4_valid),
            self.ar.valid.eq(q_ar.r_rdy), self.ar.payload.eq(q_ar.r_data), q_ar.r_en.eq(self.ar.ready),
            self.data.valid.eq(q_data.r_rdy), self.data.payload.eq(q_data.r_data), q_data.r_en.eq(self.data.ready),
        ]

        # ---- credits ------------------------------------------------------------------------------------
        # (from the queues' levels one cycle late: the margins cover what enters meanwhile)
        # (``mem_level``: the entries behind the head, at most one less than the level)
        popped = Signal()
        m.d.sync += [popped.eq(done), seg_inflight.eq(seg_inflight + read - popped)]
        m.d.sync += [
            room.eq((q_ar.mem_level + 5 <= self._depth) & (q_data.mem_level + 5 <= self._depth)),
            credit.eq(Mux(wrap, (q_ar.mem_level + seg_inflight + 7 <= self._depth) &
                                (q_data.mem_level + seg_inflight + 7 <= self._depth),
                          seg_inflight + 2 <= self._seg_depth)),
        ]
        return m
