"""TLOAD / TSTORE: 2-D strided transfers between global memory (AXI4) and a UB tile."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import fifo

from rtl.engines.base import Engine, words_of
from rtl.engines.transfer.checks import mgather_checks, transfer_checks
from rtl.engines.transfer.mgather import GATHER_OPCODES, IndexLines
from rtl.engines.transfer.placer import ElementPlacer
from rtl.engines.transfer.realign import Realigner
from rtl.engines.transfer.walker import BurstLine, BurstWalker, LineWalker
from rtl.engines.transfer.widths import AXLEN_BITS, ESZ_BITS, SIZE_BITS, TILE_DIM_BITS, UB_ADDR_BITS
from rtl.isa import DTYPE_BYTES, DType, Layout, Opcode, Status
from rtl.lib.axi import Burst, Resp
from rtl.lib.contract import require
from rtl.lib.decode import opcode_bit
from rtl.lib.fanout import held_copies
from rtl.lib.fifo import BeatBuffer, LineQueue
from rtl.lib.tile import LINE_BYTES_BITS, elem_log2
from rtl.ub.reader import UbReader

__all__ = ["TransferEngine"]

#: AxCACHE "normal non-cacheable bufferable": the unit never relies on GM caching.
_AXCACHE = 0b0011


class TransferEngine(Engine):
    """Executes TLOAD (GM -> UB, ``dst`` + ``gm``), TSTORE (UB -> GM, ``src0`` + ``gm``) and MGATHER
    (GM -> UB, ``dst`` + index tile ``src0`` + table ``gm``; its lines come from
    :class:`rtl.engines.transfer.mgather.IndexLines` instead of the line walkers, see docs/architecture.md).

    The transfer covers the tile's valid region, one *line* (a row of a row-major tile, a column of a
    column-major one) at a time, GM line ``l`` at ``gm.base + l * gm.row_stride``. Lines are split into
    bus-aligned INCR bursts that never cross 4 KiB and have at most ``config.max_burst_beats`` beats
    (:class:`rtl.engines.transfer.walker.BurstWalker`); byte enables (UB) and write strobes (GM) cover exactly the line's
    bytes, so nothing outside the valid region changes on either side.

    Parameters: ``config`` (uses ``axi_data_bits`` = UB word width, ``max_outstanding_reads``,
    ``max_outstanding_writes``, ``max_burst_beats``, ``read_buffer_beats``).

    Ports: :class:`EngineSignature` with one UB read port, the UB write port and the AXI4 master.

    Structure (every path starts at a register and stays a few LUT levels deep, for the clock):

    - setup: in the ``start`` cycle the command's geometry is registered (element size, line count and
      length, UB base and stride, ``gm.base - 1``); the opcodes are told apart by single bits (the
      engine only starts for its own four). The data-side walker starts in that cycle, the address-side
      walker (which needs the first line's last byte, an add of registers) one cycle later.
    - address side: lines from a :class:`rtl.engines.transfer.walker.LineWalker` (or ``IndexLines.ar``) into a
      :class:`rtl.engines.transfer.walker.BurstWalker`, whose output register drives AR (or AW): ``arvalid`` is that
      register AND ``go``, address and length are registers. A burst is loaded only while fewer than
      ``max_outstanding_reads`` (``_writes``) are loaded or in flight.
    - GM -> UB: R beats into a ``read_buffer_beats`` FIFO (``rready`` = not full), which an empty FIFO
      bypasses (a beat is used in the cycle it arrives when the data side wants one). TLOAD and
      MGATHER_ROW: the lines (from a walker or ``IndexLines.data``) and the beats go through a
      :class:`rtl.engines.transfer.realign.Realigner` (one register stage, then a 4:1 multiplexer) whose words carry their
      UB address and exact byte enables straight to the UB write port. MGATHER_ELEM: a run and its beat
      (new, the previous one again, or none for a zero run) through the
      :class:`rtl.engines.transfer.placer.ElementPlacer` (two register stages, the second its output) to the UB write
      port.
    - UB -> GM (TSTORE): the walker's lines go to a :class:`rtl.ub.reader.UbReader`, whose words come out
      aligned to their GM offset, to W (after their burst's AW; burst lengths queue in a FIFO).

    Throughput: one bus beat per cycle in either direction once the pipe is full, up to
    ``max_outstanding_reads`` read bursts in flight; a TLOAD line that needs one more UB word than bus
    beats costs one extra cycle (a TSTORE line none: the reader makes every beat from one UB read).
    Latency: the first AR/AW is loaded 2 cycles after ``start`` and leaves with ``go`` (3 cycles after
    ``start`` in the unit); MGATHER's first AR leaves ``READ_LATENCY + 8`` cycles after ``start``
    (:class:`rtl.engines.transfer.mgather.IndexLines`). A beat that arrives in cycle ``t`` is offered to the UB write port
    in ``t + 1`` (TLOAD, MGATHER_ROW) or ``t + 2`` (MGATHER_ELEM). ``done`` comes in the cycle of the
    last UB write (TLOAD, MGATHER) or the cycle after the last B response (TSTORE); an empty region is
    ``done`` the cycle after ``start``. An AXI error response does not stop the transfer (every
    requested beat is still taken, so nothing hangs) but suppresses the UB writes of that beat and all
    later ones and answers ``AXI_READ_ERROR``/``AXI_WRITE_ERROR``.
    """

    name = "transfer"
    opcodes = (Opcode.TLOAD, Opcode.TSTORE, Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM)
    UB_READ_PORTS = 1
    UB_WRITE = True
    AXI = True

    #: The R beat buffer's depth: ``read_buffer_beats``, at most this (one LUT RAM block deep, so that
    #: its read is one LUT level; the data side takes a beat in every cycle but a flush or zero word's,
    #: so a deeper buffer would not hold ``rready`` high any longer).
    RBUF_DEPTH = 16
    #: Copies of the TLOAD / MGATHER_ELEM select of the UB write data, each for a slice of the word.
    DATA_SEL_COPIES = 4

    @classmethod
    def bound(cls, config, cmd):
        """Bus beats, one per cycle: TLOAD / TSTORE the beats of every GM line; MGATHER_ROW at least
        ``ceil(row bytes / W)`` per row (where a row starts depends on its index); MGATHER_ELEM one UB
        write per cycle of at most one index word's indices and one word of elements."""
        W = config.axi_data_bytes
        op = Opcode(cmd["opcode"])
        gm, dst = cmd["gm"], cmd["dst"]
        size = DTYPE_BYTES[DType(gm["dtype"])]
        if op in (Opcode.TLOAD, Opcode.TSTORE):
            tile = dst if op == Opcode.TLOAD else cmd["src0"]
            col = Layout(tile["layout"]) == Layout.COL_MAJOR
            lines, elems = (gm["cols"], gm["rows"]) if col else (gm["rows"], gm["cols"])
            return sum(words_of(gm["base"] + k * gm["row_stride"], elems * size, W) for k in range(lines))
        rows, cols = dst["valid_rows"], dst["valid_cols"]
        if op == Opcode.MGATHER_ROW:
            return rows * -(-cols * size // W)
        return -(-rows * cols // min(W // 4, W // size))

    @staticmethod
    def add_checks(m, config, cmd, fail):
        """TLOAD / TSTORE's rules (:func:`rtl.engines.transfer.checks.transfer_checks`), then MGATHER's
        (:func:`rtl.engines.transfer.checks.mgather_checks`)."""
        transfer_checks(m, config, cmd, fail)
        mgather_checks(m, config, cmd, fail)

    def elaborate(self, platform):
        m = Module()
        s = self._setup(m)
        walk_addr, walk_data = self._line_walkers(m, s)
        index = self._gather_lines(m)
        err = Signal()              # an AXI error response came: no more UB writes, an error status
        a = self._address_side(m, s, walk_addr, index)
        rbuf, pop = self._beat_buffer(m, err)
        realign = self._realigner(m, s, walk_data, index, rbuf)
        load_done = self._ub_write(m, s, index, rbuf, pop, realign, err)
        reader = self._ub_reader(m, s, walk_data, index, realign)
        store_done, aw_all = self._w_channel(m, s, a, reader, err)
        self._completion(m, s, load_done, store_done, aw_all, err)
        return m

    # ---- setup: the command's geometry, registered at ``start`` ----------------------------------------

    def _setup(self, m):
        """The command's decode and geometry: single opcode bits (combinational, for the ``start`` cycle:
        ``store_c``, ``gath_c``, ``elem_c``) and the registers loaded at ``start`` (``store``, ``gath``,
        ``elem``, ``esz``, the line count, length and strides, ``gm.base - 1``, MGATHER_ROW's row bytes,
        ``running``; ``empty_done`` and ``walk_addr_start``, one-cycle pulses after ``start``)."""
        cfg = self._config
        cmd = self.cmd
        op = cmd.opcode.as_value()
        gm = cmd.gm
        # This engine starts only for its own opcodes, so single opcode bits tell them apart (their
        # positions from the encoding table, rtl.lib.decode.opcode_bit). TLOAD / TSTORE lines follow
        # the GM descriptor, whose shape and type the checker has compared with the tile's (the engine's
        # side effects wait for ``go``): a line is ``gm.cols`` elements of a row-major tile, ``gm.rows``
        # of a column-major one (cut to a tile dimension's width, ``TILE_DIM_BITS``).
        gath_bit = opcode_bit(self.opcodes, GATHER_OPCODES)
        store_c, gath_c, elem_c = (op[opcode_bit(self.opcodes, [Opcode.TSTORE])], op[gath_bit],
                                   op[gath_bit] & op[opcode_bit(GATHER_OPCODES, [Opcode.MGATHER_ELEM])])
        esz_c = elem_log2(m, gm.dtype)
        src0, dst = cmd.src0, cmd.dst
        col_c = Mux(store_c, src0.layout.as_value(), dst.layout.as_value()) == Layout.COL_MAJOR.value
        rows_c, cols_c = gm.rows[:TILE_DIM_BITS], gm.cols[:TILE_DIM_BITS]
        lines_c = Mux(col_c, cols_c, rows_c)
        elems_c = Mux(col_c, rows_c, cols_c)
        ub_base_c = Mux(store_c, src0.base, dst.base)
        stride_elems_c = Mux(col_c, Mux(store_c, src0.rows, dst.rows), Mux(store_c, src0.cols, dst.cols))
        empty_c = Mux(gath_c, (dst.valid_rows == 0) | (dst.valid_cols == 0),
                      (rows_c == 0) | (cols_c == 0))

        store, gath, elem = Signal(), Signal(), Signal()
        # a copy of ``elem`` for the index queue's pop (its own init: not merged with ``elem``, which
        # reaches the UB write mux; the pop enables the queue's head register)
        elem_q = Signal(init=1)
        esz = Signal(ESZ_BITS)
        lines, stride_elems = Signal(TILE_DIM_BITS), Signal(TILE_DIM_BITS)
        gm_base_m1 = Signal(cfg.gm_addr_bits)
        row_bytes = Signal(LINE_BYTES_BITS)       # MGATHER_ROW: bytes per destination row
        running = Signal()
        empty_done = Signal()
        walk_addr_start = Signal()
        line_bytes = Signal(LINE_BYTES_BITS)
        line_m1 = Signal(LINE_BYTES_BITS)        # line_bytes - 1 = ((elems - 1) << esz) | (size - 1)
        elems_m1_c = Mux(col_c, rows_c - 1, cols_c - 1)[:TILE_DIM_BITS]
        m.d.sync += [empty_done.eq(0), walk_addr_start.eq(0)]
        with m.If(self.start):
            m.d.sync += [
                store.eq(store_c), gath.eq(gath_c), elem.eq(elem_c), elem_q.eq(elem_c), esz.eq(esz_c),
                lines.eq(lines_c), line_bytes.eq(elems_c << esz_c), stride_elems.eq(stride_elems_c),
                line_m1.eq((elems_m1_c << esz_c) | ((C(1, SIZE_BITS) << esz_c) - 1)),
                gm_base_m1.eq(gm.base - 1), row_bytes.eq(dst.valid_cols << esz_c),
                running.eq(~empty_c), empty_done.eq(empty_c), walk_addr_start.eq(~gath_c),
            ]
        ub_stride = Signal(UB_ADDR_BITS)
        m.d.comb += ub_stride.eq(stride_elems << esz)
        return SimpleNamespace(
            store_c=store_c, gath_c=gath_c, elem_c=elem_c, empty_c=empty_c, ub_base_c=ub_base_c,
            lines_c=lines_c, store=store, gath=gath, elem=elem, elem_q=elem_q, esz=esz, lines=lines,
            gm_base_m1=gm_base_m1, row_bytes=row_bytes, running=running, empty_done=empty_done,
            walk_addr_start=walk_addr_start, line_bytes=line_bytes, line_m1=line_m1, ub_stride=ub_stride)

    def _line_walkers(self, m, s):
        """TLOAD / TSTORE's two :class:`LineWalker` over the same geometry: ``walk_data`` (started with
        ``start``: the realigner's lines, or the UB reader's) and ``walk_addr`` (started a cycle later,
        once the first line's last GM byte is a register: the AR / AW side's lines). MGATHER runs
        neither: its lines come from :class:`IndexLines`."""
        cfg = self._config
        gm = self.cmd.gm
        m.submodules.walk_addr = walk_addr = LineWalker(cfg)   # AR or AW issue
        m.submodules.walk_data = walk_data = LineWalker(cfg)   # realigner, or UB reader
        for w in (walk_addr, walk_data):
            m.d.comb += [w.step.ub_stride.eq(s.ub_stride), w.step.gm_stride.eq(gm.row_stride),
                         w.step.line_bytes.eq(s.line_bytes), w.step.line_m1.eq(s.line_m1)]
        m.d.comb += [
            walk_data.start.eq(self.start),
            walk_data.init.ub_addr.eq(s.ub_base_c), walk_data.init.gm_addr.eq(gm.base),
            walk_data.init.lines.eq(s.lines_c), walk_data.init.run.eq(~s.gath_c & ~s.empty_c),
            walk_addr.start.eq(s.walk_addr_start),
            walk_addr.init.gm_addr.eq(gm.base), walk_addr.init.gm_last.eq(s.gm_base_m1 + s.line_bytes),
            walk_addr.init.lines.eq(s.lines), walk_addr.init.run.eq(s.running),
        ]
        return walk_addr, walk_data

    def _gather_lines(self, m):
        """MGATHER's lines: :class:`IndexLines` (its own decode and geometry from the held command; it
        reads the index tile from ``start`` on and idles for TLOAD / TSTORE), whose ``ar`` queue feeds the
        address side and whose ``data`` queue the realigner (row mode) or the element placer."""
        m.submodules.index = index = IndexLines(self._config, self.opcodes)
        m.d.comb += [index.cmd.eq(self.cmd), index.start.eq(self.start)]
        return index

    # ---- address side: lines -> bursts -> the AR / AW register ------------------------------------------

    def _address_side(self, m, s, walk_addr, index):
        """Lines (MGATHER: ``IndexLines.ar``; TLOAD / TSTORE: ``walk_addr``) through a :class:`LineQueue`
        into the :class:`BurstWalker`, whose output register drives AR or AW (the valid gated by ``go`` and
        by room for one more burst in flight), the counters of bursts in flight, and the ``wlen`` FIFO of
        TSTORE's burst lengths. Returns the burst payload ``b``, the handshakes and the counters."""
        cfg = self._config
        axi = self.axi
        W = cfg.axi_data_bytes
        sh = W.bit_length() - 1
        store = s.store
        m.submodules.bursts = bursts = BurstWalker(cfg)
        # (through a LineQueue: the walker or IndexLines' AR queue moves on "not full", a register, not on
        # the burst walker's decision)
        m.submodules.ar_lines = ar_lines = LineQueue(BurstLine(cfg))
        m.d.comb += [bursts.lines.valid.eq(ar_lines.o.valid), bursts.lines.payload.eq(ar_lines.o.payload),
                     ar_lines.o.ready.eq(bursts.lines.ready)]
        wl = walk_addr.lines.payload
        al = ar_lines.i.payload
        with m.If(s.gath):                          # MGATHER: IndexLines' AR queue
            m.d.comb += [ar_lines.i.valid.eq(index.ar.valid), al.eq(index.ar.payload),
                         index.ar.ready.eq(ar_lines.i.ready)]
        with m.Else():                              # TLOAD / TSTORE: the address-side walker
            m.d.comb += [ar_lines.i.valid.eq(walk_addr.lines.valid),
                         al.gm_addr.eq(wl.gm_addr), al.gm_last.eq(wl.gm_last),
                         al.one_chunk.eq(wl.one_chunk), al.span.eq(wl.span), al.last.eq(wl.last),
                         walk_addr.lines.ready.eq(ar_lines.i.ready)]
        b = bursts.bursts.payload
        for ch in ("ar", "aw"):
            m.d.comb += [
                getattr(axi, f"{ch}id").eq(0), getattr(axi, f"{ch}size").eq(sh),
                getattr(axi, f"{ch}burst").eq(Burst.INCR), getattr(axi, f"{ch}cache").eq(_AXCACHE),
                getattr(axi, f"{ch}addr").eq(b.addr), getattr(axi, f"{ch}len").eq(b.len),
            ]
        # Bursts in flight (reads from their AR until their last beat, writes from their AW until their
        # B response): at most the configured number. The AR / AW valid waits for room, a register
        # computed from the counter and this cycle's handshakes (the room only shrinks by our own
        # handshake, so a valid never drops before its handshake); the burst walker does not wait for it.
        rd_out = Signal(range(cfg.max_outstanding_reads + 1))
        wr_out = Signal(range(cfg.max_outstanding_writes + 1))
        r_last = axi.rvalid & axi.rready & axi.rlast
        b_fire = axi.bvalid & axi.bready

        def room_next(count, limit, inc, dec):      # count + inc - dec < limit
            return (((count < limit - 1) | ((count == limit - 1) & ~(inc & ~dec)) |
                     ((count == limit) & dec & ~inc)) if limit > 1 else (((count == 0) & ~(inc & ~dec)) |
                                                                        ((count == 1) & dec & ~inc)))
        rd_room, wr_room = Signal(init=1), Signal(init=1)
        m.d.comb += [axi.arvalid.eq(bursts.bursts.valid & ~store & self.go & rd_room),
                     axi.awvalid.eq(bursts.bursts.valid & store & self.go & wr_room)]
        ar_fire = axi.arvalid & axi.arready
        aw_fire = axi.awvalid & axi.awready
        m.d.comb += [bursts.bursts.ready.eq(Mux(store, axi.awready & wr_room, axi.arready & rd_room) & self.go),
                     bursts.credit.eq(1)]
        m.d.sync += [rd_out.eq(rd_out + ar_fire - r_last), wr_out.eq(wr_out + aw_fire - b_fire),
                     rd_room.eq(room_next(rd_out, cfg.max_outstanding_reads, ar_fire, r_last)),
                     wr_room.eq(room_next(wr_out, cfg.max_outstanding_writes, aw_fire, b_fire))]
        # (the wlen FIFO holds one entry per write burst in flight, at most max_outstanding_writes)
        m.submodules.wlen = wlen = fifo.SyncFIFOBuffered(width=AXLEN_BITS, depth=max(2, cfg.max_outstanding_writes))
        require(wlen.depth >= cfg.max_outstanding_writes,
                f"TransferEngine: the wlen FIFO ({wlen.depth} entries) must hold a length for every write "
                f"burst in flight (max_outstanding_writes = {cfg.max_outstanding_writes})")
        return SimpleNamespace(b=b, aw_fire=aw_fire, b_fire=b_fire, wr_out=wr_out, wlen=wlen)

    # ---- GM -> UB: R beats, the realigner (TLOAD, MGATHER_ROW) or the element placer (MGATHER_ELEM) ------

    def _beat_buffer(self, m, err):
        """The R beat buffer (:class:`BeatBuffer`, LUT RAM, no bypass; ``rready`` = room), with each beat's
        error flag. The data side pops a beat in the cycle it decides to take it and reads it (and the one
        before it) from the buffer in the next cycle: no decision reaches a wide register. A popped beat
        whose response was an error sets ``err``. Returns the buffer and its ``pop``."""
        W = self._config.axi_data_bytes
        axi = self.axi
        rbuf_depth = min(self._config.read_buffer_beats, self.RBUF_DEPTH)
        m.submodules.rbuf = rbuf = BeatBuffer(8 * W + 1, rbuf_depth, groups=W // 4)   # a beat + its error flag
        pop = Signal()
        took = Signal()                 # a beat was popped in the previous cycle: ``rbuf.last`` is it
        m.d.comb += [
            axi.rready.eq(rbuf.w_rdy),
            rbuf.w_data.eq(Cat(axi.rdata, axi.rresp != Resp.OKAY)), rbuf.w_en.eq(axi.rvalid),
            rbuf.pop.eq(pop),
        ]
        m.d.sync += took.eq(pop)
        with m.If(took & rbuf.last[8 * W]):
            m.d.sync += err.eq(1)
        return rbuf, pop

    def _realigner(self, m, s, walk_data, index, rbuf):
        """TLOAD / MGATHER_ROW: the :class:`Realigner` and its lines, MGATHER_ROW's from
        ``IndexLines.data`` or TLOAD's from ``walk_data``; its words come from the beat buffer. MGATHER's
        lines reach the data side only with ``go``: a zero line writes the UB without any AXI read, and
        nothing may be written before the checker has passed the command."""
        W = self._config.axi_data_bytes
        sh = W.bit_length() - 1
        m.submodules.realign = realign = Realigner(W, addr_bits=UB_ADDR_BITS - sh, buffered=True)
        rl = realign.line.payload
        d = index.data.payload
        wd = walk_data.lines.payload
        with m.If(s.gath):                          # MGATHER_ROW: IndexLines' data queue
            m.d.comb += [
                realign.line.valid.eq(index.data.valid & ~s.elem & self.go),
                rl.src_off.eq(d.src_off), rl.dst_off.eq(d.ub_addr[:sh]), rl.length.eq(s.row_bytes),
                rl.zero.eq(d.zero), rl.addr.eq(d.ub_addr[sh:]), rl.last.eq(d.last),
            ]
        with m.Else():                              # TLOAD: the data-side walker
            m.d.comb += [
                realign.line.valid.eq(walk_data.lines.valid & ~s.store),
                rl.src_off.eq(wd.gm_addr[:sh]), rl.dst_off.eq(wd.ub_addr[:sh]), rl.length.eq(wd.length),
                rl.addr.eq(wd.ub_addr[sh:]), rl.last.eq(wd.last),
            ]
        m.d.comb += [realign.i_avail.eq(rbuf.avail), realign.i_last.eq(rbuf.last[:8 * W]),
                     realign.i_before.eq(rbuf.before[:8 * W])]
        return realign

    def _ub_write(self, m, s, index, rbuf, pop, realign, err):
        """MGATHER_ELEM's :class:`ElementPlacer` (a run and its beat: new, the previous one again for a
        reuse run, none for a zero run; the beat is the last one popped either way), the beat buffer's
        pop (the realigner's or the placer's), the index queue's pop, and the UB write port: the
        realigner's or the placer's word (their byte enables are exact; none after an error). Returns
        ``load_done``: the last UB write of a TLOAD / MGATHER happens now."""
        W = self._config.axi_data_bytes
        m.submodules.placer = placer = ElementPlacer(self._config)
        run = index.data.payload
        fire, fire_q = Signal(), Signal()           # (the same; fire_q for the index queue's pop)
        m.d.comb += [
            fire.eq(s.elem & index.data.valid & self.go & (run.zero | run.reuse | rbuf.avail)),
            fire_q.eq(s.elem_q & index.data.valid & self.go & (run.zero | run.reuse | rbuf.avail)),
            placer.fire.eq(fire), placer.line.eq(run), placer.esz.eq(s.esz),
            placer.beat.eq(rbuf.last[:8 * W]),
            pop.eq((fire & ~run.zero & ~run.reuse) | realign.i_take),
            index.data.ready.eq(Mux(s.elem_q, fire_q, realign.line.ready & self.go)),
        ]

        # the UB write port: the data's select in DATA_SEL_COPIES copies of ``elem``, each for a slice of
        # the word (one register selecting all 8W bits: 11.2 ns, 10.1 of it wire, in `default` seed 3
        # at b9e4ebc)
        o = realign.o.payload
        n = len(self.ub_wr.data)
        sels = held_copies(m, s.elem_c, self.start, self.DATA_SEL_COPIES, "elem_data")
        for k, c in enumerate(sels):
            sl = slice(n * k // len(sels), n * (k + 1) // len(sels))
            m.d.comb += self.ub_wr.data[sl].eq(Mux(c, placer.data[sl], o.data[sl]))
        with m.If(s.elem):
            m.d.comb += self.ub_wr.addr.eq(placer.addr)
            with m.If(placer.valid & ~err):
                m.d.comb += self.ub_wr.be.eq(placer.be)
        with m.Else():
            m.d.comb += self.ub_wr.addr.eq(o.addr)
            with m.If(realign.o.valid & ~err):
                m.d.comb += self.ub_wr.be.eq(o.be)
        load_done = Signal()            # the last UB write of a TLOAD / MGATHER happens now
        m.d.comb += load_done.eq(Mux(s.elem, placer.valid & placer.last, realign.o.valid & realign.o.payload.last))
        return load_done

    # ---- UB -> GM (TSTORE): the UB reader (its one read port), beats aligned to GM --------------------------

    def _ub_reader(self, m, s, walk_data, index, realign):
        """TSTORE's :class:`UbReader` with its lines from ``walk_data`` (through a :class:`LineQueue`), and
        the engine's one UB read port: MGATHER's index reads (``IndexLines.ub_rd``, from the ``start``
        cycle on) or the reader's. Also ``walk_data``'s ready: the reader's line queue (TSTORE) or the
        realigner (TLOAD)."""
        sh = self._config.axi_data_bytes.bit_length() - 1
        m.submodules.ub_reader = reader = UbReader(self._config)
        # (through a LineQueue: the walker moves on "not full", not on the reader's ready)
        m.submodules.rd_lines = rd_lines = LineQueue(reader.LineLayout)
        rd = self.ub_rd[0]
        wd = walk_data.lines.payload
        m.d.comb += [index.ub_rd.even.eq(rd.even), index.ub_rd.odd.eq(rd.odd),
                     reader.ub_rd.even.eq(rd.even), reader.ub_rd.odd.eq(rd.odd)]
        # MGATHER reads its index tile through the same port, from the ``start`` cycle on; the reader
        # reads only during a TSTORE.
        with m.If(s.gath | (self.start & s.gath_c)):
            m.d.comb += [rd.addr.eq(index.ub_rd.addr), rd.en.eq(index.ub_rd.en)]
        with m.Else():
            m.d.comb += [rd.addr.eq(reader.ub_rd.addr), rd.en.eq(reader.ub_rd.en)]
        m.d.comb += [
            rd_lines.i.valid.eq(walk_data.lines.valid & s.store),
            rd_lines.i.payload.ub_addr.eq(wd.ub_addr),
            rd_lines.i.payload.length.eq(wd.length),
            rd_lines.i.payload.dst_off.eq(wd.gm_addr[:sh]),
            reader.lines.valid.eq(rd_lines.o.valid), reader.lines.payload.eq(rd_lines.o.payload),
            rd_lines.o.ready.eq(reader.lines.ready),
            walk_data.lines.ready.eq(Mux(s.store, rd_lines.i.ready, realign.line.ready)),
        ]
        return reader

    def _w_channel(self, m, s, a, reader, err):
        """TSTORE's W channel: the reader's words, each burst's after its AW (the burst lengths queue in
        ``wlen``), ``wlast`` from a beat counter; B responses (an error sets ``err``); the lines not yet
        sent and "no write burst in flight", registers. Returns ``store_done`` (every AW out, every line
        sent, every B response in) and ``aw_all``."""
        axi = self.axi
        b, wlen = a.b, a.wlen
        aw_all = Signal()        # every AW of the transfer is out
        m.d.comb += [wlen.w_data.eq(b.len), wlen.w_en.eq(a.aw_fire), axi.bready.eq(1)]
        with m.If(a.aw_fire & b.last):
            m.d.sync += aw_all.eq(1)
        with m.If(a.b_fire & (axi.bresp != Resp.OKAY)):
            m.d.sync += err.eq(1)
        beat = Signal(AXLEN_BITS)
        word = reader.words.payload
        m.d.comb += [axi.wdata.eq(word.data), axi.wstrb.eq(word.be), axi.wlast.eq(beat == wlen.r_data)]
        with m.If(s.store):
            m.d.comb += [
                axi.wvalid.eq(reader.words.valid & wlen.r_rdy),
                reader.words.ready.eq(axi.wready & wlen.r_rdy),
            ]
        with m.If(axi.wvalid & axi.wready):
            m.d.sync += beat.eq(Mux(axi.wlast, 0, beat + 1))
            m.d.comb += wlen.r_en.eq(axi.wlast)
        lines_left = Signal(TILE_DIM_BITS)  # TSTORE: lines not yet completely sent on W
        lines_zero = Signal()         # ... none (a register beside the counter)
        with m.If(s.walk_addr_start):
            m.d.sync += [lines_left.eq(s.lines), lines_zero.eq(0)]
        with m.Elif(reader.words.valid & reader.words.ready & word.last):
            m.d.sync += [lines_left.eq(lines_left - 1), lines_zero.eq(lines_left == 1)]
        wr_idle = Signal()            # no write burst loaded or in flight (a register beside wr_out)
        wr_next = a.wr_out + a.aw_fire - a.b_fire
        m.d.sync += wr_idle.eq(wr_next == 0)
        return aw_all & wr_idle & lines_zero, aw_all

    # ---- completion ---------------------------------------------------------------------------------------

    def _completion(self, m, s, load_done, store_done, aw_all, err):
        """``done`` and ``status``: the cycle after ``start`` for an empty region; else with the last UB
        write (TLOAD, MGATHER) or ``store_done`` (TSTORE), ``AXI_READ_ERROR`` / ``AXI_WRITE_ERROR`` after an
        error response. Clears ``running``, ``aw_all`` and ``err``."""
        with m.If(s.empty_done):
            m.d.comb += [self.done.eq(1), self.status.eq(Status.OK)]
        with m.Elif(s.running & Mux(s.store, store_done, load_done)):
            m.d.sync += [s.running.eq(0), aw_all.eq(0), err.eq(0)]
            m.d.comb += [
                self.done.eq(1),
                self.status.eq(Mux(err, Mux(s.store, Status.AXI_WRITE_ERROR, Status.AXI_READ_ERROR), Status.OK)),
            ]
        with m.If(self.start):
            m.d.sync += [err.eq(0), aw_all.eq(0)]
