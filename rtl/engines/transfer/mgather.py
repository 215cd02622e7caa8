"""MGATHER: the index tile in the UB turned into GM lines and element runs for the transfer engine's read
path (:class:`IndexLines`: its decode, geometry, walk and flow control here; the resolution of the indices
into runs and lines in :mod:`rtl.engines.transfer.mgather_runs`).
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.engines.transfer import mgather_runs
from rtl.engines.transfer.mgather_runs import GatherLine, GatherRead
from rtl.engines.transfer.modulo import ModuloPipeline
from rtl.engines.transfer.widths import (ESZ_BITS, INDEX_BITS, INDEX_BYTES_LOG2, PIECE_BITS, TABLE_SIZE_BITS,
                                         TILE_DIM_BITS, UB_ADDR_BITS)
from rtl.fpga.dsp import MAX_WIDTH, product
from rtl.isa import UB_ALIGN, Command, OobMode, Opcode
from rtl.lib.contract import require
from rtl.lib.decode import opcode_bit
from rtl.lib.tile import elem_log2
from rtl.ub.buffer import UbReadSignature, UnifiedBuffer, read_window

__all__ = ["GATHER_OPCODES", "GatherLine", "GatherRead", "IndexLines"]

#: The opcodes IndexLines runs for (the transfer engine's others leave it idle).
GATHER_OPCODES = (Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM)

#: The name Amaranth gives a signal whose variable its tracer cannot find (e.g. the first targets of a
#: tuple assignment). Given explicitly to the signals that had it in the netlist measured at 100 MHz
#: and would be named now, so that the RTLIL stays byte-identical.
_UNNAMED = "$signal"


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

    Parameters
    ----------
    config : :class:`rtl.config.Config`
    opcodes : the opcodes ``start`` may come with (the transfer engine's); the walk runs for
        :data:`GATHER_OPCODES`, told apart from the others by one opcode bit.
    depth : entries of each output queue (at least ``WRAP_CREDIT_MARGIN`` = 7).
    seg_depth : entries of the segment queue (at least ``CREDIT_MARGIN`` = 2).
    overlap : adds ``emitted`` (the GM -> UB half with overlap, :mod:`rtl.engines.transfer.load_overlap`).

    Ports
    -----
    cmd : in, held from ``start`` on.
    start : in, a pulse; the walk runs if ``cmd`` is an MGATHER with a non-empty destination.
    ub_rd : a UB read port, used from the ``start`` cycle until the walk ends.
    ar, data : streams out; ``valid`` and the payload are registers.
    emitted : out, with ``overlap``: the last line of the instruction started last has entered the output
        queues (a register, from the cycle after that until the next ``start``; low before the first).
        Every line goes through every stage in order, so nothing of that instruction is left in a stage and
        nothing reads its setup any more: a ``start`` may come (the lines queued stay the older one's).

    Pipeline (every stage a register, so that the unit keeps its clock; ``t`` = ``start``):

    - setup (``t``): the command's fields the walk needs, registered; the first index word is read in
      ``t`` (its segment's fields are formed in ``t + 1`` and join the read on the way); the table size
      ``S`` from DSP blocks, ``SIZE_CYCLES`` = 3 after ``start``;
    - 0, the walk (from ``t + 2`` one segment and one read per cycle): running pointers, no multiply;
      "the row ends in this segment" is a register, computed with the walk state it belongs to;
    - 1, the index word (``READ_LATENCY`` + ``INDEX_WORD_CYCLES`` cycles after its read: the UB's read
      data registered again in the engine, :func:`rtl.ub.buffer.read_window`);
    - 2a, the resolved index of every lane (out of bounds, compares of 8-bit pieces; WRAP through the
      modulo pipeline instead, ``WRAP_CYCLES`` = 33);
    - 2b, every lane's table address (element mode) or the row index (row mode); 2b', the run control's
      fields (which lanes share a beat) one register later, into the control queue
      (``ADDRESS_CYCLES`` = 2);
    - 2c, the segment queue (``seg_depth`` entries of LUT RAM; the data half read asynchronously, so
      that taking the next segment only moves a pointer): every lane's beat and offset, the lanes that
      begin a run, the row index x row stride partial products (DSPs, on the way in); the head's run
      control is loaded into registers (``RUN_PICK_CYCLES`` = 1; straight from stage 2b' when the queue is
      empty) and runs are taken from it one per cycle (the next run's first lane: a one-hot lowest bit;
      "last run" a register);
    - 3, the run, registered: there ``reuse`` (its beat against the last non-zero run's, a register) and
      the row's address (base + the partial products: one add) are formed;
    - 4, the read and the line, registered, into both output queues (whose LUT RAMs the lines' fields
      reach from registers only; ``OUTPUT_STAGES`` = 2 for 3 and 4, the queue's head ``QUEUE_HEAD`` = 1).

    Latency: the first line is on ``ar`` and ``data`` ``FIRST_LINE_CYCLES`` = 11 cycles after ``start``
    (``READ_LATENCY`` + 8; WRAP adds ``WRAP_CYCLES``).

    Flow control: stages 1 to 2b never stall: a read is issued only when the segment queue has room for
    it and for every segment in flight (``credit``: ``CREDIT_MARGIN`` = 2 entries for the reads it does not
    see yet; WRAP: when both output queues have room for every index in flight and ``room``'s margin,
    ``WRAP_CREDIT_MARGIN`` = 7, because the modulo pipeline cannot stall; the segment queue then drains
    one WRAP segment per cycle). A run leaves the segment queue only when both output queues have room
    for it and for the ones in stages 3 and 4 (``room``, a register, from their levels a cycle late:
    ``ROOM_MARGIN`` = 5).

    Throughput: one segment per cycle into the queue, one line or run per cycle out of it.
    """

    #: Slices of the output queues' memories, each with its own pointers (rtl.lib.fifo.RegFifo ``groups``).
    Q_AR_GROUPS = 1
    Q_DATA_GROUPS = 2
    #: Copies of the index word register's load enable and of its read's parity, each for a slice of the
    #: 2-word window (the second word, unused, is removed by synthesis).
    WORD_EN_COPIES = 8

    #: Cycles from ``start`` to the table size register (element mode): the DSP blocks' operand
    #: registers (loaded at the edge that ends ``start``), their product registers
    #: (:func:`rtl.fpga.dsp.product`: 2 edges with operand registers), then the sum of the pieces.
    SIZE_CYCLES = 2 + 1
    #: Cycles from the index word's arrival (``UnifiedBuffer.READ_LATENCY`` after its read) to stage 1:
    #: the window register of :func:`rtl.ub.buffer.read_window`.
    INDEX_WORD_CYCLES = 1
    #: Stage 1 -> 2a: every lane's resolved index, registered (WRAP: ``WRAP_CYCLES`` instead).
    RESOLVE_CYCLES = 1
    #: Stage 2a -> 2b': the lanes' table addresses (row mode: the row's partial products), then the run
    #: control fields.
    ADDRESS_CYCLES = 2
    #: Stage 2b' -> 2c: the head segment's run control register (``cur``), loaded straight from stage 2b'
    #: when the control queue is empty.
    RUN_PICK_CYCLES = 1
    #: Stages 3 and 4: the run, then the read and the line, registered in front of the output queues.
    OUTPUT_STAGES = 2
    #: An output queue's head register (:class:`rtl.lib.fifo.RegFifo`: an entry written into an empty
    #: queue is at the head a cycle later; ``mem_level`` counts the entries behind it).
    QUEUE_HEAD = 1
    #: Cycles from ``start`` to the first line on ``ar`` and ``data`` (its index word read in the
    #: ``start`` cycle), without WRAP.
    FIRST_LINE_CYCLES = (UnifiedBuffer.READ_LATENCY + INDEX_WORD_CYCLES + RESOLVE_CYCLES + ADDRESS_CYCLES
                         + RUN_PICK_CYCLES + OUTPUT_STAGES + QUEUE_HEAD)
    #: What WRAP adds to a line's way (stage 1 -> 2a): the modulo pipeline's latency for 32-bit indices.
    WRAP_CYCLES = ModuloPipeline.latency_of(INDEX_BITS)
    #: Cycles ``room`` and ``credit`` lag the levels they count: each is a register computed from a
    #: level register.
    LEVEL_LAG = 1
    #: ``room``'s margin: the entries each output queue must have free beyond ``mem_level`` for a run to
    #: leave the segment queue: the run, the runs in stages 3 and 4, the one written while ``room`` was
    #: computed (``LEVEL_LAG``), and the head register ``mem_level`` does not count.
    ROOM_MARGIN = 1 + OUTPUT_STAGES + LEVEL_LAG + QUEUE_HEAD
    #: ``credit``'s margin (the segment queue against the segments in flight): the read it admits, and
    #: the one in the cycle the credit was computed (``LEVEL_LAG``).
    CREDIT_MARGIN = 1 + LEVEL_LAG
    #: WRAP's credit margin (the output queues against every index in flight): ``room``'s margin plus the
    #: reads the credit does not see yet, so that a WRAP segment that was read finds ``room`` in the
    #: output queues when it reaches ``cur`` (the modulo pipeline cannot stall).
    WRAP_CREDIT_MARGIN = ROOM_MARGIN + CREDIT_MARGIN

    def __init__(self, config, opcodes, depth=64, seg_depth=16, *, overlap=False):
        self._config, self._overlap = config, overlap
        self._opcodes = tuple(opcodes)
        self._depth = depth
        self._seg_depth = seg_depth
        RL = UnifiedBuffer.READ_LATENCY
        require(RL >= 2, f"IndexLines: the first segment's fields (formed the cycle after start) join its "
                         f"read at rd1_meta: UnifiedBuffer.READ_LATENCY = {RL} must be >= 2")
        require(self.SIZE_CYCLES + ModuloPipeline.DIVISOR_LEAD <= RL + self.INDEX_WORD_CYCLES,
                f"IndexLines: the table size (SIZE_CYCLES = {self.SIZE_CYCLES} after start) must be ready "
                f"ModuloPipeline.DIVISOR_LEAD = {ModuloPipeline.DIVISOR_LEAD} cycle before the first index "
                f"word (stage 1, READ_LATENCY + INDEX_WORD_CYCLES = {RL + self.INDEX_WORD_CYCLES} after start)")
        require(depth >= self.WRAP_CREDIT_MARGIN,
                f"IndexLines: an output queue of depth={depth} never has room for a WRAP read "
                f"(WRAP_CREDIT_MARGIN = {self.WRAP_CREDIT_MARGIN} entries)")
        require(seg_depth >= self.CREDIT_MARGIN,
                f"IndexLines: a segment queue of seg_depth={seg_depth} never has room for a read "
                f"(CREDIT_MARGIN = {self.CREDIT_MARGIN} entries)")
        require(PIECE_BITS <= MAX_WIDTH, f"IndexLines: product pieces of PIECE_BITS = {PIECE_BITS} bits must "
                                         f"fit a DSP block (rtl.fpga.dsp.MAX_WIDTH = {MAX_WIDTH})")
        super().__init__({
            "cmd": In(Command), "start": In(1),
            "ub_rd": Out(UbReadSignature(config)),
            "ar": Out(stream.Signature(GatherRead(config))),
            "data": Out(stream.Signature(GatherLine(config))),
            **({"emitted": Out(1)} if overlap else {}),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        g = self._setup(m, platform)
        w = self._walk(m, g)
        s1 = self._index_word(m, g, w)
        r2a = mgather_runs.resolve(m, g, s1)
        e = mgather_runs.addresses(m, platform, g, s1, r2a)
        q = mgather_runs.segment_queue(m, cfg, g, e, self._seg_depth, self._depth,
                                       (self.Q_AR_GROUPS, self.Q_DATA_GROUPS))
        s3 = mgather_runs.run_register(m, cfg, g, q, self.start)
        s4 = mgather_runs.line_register(m, cfg, s3, q, self.ar, self.data)
        self._credits(m, g, w, q)
        if self._overlap:
            with m.If(s4.valid & s4.line.last):
                m.d.sync += self.emitted.eq(1)
            with m.If(self.start):
                m.d.sync += self.emitted.eq(0)
        return m

    # ---- setup: registered at ``start`` (at most a few LUT levels from the held command) ------------------

    def _setup(self, m, platform):
        """MGATHER's own decode and geometry, registered at ``start``: the mode (``row``), the OOB mode
        (``wrap``, ``zmode``), ``esz``, the index and destination row strides, the elements per row; the
        table size ``size`` and ``size - 1`` from DSP blocks; the table's last byte of row 0 and the row's
        bytes - 1 (row mode). Returns them with the word geometry (``W``, ``sh``, ``L`` lanes, ``A``) as
        the namespace every stage reads."""
        cfg = self._config
        W = cfg.ub_word_bytes
        sh = W.bit_length() - 1
        L = W >> INDEX_BYTES_LOG2       # indices per UB word
        Lb = L.bit_length() - 1
        A = cfg.gm_addr_bits
        cmd = self.cmd
        dst, idx, gm = cmd.dst, cmd.src0, cmd.gm
        op = cmd.opcode.as_value()
        row, wrap, zmode = Signal(), Signal(), Signal(name=_UNNAMED)
        esz = Signal(ESZ_BITS)
        istride, dstride = Signal(UB_ADDR_BITS), Signal(UB_ADDR_BITS)
        ncols = Signal(TILE_DIM_BITS)
        line_bytes = Signal(UB_ADDR_BITS)       # row mode: bytes per row
        esz_c = elem_log2(m, dst.dtype)
        row_c = ~op[opcode_bit(GATHER_OPCODES, [Opcode.MGATHER_ELEM])]
        nonempty_c = (dst.valid_rows != 0) & (dst.valid_cols != 0)
        with m.If(self.start):
            m.d.sync += [
                row.eq(row_c), wrap.eq(cmd.oob == OobMode.WRAP), zmode.eq(cmd.oob == OobMode.ZERO),
                esz.eq(esz_c), istride.eq(idx.cols << INDEX_BYTES_LOG2), dstride.eq(dst.cols << esz_c),
                ncols.eq(Mux(row_c, 1, dst.valid_cols)), line_bytes.eq(dst.valid_cols << esz_c),
            ]
        # Table entries (row mode: rows; element mode: rows x cols, low 32 bits) from the held command:
        # the partial products in DSP blocks whose operand registers take the command at the edge that
        # ends ``start`` (the held command's register drives only their inputs: a wire across the die,
        # then the multiply from a register next to it), products after the next edge, their sum after
        # one more (SIZE_CYCLES): ``size`` is ready a cycle before the first index word reaches the
        # modulo pipeline. ``size - 1``: row mode's (the clamp row, the row products' other factor) from
        # the command a cycle after ``start``; element mode's a cycle after ``size`` (first used in
        # stage 2a -> 2b).
        P = PIECE_BITS
        size, size_m1 = Signal(TABLE_SIZE_BITS), Signal(TABLE_SIZE_BITS, name=_UNNAMED)
        parts = [product(m, gm.rows[i:i + P], gm.cols[j:j + P], platform=platform, in_en=self.start,
                         name=f"size_p{k}") for k, (i, j) in enumerate(((0, 0), (P, 0), (0, P)))]
        m.d.sync += [size.eq(Mux(row, gm.rows, parts[0] + ((parts[1][:P] + parts[2][:P]) << P))),
                     size_m1.eq(Mux(row, gm.rows - 1, size - 1))]
        base_m1 = Signal(A)             # the table base - 1 and (row mode) + row bytes: a row's last byte
        gm_last0 = Signal(A)            # is gm_last0 + row index x row stride
        line_m1 = Signal(UB_ADDR_BITS)
        m.d.sync += [base_m1.eq(gm.base - 1), gm_last0.eq(base_m1 + line_bytes), line_m1.eq(line_bytes - 1)]
        return SimpleNamespace(
            W=W, sh=sh, L=L, Lb=Lb, A=A, cmd=cmd, dst=dst, idx=idx, gm=gm,
            gath=op[opcode_bit(self._opcodes, GATHER_OPCODES)], row_c=row_c, nonempty_c=nonempty_c,
            row=row, wrap=wrap, zmode=zmode, esz=esz, istride=istride, dstride=dstride, ncols=ncols,
            size=size, size_m1=size_m1, gm_last0=gm_last0, line_m1=line_m1)

    # ---- stage 0: walk segments and read their index words ------------------------------------------------

    def _walk(self, m, g):
        """Stage 0: the walk over the index tile, one segment and one index word read per cycle while
        ``credit`` allows (the first read with ``start``, its segment formed a cycle later, ``fix``). A
        segment is lanes ``lo .. lo + n - 1`` of index word ``iw``; its first element goes to UB byte
        ``dptr``; ``rem`` elements are left in the row (``irow`` / ``drow``: the row's start in the index
        tile and in dst). Returns the segment's fields, ``read``, ``fix`` and the credit's registers."""
        W, sh, L, Lb = g.W, g.sh, g.L, g.Lb
        cmd, dst, idx = g.cmd, g.dst, g.idx
        esz, wrap, ncols, row_c, nonempty_c = g.esz, g.wrap, g.ncols, g.row_c, g.nonempty_c
        # (Only W > UB_ALIGN lets a destination word end inside an index word's lanes.)
        busy = Signal()
        fix = Signal()                  # the first segment: its read went out with ``start``
        lo = Signal(Lb)
        iw = Signal(UB_ADDR_BITS - sh)
        dptr, irow, drow = Signal(UB_ADDR_BITS), Signal(UB_ADDR_BITS), Signal(UB_ADDR_BITS)
        rem = Signal(TILE_DIM_BITS)
        rows_left = Signal(TILE_DIM_BITS)
        last_row = Signal()
        ib = INDEX_BYTES_LOG2
        with m.If(self.start):
            m.d.sync += [
                busy.eq(g.gath & nonempty_c), fix.eq(g.gath & nonempty_c),
                lo.eq(idx.base[ib:sh]), iw.eq(idx.base[sh:]), dptr.eq(dst.base), irow.eq(idx.base),
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
                             rowend_r.eq(Mux(cmd.oob == OobMode.WRAP, ncols_c <= 1, ncols_c <= L - idx.base[ib:sh]))]
        m.d.comb += n.eq(Mux(rowend, rem_lo, fit))

        # credits: segments in flight from their read until their last run has left the segment queue
        # (counted down a cycle late: a credit comes back one cycle later than it could); at most the
        # output queues' depth with WRAP, the segment queue's otherwise (see _credits)
        seg_inflight = Signal(range(max(self._depth, self._seg_depth) + 1))
        # a segment may be read: seg_inflight + CREDIT_MARGIN <= seg_depth (WRAP: the output queues have
        # room for everything in flight), a cycle late; one register, so that ``step`` is one LUT of
        # registers
        credit = Signal()
        read = Signal()                 # a read with a segment (the first one's segment follows in fix)
        step = Signal()                 # the walk forms a segment
        m.d.comb += [
            step.eq(busy & (fix | credit)),
            read.eq((self.start & g.gath & nonempty_c) | (busy & ~fix & credit)),
            self.ub_rd.en.eq(self.start | (busy & ~fix & credit)),
            self.ub_rd.addr.eq(Mux(self.start, idx.base[sh:], iw)),
        ]
        with m.If(step):
            m.d.sync += fix.eq(0)
            with m.If(rowend):
                nrow_i, nrow_d = irow + g.istride, drow + g.dstride
                m.d.sync += [irow.eq(nrow_i), drow.eq(nrow_d), iw.eq(nrow_i[sh:]), lo.eq(nrow_i[ib:sh]),
                             dptr.eq(nrow_d), rem.eq(ncols), rows_left.eq(rows_left - 1),
                             last_row.eq(rows_left == 2)]
                with m.If(last_row):
                    m.d.sync += busy.eq(0)
                if W <= UB_ALIGN:       # the next row's first segment ends it: ncols <= L - its lo
                    nlo = (irow[:sh] + g.istride[:sh])[ib:sh]
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
        return SimpleNamespace(lo=lo, n=n, dptr=dptr, rowend=rowend, last_row=last_row, fix=fix, read=read,
                               seg_inflight=seg_inflight, credit=credit)

    # ---- stage 1: the index word, READ_LATENCY + INDEX_WORD_CYCLES cycles after its read ------------------

    def _index_word(self, m, g, w):
        """Stage 1: each segment's fields (``Meta``: ``lo``, ``n``, ``dptr``, ``last``) delayed along with
        its read (the first segment's join at ``rd1``), and the index word, registered in the engine
        (:func:`rtl.ub.buffer.read_window`), as lanes ``u`` of 32 bits; ``seg1``, the segment's lanes."""
        L = g.L
        RL = UnifiedBuffer.READ_LATENCY
        Meta = data.StructLayout({"lo": range(L), "n": range(L + 1), "dptr": UB_ADDR_BITS, "last": 1})
        meta = Signal(Meta)
        m.d.comb += [meta.lo.eq(w.lo), meta.n.eq(w.n), meta.dptr.eq(w.dptr), meta.last.eq(w.rowend & w.last_row)]
        a_valid, a_meta = w.read, meta
        valids = [w.read]               # valids[k + 1]: rd{k}_valid
        for k in range(RL + self.INDEX_WORD_CYCLES):    # the UB's latency, then the index word's register
            nv = Signal(name=f"rd{k}_valid")
            nm = Signal(Meta, name=f"rd{k}_meta", reset_less=True)
            m.d.sync += [nv.eq(a_valid), nm.eq(Mux(w.fix, meta, a_meta) if k == 1 else a_meta)]
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
        u = [word.word_select(k, INDEX_BITS) for k in range(L)]
        seg1 = Signal(L)
        m.d.comb += seg1.eq(((C(1, L + 1) << s1.n) - 1) << s1.lo)
        return SimpleNamespace(Meta=Meta, valid=s1_valid, meta=s1, word=word, u=u, seg=seg1)

    # ---- credits ------------------------------------------------------------------------------------------

    def _credits(self, m, g, w, q):
        """The flow control's registers, from the queues' levels one cycle late (the margins cover what
        enters meanwhile; ``mem_level``: the entries behind the head): ``room`` (both output queues can
        take a run, ``ROOM_MARGIN``) and ``credit`` (the walk may read: ``CREDIT_MARGIN`` in the segment
        queue; WRAP: ``WRAP_CREDIT_MARGIN`` in both output queues, counting every segment in flight)."""
        popped = Signal()
        m.d.sync += [popped.eq(q.done), w.seg_inflight.eq(w.seg_inflight + w.read - popped)]
        m.d.sync += [
            q.room.eq((q.q_ar.mem_level + self.ROOM_MARGIN <= self._depth) &
                      (q.q_data.mem_level + self.ROOM_MARGIN <= self._depth)),
            w.credit.eq(Mux(g.wrap, (q.q_ar.mem_level + w.seg_inflight + self.WRAP_CREDIT_MARGIN <= self._depth) &
                                    (q.q_data.mem_level + w.seg_inflight + self.WRAP_CREDIT_MARGIN <= self._depth),
                            w.seg_inflight + self.CREDIT_MARGIN <= self._seg_depth)),
        ]
