"""TLOAD / TSTORE: 2-D strided transfers between global memory (AXI4) and a UB tile."""

from amaranth import *
from amaranth.lib import fifo, wiring

from .axi import Burst, Resp
from .checker import exceeds, stage
from .engine import EngineSignature
from .isa import Opcode
from .realign import Realigner
from .status import Status
from .mgather import ElementPlacer, IndexLines, mgather_checks
from .tile import elem_log2, tile_geometry
from .ub_stream import UbReader, UbWriter
from .walker import LINE_BYTES_BITS, BurstWalker, LineWalker

__all__ = ["TransferEngine"]

#: AxCACHE "normal non-cacheable bufferable": the unit never relies on GM caching.
_AXCACHE = 0b0011


def _transfer_tile(cmd):
    """The tile a TLOAD / TSTORE moves: ``src0`` for TSTORE, ``dst`` otherwise."""
    return cmd.dst.shape()(Mux(cmd.opcode == Opcode.TSTORE, cmd.src0.as_value(), cmd.dst.as_value()))


class TransferEngine(wiring.Component):
    """Executes TLOAD (GM -> UB, ``dst`` + ``gm``), TSTORE (UB -> GM, ``src0`` + ``gm``) and MGATHER
    (GM -> UB, ``dst`` + index tile ``src0`` + table ``gm``; its lines come from
    :class:`rtl.mgather.IndexLines` instead of the line walkers, see docs/architecture.md).

    The transfer covers the tile's valid region, one *line* (a row of a row-major tile, a column of a
    column-major one) at a time, GM line ``l`` at ``gm.base + l * gm.row_stride``. Lines are split into
    bus-aligned INCR bursts of at most ``config.max_burst_beats`` beats that never cross 4 KiB; byte
    enables (UB) and write strobes (GM) cover exactly the line's bytes, so nothing outside the valid
    region changes on either side.

    Parameters: ``config`` (uses ``axi_data_bits`` = UB word width, ``max_outstanding_reads``,
    ``max_outstanding_writes``, ``max_burst_beats``, ``read_buffer_beats``).

    Ports: :class:`EngineSignature` with one UB read port, the UB write port and the AXI4 master.

    Data paths: GM -> UB through a :class:`rtl.realign.Realigner` into a :class:`rtl.ub_stream.UbWriter`;
    UB -> GM through a :class:`rtl.ub_stream.UbReader`, whose words come out aligned to the GM offset.

    Throughput: one bus beat per cycle in either direction once the pipe is full, up to
    ``max_outstanding_reads`` read bursts in flight; a TLOAD line that needs one more UB word than bus
    beats costs one extra cycle (a TSTORE line none: the reader makes every beat from one UB read).
    Latency: the first AR/AW leaves 2 cycles after ``start``; ``done`` follows the last UB write (TLOAD)
    or the last B response (TSTORE) by one cycle. An AXI error response does not stop the transfer
    (every requested beat is still taken, so nothing hangs) but suppresses all later UB writes and
    answers ``AXI_READ_ERROR``/``AXI_WRITE_ERROR``.
    """

    opcodes = (Opcode.TLOAD, Opcode.TSTORE, Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM)

    def __init__(self, config):
        self._config = config
        super().__init__(EngineSignature(config, ub_read_ports=1, ub_write=True, axi=True))

    @staticmethod
    def add_checks(m, config, cmd, fail):
        """TLOAD / TSTORE constraints beyond the common ones (``rtl.checker``): the tile (dst or src0)
        against the GM descriptor; then MGATHER's (``rtl.mgather.mgather_checks``)."""
        enable = (cmd.opcode == Opcode.TLOAD) | (cmd.opcode == Opcode.TSTORE)
        gm = cmd.gm
        tile = _transfer_tile(cmd)
        esz = elem_log2(m, tile.dtype)
        fail[Status.SHAPE_MISMATCH].append(
            enable & ((gm.rows != tile.valid_rows) | (gm.cols != tile.valid_cols)))
        mask = Signal(2)
        m.d.comb += mask.eq((1 << esz) - 1)
        fail[Status.GM_MISALIGNED].append(enable & (((gm.base | gm.row_stride) & mask) != 0))
        lines, line_elems, _ = tile_geometry(m, tile, esz)
        # one past the last byte touched: base + (lines - 1) * stride + line bytes > 2**gm_addr_bits
        span = stage(m, (lines - 1) * gm.row_stride, "transfer_span")     # cut the multiply's path
        touches = (lines != 0) & (line_elems != 0)
        beyond = exceeds(m, [gm.base, span[:48], line_elems << esz], 1 << config.gm_addr_bits, "transfer_end")
        fail[Status.GM_OUT_OF_RANGE].append(enable & touches & beyond)
        mgather_checks(m, config, cmd, fail)

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W = cfg.axi_data_bytes
        sh = W.bit_length() - 1
        cmd = self.cmd
        axi = self.axi

        # ---- transfer geometry, from the held command --------------------------------------------
        is_store = cmd.opcode == Opcode.TSTORE
        tile = _transfer_tile(cmd)
        esz = elem_log2(m, tile.dtype)
        lines, line_elems, ub_stride = tile_geometry(m, tile, esz)

        m.submodules.walk_addr = walk_addr = LineWalker(cfg)   # AR or AW issue
        m.submodules.walk_data = walk_data = LineWalker(cfg)   # realigner + UB writer, or UB reader
        # The walkers take their start values from the command in the ``start`` cycle and run on a
        # registered copy afterwards: the per-line adds never see the opcode decode, the tile select or
        # the element-size shift (the command is held stable until ``done``).
        setup = Signal(walk_addr.params.shape())
        params = Signal(walk_addr.params.shape())
        m.d.comb += [
            setup.ub_base.eq(tile.base),
            setup.ub_stride.eq(ub_stride),
            setup.gm_base.eq(cmd.gm.base),
            setup.gm_stride.eq(cmd.gm.row_stride),
            setup.lines.eq(lines),
            setup.line_bytes.eq(line_elems << esz),
        ]
        with m.If(self.start):
            m.d.sync += params.eq(setup)
        for w in (walk_addr, walk_data):
            m.d.comb += w.params.eq(Mux(self.start, setup, params))

        esz_r = Signal(2)          # the element size of the running transfer (registered: it reaches the UB data)
        running = Signal()
        store = Signal()           # registered is_store for the running transfer
        gath = Signal()            # running an MGATHER: lines come from the index tile
        gath_elem = Signal()       # ... in element mode: its runs go through the element placer
        err = Signal()
        # Lines not yet completely written (UB for TLOAD and MGATHER_ROW, issued W for TSTORE);
        # MGATHER_ELEM counts elements instead.
        lines_left = Signal(32)
        is_gather = (cmd.opcode == Opcode.MGATHER_ROW) | (cmd.opcode == Opcode.MGATHER_ELEM)
        gather_lines = Mux(cmd.opcode == Opcode.MGATHER_ROW, cmd.dst.valid_rows,
                           cmd.dst.valid_rows * cmd.dst.valid_cols)
        empty = Mux(is_gather, (cmd.dst.valid_rows == 0) | (cmd.dst.valid_cols == 0),
                    (lines == 0) | (line_elems == 0))

        m.submodules.index = index = IndexLines(cfg)
        m.d.comb += index.cmd.eq(cmd)
        # lines_left is first needed when a line completes, cycles after start: the element count's
        # multiply gets the cycle after start to itself (from the held command into a register).
        count_pending = Signal()
        with m.If(count_pending):
            m.d.sync += [count_pending.eq(0), lines_left.eq(Mux(gath, gather_lines, lines))]
        with m.If(self.start):
            with m.If(empty):
                m.d.comb += [self.done.eq(1), self.status.eq(Status.OK)]
            with m.Else():
                m.d.sync += [running.eq(1), store.eq(is_store), gath.eq(is_gather), err.eq(0),
                             gath_elem.eq(cmd.opcode == Opcode.MGATHER_ELEM), count_pending.eq(1),
                             esz_r.eq(esz)]
                m.d.comb += [walk_addr.start.eq(~is_gather), walk_data.start.eq(~is_gather),
                             index.start.eq(is_gather)]

        # Address side: lines from the walker, or from the index tile (zero / reuse lines issue no AR).
        m.submodules.bursts = bursts = BurstWalker(cfg)
        ar_line = index.ar.payload
        skip = ar_line.skip
        m.d.comb += [
            bursts.lines.valid.eq(Mux(gath, index.ar.valid & ~skip, walk_addr.lines.valid)),
            bursts.lines.payload.eq(walk_addr.lines.payload),
            walk_addr.lines.ready.eq(~gath & bursts.lines.ready),
            index.ar.ready.eq(gath & (skip | bursts.lines.ready)),
        ]
        with m.If(gath):
            m.d.comb += [bursts.lines.payload.gm_addr.eq(ar_line.gm_addr),
                         bursts.lines.payload.length.eq(ar_line.length),
                         bursts.lines.payload.last.eq(0)]
        b = bursts.bursts.payload

        # Data side. GM -> UB (TLOAD, MGATHER_ROW): lines from the walker or the index tile (row mode) go
        # to the realigner (GM offset -> UB offset) and, in the same cycle, to the UB writer, which writes
        # the realigner's words: both count ceil((ub_addr mod W + length) / W) words per line and take
        # the next line with the last word of the current one, so they stay in step. UB -> GM (TSTORE):
        # the walker's lines go to the UB reader, which reads them already aligned to their GM offset.
        # Element mode's runs go through the element placer instead (below).
        m.submodules.realign = realign = Realigner(W)
        m.submodules.ub_writer = writer = UbWriter(cfg)
        m.submodules.ub_reader = reader = UbReader(cfg)
        line = Signal(index.data.payload.shape())
        line_valid = Signal()
        line_ready = Signal()
        m.d.comb += line_ready.eq(Mux(store, reader.lines.ready, realign.line.ready))
        # MGATHER's lines and runs reach the data side only with ``go``: a zero line or run writes the UB
        # without any AXI read, and nothing may be written before the checker has passed the command.
        data_valid = index.data.valid & self.go
        with m.If(gath & ~gath_elem):
            m.d.comb += [line.eq(index.data.payload), line_valid.eq(data_valid),
                         index.data.ready.eq(line_ready & self.go)]
        with m.Elif(~gath):
            m.d.comb += [line.ub_addr.eq(walk_data.lines.payload.ub_addr),
                         line.gm_addr.eq(walk_data.lines.payload.gm_addr),
                         line.length.eq(walk_data.lines.payload.length),
                         line_valid.eq(walk_data.lines.valid),
                         walk_data.lines.ready.eq(line_ready)]
        m.d.comb += [
            realign.line.valid.eq(line_valid & ~store),
            realign.line.payload.length.eq(line.length),
            realign.line.payload.src_off.eq(line.gm_addr[:sh]),
            realign.line.payload.dst_off.eq(line.ub_addr[:sh]),
            writer.lines.valid.eq(line_valid & ~store & realign.line.ready),
            writer.lines.payload.ub_addr.eq(line.ub_addr),
            writer.lines.payload.length.eq(line.length),
            reader.lines.valid.eq(line_valid & store),
            reader.lines.payload.ub_addr.eq(line.ub_addr),
            reader.lines.payload.length.eq(line.length),
            reader.lines.payload.dst_off.eq(line.gm_addr[:sh]),
        ]
        cur_zero = Signal()        # the line the realigner is working on is a zero line (MGATHER_ROW)
        with m.If(realign.line.valid & realign.line.ready):
            m.d.sync += cur_zero.eq(line.zero)

        # ---- constant AXI fields ------------------------------------------------------------------
        for ch in ("ar", "aw"):
            m.d.comb += [
                getattr(axi, f"{ch}id").eq(0), getattr(axi, f"{ch}size").eq(sh),
                getattr(axi, f"{ch}burst").eq(Burst.INCR), getattr(axi, f"{ch}cache").eq(_AXCACHE),
                getattr(axi, f"{ch}addr").eq(b.addr), getattr(axi, f"{ch}len").eq(b.len),
            ]

        # ---- TLOAD: AR issue, R buffer, realign into UB words ----------------------------------------
        rd_outstanding = Signal(range(cfg.max_outstanding_reads + 1))
        ar_ok = running & ~store & (rd_outstanding < cfg.max_outstanding_reads) & self.go
        m.d.comb += axi.arvalid.eq(bursts.bursts.valid & ar_ok)
        ar_fire = axi.arvalid & axi.arready
        r_last = axi.rvalid & axi.rready & axi.rlast
        m.d.sync += rd_outstanding.eq(rd_outstanding + ar_fire - r_last)

        # Unbuffered FIFO: a beat is readable the cycle after it arrives (the buffered one adds a cycle).
        m.submodules.rbuf = rbuf = fifo.SyncFIFO(width=8 * W + 1, depth=cfg.read_buffer_beats)
        m.d.comb += [
            rbuf.w_data.eq(Cat(axi.rdata, axi.rresp != Resp.OKAY)),
            rbuf.w_en.eq(axi.rvalid),
            axi.rready.eq(rbuf.w_rdy),
        ]

        # ---- TSTORE: the UB reader (its one read port), beats aligned to GM, credit-limited -----------
        rd = self.ub_rd[0]
        m.d.comb += [index.ub_rd.data.eq(rd.data),
                     reader.ub_rd.data.eq(rd.data), reader.ub_rd.next.eq(rd.next)]
        # MGATHER reads its index tile through the same port, from the ``start`` cycle on; the reader
        # reads only during a TSTORE.
        with m.If(gath | (self.start & is_gather)):
            m.d.comb += [rd.addr.eq(index.ub_rd.addr), rd.en.eq(index.ub_rd.en)]
        with m.Else():
            m.d.comb += [rd.addr.eq(reader.ub_rd.addr), rd.en.eq(reader.ub_rd.en)]

        # Realigner input: R buffer (TLOAD, MGATHER_ROW) or zeros (MGATHER_ROW zero line). Row lines never
        # reuse a beat: that is element mode's coalescing (below).
        last_beat = Signal(8 * W)  # the last beat taken from the R buffer
        from_r = ~store & ~cur_zero
        with m.If(cur_zero):
            m.d.comb += [realign.i.valid.eq(1), realign.i.payload.eq(0)]
        with m.Else():
            m.d.comb += [realign.i.valid.eq(rbuf.r_rdy), realign.i.payload.eq(rbuf.r_data[:8 * W])]
        m.d.comb += rbuf.r_en.eq(from_r & realign.i.ready)
        with m.If(rbuf.r_rdy & rbuf.r_en):
            m.d.sync += last_beat.eq(rbuf.r_data[:8 * W])
            with m.If(rbuf.r_data[8 * W]):
                m.d.sync += err.eq(1)

        # MGATHER_ELEM: a run and its beat (new, previous or zeros) make one UB write per cycle.
        m.submodules.placer = placer = ElementPlacer(cfg)
        run = index.data.payload
        run_beat_ok = run.zero | run.reuse | rbuf.r_rdy
        run_fire = gath_elem & data_valid & run_beat_ok
        run_bad = ~run.zero & ~run.reuse & rbuf.r_data[8 * W]     # this beat answered an error
        m.d.comb += [placer.line.eq(run), placer.esz.eq(esz_r),
                     placer.beat.eq(Mux(run.zero, 0, Mux(run.reuse, last_beat, rbuf.r_data[:8 * W])))]
        with m.If(gath_elem):
            m.d.comb += [index.data.ready.eq(run_beat_ok & self.go),
                         rbuf.r_en.eq(run_fire & ~run.zero & ~run.reuse)]

        # TLOAD / MGATHER_ROW output: the realigner's words through the UB writer (latency 0: written in
        # the cycle they leave the realigner; the writer's byte enables equal the realigner's).
        m.d.comb += [writer.words.valid.eq(realign.o.valid), realign.o.ready.eq(writer.words.ready),
                     writer.words.payload.eq(realign.o.payload.data)]
        with m.If(gath_elem):
            m.d.comb += [self.ub_wr.addr.eq(run.ub_addr >> sh), self.ub_wr.data.eq(placer.data)]
            with m.If(running & run_fire & ~err & ~run_bad):
                m.d.comb += self.ub_wr.be.eq(placer.be)
        with m.Elif(~store):
            m.d.comb += [self.ub_wr.addr.eq(writer.ub_wr.addr), self.ub_wr.data.eq(writer.ub_wr.data)]
            with m.If(running & ~err):
                m.d.comb += self.ub_wr.be.eq(writer.ub_wr.be)
        line_done = Signal()       # a line's last word written to the UB (GM -> UB) or sent on W (TSTORE)
        w_line_done = reader.words.valid & reader.words.ready & reader.words.payload.last
        m.d.comb += line_done.eq(Mux(store, w_line_done, writer.done))
        consumed = Signal(LINE_BYTES_BITS)    # lines (or MGATHER_ELEM elements) finished this cycle
        m.d.comb += consumed.eq(Mux(gath_elem, Mux(run_fire, run.length >> esz_r, 0), line_done))
        with m.If(consumed != 0):
            m.d.sync += lines_left.eq(lines_left - consumed)

        # TSTORE: AW issue; burst lengths queue up for the W channel.
        m.submodules.wlen = wlen = fifo.SyncFIFOBuffered(width=8, depth=max(2, cfg.max_outstanding_writes))
        wr_outstanding = Signal(range(cfg.max_outstanding_writes + 1))
        aw_all = Signal()        # every AW of the transfer is out
        m.d.comb += axi.awvalid.eq(running & store & self.go & bursts.bursts.valid & wlen.w_rdy &
                                   (wr_outstanding < cfg.max_outstanding_writes))
        aw_fire = axi.awvalid & axi.awready
        m.d.comb += [wlen.w_data.eq(b.len), wlen.w_en.eq(aw_fire)]
        m.d.comb += bursts.bursts.ready.eq(Mux(store, aw_fire, ar_fire))
        b_fire = axi.bvalid & axi.bready
        m.d.sync += wr_outstanding.eq(wr_outstanding + aw_fire - b_fire)
        m.d.comb += axi.bready.eq(1)
        with m.If(aw_fire & b.last):
            m.d.sync += aw_all.eq(1)
        with m.If(b_fire & (axi.bresp != Resp.OKAY)):
            m.d.sync += err.eq(1)

        beat = Signal(8)
        word = reader.words.payload
        with m.If(store):
            m.d.comb += [
                axi.wvalid.eq(reader.words.valid & wlen.r_rdy),
                axi.wdata.eq(word.data), axi.wstrb.eq(word.be),
                axi.wlast.eq(beat == wlen.r_data),
                reader.words.ready.eq(axi.wready & wlen.r_rdy),
            ]
        with m.If(axi.wvalid & axi.wready):
            m.d.sync += beat.eq(Mux(axi.wlast, 0, beat + 1))
            m.d.comb += wlen.r_en.eq(axi.wlast)

        # ---- completion -----------------------------------------------------------------------------
        # TLOAD / MGATHER: done in the cycle of the last UB write (it lands at the same clock edge).
        load_done = ~store & (lines_left == consumed)
        store_done = store & aw_all & (wr_outstanding == 0) & (lines_left == 0)
        with m.If(running & ~count_pending & (load_done | store_done)):
            m.d.sync += [running.eq(0), aw_all.eq(0)]
            m.d.comb += [
                self.done.eq(1),
                self.status.eq(Mux(err, Mux(store, Status.AXI_WRITE_ERROR, Status.AXI_READ_ERROR),
                                   Status.OK)),
            ]
        return m
