"""TLOAD, TSTORE and MGATHER: :class:`TransferEngine`, transfers between global memory (AXI4) and UB
tiles. Its elaborate's sections: the line walkers and MGATHER's :class:`IndexLines` here; the setup in
:mod:`.setup`; the address side in :mod:`.address_side`; GM -> UB in :mod:`.load_path`; UB -> GM in
:mod:`.store_path`; overlapped instructions in :mod:`.load_overlap` and :mod:`.store_overlap`."""

from amaranth import *

from rtl.engines.base import GO_DELAY, Engine, words_of
from rtl.engines.transfer import load_overlap, load_path, store_overlap, store_path
from rtl.engines.transfer.address_side import address_side
from rtl.engines.transfer.checks import mgather_checks, transfer_checks
from rtl.engines.transfer.mgather import GATHER_OPCODES, IndexLines
from rtl.engines.transfer.placer import ElementPlacer
from rtl.engines.transfer.realign import Realigner
from rtl.engines.transfer.setup import setup
from rtl.engines.transfer.walker import BurstWalker, LineWalker
from rtl.isa import DTYPE_BYTES, DType, Layout, OobMode, Opcode, Status
from rtl.lib.contract import require
from rtl.lib.fifo import BeatBuffer
from rtl.ub.reader import UbReader

__all__ = ["TransferEngine"]


class TransferEngine(Engine):
    """TLOAD (GM -> UB, ``dst`` + ``gm``), TSTORE (UB -> GM, ``src0`` + ``gm``) and MGATHER (GM -> UB,
    ``dst`` + index tile ``src0`` + table ``gm``; its lines come from
    :class:`rtl.engines.transfer.mgather.IndexLines` instead of the line walkers, see docs/architecture.md,
    "MGATHER").

    The transfer covers the tile's valid region, one *line* (a row of a row-major tile, a column of a
    column-major one) at a time, GM line ``l`` at ``gm.base + l * gm.row_stride``. Lines are split into
    bus-aligned INCR bursts that never cross 4 KiB and have at most ``config.max_burst_beats`` beats
    (:class:`rtl.engines.transfer.walker.BurstWalker`); byte enables (UB) and write strobes (GM) cover
    exactly the line's bytes, so nothing outside the valid region changes on either side.

    Parameters
    ----------
    config : :class:`rtl.config.Config`
        Uses ``axi_data_bits`` (= the UB word), ``gm_addr_bits``, ``max_outstanding_reads``,
        ``max_outstanding_writes``, ``max_burst_beats`` and ``read_buffer_beats`` (at most
        ``RBUF_DEPTH`` = 16 of them).

    Ports
    -----
    cmd, start, go, done, status : as :class:`rtl.engines.base.EngineSignature`.
    ub_rd : one UB read port: TSTORE's :class:`rtl.ub.reader.UbReader`, MGATHER's index reads.
    ub_wr : the UB write port with its handshake (TLOAD, MGATHER): ``valid`` from the write queue
        (a word held there, or the word formed now), ``ready`` pops it; ``valid`` is low before ``go``.
    axi : the AXI4 master: AR / R (TLOAD, MGATHER), AW / W / B (TSTORE); ID 0, INCR bursts.

    Structure (the sections of :meth:`elaborate`; every path starts at a register and stays a few LUT
    levels deep, for the clock):

    - setup (:func:`rtl.engines.transfer.setup.setup`): in the ``start`` cycle the command's geometry is
      registered (element size, line count and length, UB base and stride, ``gm.base - 1``); the opcodes are
      told apart by single bits (:func:`rtl.lib.decode.opcode_bit`: the engine only starts for its own four).
      The data-side walker starts in that cycle, the address-side walker (which needs the first line's last
      byte, an add of registers) one cycle later (:meth:`_line_walkers`). MGATHER decodes its own geometry in
      :class:`IndexLines` (:meth:`_gather_lines`), which reads the index tile from ``start`` on.
    - address side (:func:`rtl.engines.transfer.address_side.address_side`): lines from the address-side
      :class:`LineWalker` (or ``IndexLines.ar``) into a :class:`BurstWalker`, whose output register
      drives AR (or AW): ``arvalid`` is that register AND ``go``, address and length are registers. A
      burst is loaded only while fewer than ``max_outstanding_reads`` (``_writes``) are loaded or in flight.
    - GM -> UB (:mod:`rtl.engines.transfer.load_path`): R beats into a ``read_buffer_beats``
      :class:`rtl.lib.fifo.BeatBuffer` (``rready`` = room; no bypass: a beat can be popped the cycle
      after it arrives). TLOAD and MGATHER_ROW: the lines (from the data-side walker or
      ``IndexLines.data``) and the beats go through a :class:`Realigner` (``Realigner.LATENCY`` = 2
      register steps, its output one 4:1 multiplexer after a register) whose words carry their UB
      address and exact byte enables. MGATHER_ELEM: a run and its beat (new, the previous one again, or
      none for a zero run) through the :class:`ElementPlacer` (``ElementPlacer.LATENCY`` = 3 register
      steps). Either's words go through the write queue (:class:`rtl.lib.output_queue.OutputQueue`,
      ``WRITE_QUEUE_DEPTH`` = 8 entries of LUT RAM, ``latency`` ``WRITE_QUEUE_LATENCY`` = 3) to the UB
      write port: a word the port refuses is held there and offered again, and while the queue holds
      none a word passes in the cycle it is formed (one 2:1 multiplexer). Neither pipeline can stop
      between its steps, so both start a word only with the queue's ``room`` (a register): the
      realigner's takes, zero and flush words (its ``enable``) and the placer's fires wait, and behind
      them the beat buffer fills and holds ``rready`` low, and MGATHER's index queues fill and stop the
      walk (their credits count their own levels, not the data side's pace).
    - UB -> GM (:mod:`rtl.engines.transfer.store_path`, TSTORE): the data-side walker's lines go to a
      :class:`UbReader`, whose words come out aligned to their GM offset, to W (after their burst's
      AW; burst lengths queue in a FIFO).
    - completion (:meth:`_completion`).

    Latency
    -------
    From ``start`` (in the unit ``go`` comes ``VectorUnit.GO_DELAY`` = 4 cycles after ``start``):

    - TLOAD / TSTORE: the first AR / AW is in the burst register ``FIRST_BURST_CYCLES`` = 3 cycles after
      ``start`` and leaves with ``go`` (in the unit it waits for ``go``).
    - MGATHER: the first line leaves :class:`IndexLines` ``IndexLines.FIRST_LINE_CYCLES`` = 11 cycles
      after ``start``, its AR is in the burst register ``GATHER_FIRST_BURST_CYCLES`` = 12 cycles after
      ``start`` (``READ_LATENCY + 9``; WRAP adds ``IndexLines.WRAP_CYCLES`` = 33). That is after ``go`` in
      the unit, so the gates that hold MGATHER's AR and its zero lines and runs until ``go`` never
      delay it: the checker's latency is hidden behind the index path. (With ``overlap`` its lines and runs
      wait for the engine's own copy of ``go``, ``LOAD_GO_COPY_CYCLES`` = 1 later: still before the first.)
    - An R beat taken in cycle ``t`` is offered to the UB write port in ``t + LOAD_WRITE_CYCLES`` =
      ``t + 3`` (TLOAD, MGATHER_ROW: the beat buffer, then the realigner) or ``t + ELEM_WRITE_CYCLES`` =
      ``t + 4`` (MGATHER_ELEM: the beat buffer, then the element placer) at the earliest: the write queue
      adds no cycle while it is empty, i.e. while the port has taken every word (the unit's port is
      always ready). ``done`` comes in the cycle the port takes the last UB write (TLOAD, MGATHER).
    - TSTORE: the first W beat is offered ``STORE_FIRST_W_CYCLES`` = 8 cycles after ``start`` (the
      data-side walker, then the UB reader; after its AW); ``done`` comes ``STORE_DONE_CYCLES`` = 1 cycle
      after the last B response.
    - An empty region is ``done`` ``EMPTY_CYCLES`` = 1 cycle after ``start`` (:meth:`cycles`).
    - Fixed overhead (:meth:`fixed_overhead`): the cycles a read takes beyond its beats and the memory's
      latency; in the unit (README, "Performance") TLOAD's is 7 (``VectorUnit.GO_DELAY`` plus
      ``LOAD_WRITE_CYCLES``) and MGATHER_ROW's 15 (``GATHER_FIRST_BURST_CYCLES`` plus
      ``LOAD_WRITE_CYCLES``).

    Throughput
    ----------
    One bus beat per cycle in either direction once the pipe is full, up to ``max_outstanding_reads``
    read bursts in flight; a TLOAD line that needs one more UB word than bus beats costs one extra cycle
    (a TSTORE line none: the reader makes every beat from one UB read). MGATHER_ELEM: one run (one UB
    write, up to an index word's elements that share a beat) per cycle.

    Errors
    ------
    An AXI error response does not stop the transfer (every requested beat is still taken, so nothing
    hangs) but suppresses the UB writes of that beat and all later ones and answers
    ``AXI_READ_ERROR`` / ``AXI_WRITE_ERROR``.
    """

    name = "transfer"
    opcodes = (Opcode.TLOAD, Opcode.TSTORE, Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM)
    UB_READ_PORTS = 1
    UB_WRITE = True
    AXI = True

    #: The R beat buffer's depth: ``read_buffer_beats``, at most this (one LUT RAM block deep, so that
    #: its read is one LUT level; the data side takes a beat in every cycle but a flush or zero word's
    #: while the UB write port takes its words, so a deeper buffer would not hold ``rready`` high any
    #: longer; while the port refuses words the buffer fills and ``rready`` drops).
    RBUF_DEPTH = 16
    #: Copies of the TLOAD / MGATHER_ELEM select of the UB write data, each for a slice of the word.
    DATA_SEL_COPIES = 4
    #: The write queue's ``latency`` (:class:`rtl.lib.output_queue.OutputQueue`): the most cycles from a
    #: start of a word (a realigner take, zero or flush word, an element placer fire) to the word at the
    #: queue's input, the slower of the two pipelines (the select between them is combinational).
    WRITE_QUEUE_LATENCY = max(Realigner.LATENCY, ElementPlacer.LATENCY)
    #: The write queue's entries (LUT RAM, a power of two): at least ``WRITE_QUEUE_LATENCY + 1``, so that
    #: ``room`` is high while the queue holds up to ``WRITE_QUEUE_DEPTH - 1 - WRITE_QUEUE_LATENCY`` words.
    WRITE_QUEUE_DEPTH = 8

    #: With ``overlap`` (the GM -> UB half): ``go`` -> the engine's own register of it that holds MGATHER's
    #: lines and runs (:func:`rtl.engines.transfer.load_path.realigner`); its AR requests keep ``go``.
    LOAD_GO_COPY_CYCLES = 1

    #: Cycles from ``start`` to the registered geometry (``empty_done``, the address-side walker's start).
    SETUP_CYCLES = 1
    #: Cycles from ``start`` to TLOAD / TSTORE's first AR / AW in the burst register: the setup, the
    #: address-side walker's first line, the burst walker's register (the line queue between them passes
    #: a line through while it is empty).
    FIRST_BURST_CYCLES = SETUP_CYCLES + LineWalker.LATENCY + BurstWalker.LATENCY
    #: Cycles from ``start`` to MGATHER's first AR in the burst register (without WRAP): IndexLines' first
    #: line, then the burst walker's register.
    GATHER_FIRST_BURST_CYCLES = IndexLines.FIRST_LINE_CYCLES + BurstWalker.LATENCY
    #: Cycles from an R beat's handshake to the cycle it can be popped (the beat buffer's ``avail`` is a
    #: register: ``BeatBuffer.AVAIL_CYCLES``).
    RBUF_AVAIL_CYCLES = BeatBuffer.AVAIL_CYCLES
    #: Cycles from a pop to the popped beat on the beat buffer's ``last`` (``BeatBuffer.LAST_CYCLES``).
    RBUF_READ_CYCLES = BeatBuffer.LAST_CYCLES
    #: Cycles from an R beat's handshake to its UB write (TLOAD, MGATHER_ROW): the beat buffer, then the
    #: realigner (which takes the beat in the cycle it is popped).
    LOAD_WRITE_CYCLES = RBUF_AVAIL_CYCLES + Realigner.LATENCY
    #: Cycles from an R beat's handshake to its UB write (MGATHER_ELEM): the beat buffer, then the element
    #: placer (fired in the cycle the beat is popped).
    ELEM_WRITE_CYCLES = RBUF_AVAIL_CYCLES + ElementPlacer.LATENCY
    #: Cycles from ``start`` to TSTORE's first W beat offered (once its AW is out): the data-side walker's
    #: first line (started with ``start``), then the UB reader.
    STORE_FIRST_W_CYCLES = LineWalker.LATENCY + UbReader.LATENCY
    #: Cycles from the last B response to ``done`` (TSTORE): "no write burst in flight" is a register.
    STORE_DONE_CYCLES = 1
    #: Cycles from ``start`` to ``done`` for an empty region (``empty_done``, registered at ``start``).
    EMPTY_CYCLES = SETUP_CYCLES

    def __init__(self, config, *, overlap=False):
        # the data side reads the beat it popped (or the realigner took) from the beat buffer's ``last``
        # a cycle later: the realigner's buffered input and the placer's beat expect it then
        require(Realigner.TAKE_TO_WORD == self.RBUF_READ_CYCLES,
                f"TransferEngine: the realigner reads i_last Realigner.TAKE_TO_WORD = {Realigner.TAKE_TO_WORD} "
                f"cycles after i_take; the beat buffer gives it RBUF_READ_CYCLES = {self.RBUF_READ_CYCLES} after "
                f"the pop")
        require(ElementPlacer.BEAT_DELAY == self.RBUF_READ_CYCLES,
                f"TransferEngine: the element placer takes its beat ElementPlacer.BEAT_DELAY = "
                f"{ElementPlacer.BEAT_DELAY} cycles after fire; the beat buffer gives it RBUF_READ_CYCLES = "
                f"{self.RBUF_READ_CYCLES} after the pop")
        # the write queue's room promises space for every word started before it, so its latency must
        # cover both pipelines that feed it, with nothing clocked between them and the queue
        require(self.WRITE_QUEUE_LATENCY >= max(Realigner.LATENCY, ElementPlacer.LATENCY),
                f"TransferEngine: WRITE_QUEUE_LATENCY = {self.WRITE_QUEUE_LATENCY} must cover "
                f"Realigner.LATENCY = {Realigner.LATENCY} and ElementPlacer.LATENCY = {ElementPlacer.LATENCY}")
        require(self.WRITE_QUEUE_DEPTH >= self.WRITE_QUEUE_LATENCY + 1,
                f"TransferEngine: WRITE_QUEUE_DEPTH = {self.WRITE_QUEUE_DEPTH} must be at least "
                f"WRITE_QUEUE_LATENCY + 1 = {self.WRITE_QUEUE_LATENCY + 1}, else the queue never has room")
        # (overlap is one direction's: TLOADs back to back, rtl.engines.transfer.load_overlap, or TSTOREs,
        # rtl.engines.transfer.store_overlap; the two directions share their walkers)
        require(not overlap or not (self._loads and self._stores), f"{type(self).__name__}: overlap=True is "
                f"for one direction (GmToUbEngine or UbToGmEngine): the two directions share their walkers")
        # MGATHER's lines and runs wait for a registered copy of ``go`` in the GM -> UB half with overlap: its
        # first line must come no earlier, or fixed_overhead() would not be exact
        require(not (overlap and self._loads) or IndexLines.FIRST_LINE_CYCLES >= GO_DELAY + self.LOAD_GO_COPY_CYCLES,
                f"TransferEngine: MGATHER's first line (IndexLines.FIRST_LINE_CYCLES = {IndexLines.FIRST_LINE_CYCLES} "
                f"cycles after start) must come no earlier than go's copy (GO_DELAY + LOAD_GO_COPY_CYCLES = "
                f"{GO_DELAY} + {self.LOAD_GO_COPY_CYCLES})")
        super().__init__(config, overlap=overlap)

    # ---- the cycle model ----------------------------------------------------------------------------------

    @classmethod
    def bound(cls, config, cmd):
        """Bus beats, one per cycle: TLOAD / TSTORE the beats of every GM line; MGATHER_ROW at least
        ``ceil(row bytes / W)`` per row (where a row starts depends on its index); MGATHER_ELEM one UB
        write per cycle of at most one index word's indices and one word of elements, of one row (a run
        never spans two rows)."""
        W = config.axi_data_bytes
        op = Opcode(cmd["opcode"])
        gm = cmd["gm"]
        size = DTYPE_BYTES[DType(gm["dtype"])]
        if op in (Opcode.TLOAD, Opcode.TSTORE):        # (a TSTORE's command may have no dst: an image's)
            tile = cmd["dst"] if op == Opcode.TLOAD else cmd["src0"]
            col = Layout(tile["layout"]) == Layout.COL_MAJOR
            lines, elems = (gm["cols"], gm["rows"]) if col else (gm["rows"], gm["cols"])
            return sum(words_of(gm["base"] + k * gm["row_stride"], elems * size, W) for k in range(lines))
        rows, cols = cmd["dst"]["valid_rows"], cmd["dst"]["valid_cols"]
        if op == Opcode.MGATHER_ROW:
            return rows * -(-cols * size // W)
        return rows * -(-cols // min(W // 4, W // size))

    @classmethod
    def _empty(cls, cmd):
        """The command's region is empty: TLOAD / TSTORE's GM shape, MGATHER's destination's valid shape."""
        op, gm, dst = Opcode(cmd["opcode"]), cmd["gm"], cmd["dst"]
        if op in GATHER_OPCODES:
            return dst["valid_rows"] == 0 or dst["valid_cols"] == 0
        return gm["rows"] == 0 or gm["cols"] == 0

    @classmethod
    def cycles(cls, config, cmd):
        """``EMPTY_CYCLES`` for an empty region; ``None`` otherwise (the cycles depend on global memory; a
        read's fixed part is :meth:`fixed_overhead`)."""
        return cls.EMPTY_CYCLES if cls._empty(cmd) else None

    @classmethod
    def fixed_overhead(cls, config, cmd, go_delay):
        """The cycles a non-empty TLOAD or MGATHER takes beyond its beats and the memory's latency when
        the beats come back to back: ``done`` comes ``fixed_overhead + latency + beats - 1`` cycles after
        ``start``, with ``latency`` from the first AR's handshake to its first R beat's and ``go``
        ``go_delay`` cycles after ``start``. In the unit, whose acceptance is a cycle before ``start``,
        the response's ``cycles`` exceed the beats and the latency by this (README, "Performance",
        "beyond"). ``None`` for TSTORE (its end waits for B responses) and empty regions."""
        op = Opcode(cmd["opcode"])
        if op == Opcode.TSTORE or cls._empty(cmd):
            return None
        if op == Opcode.TLOAD:
            return max(cls.FIRST_BURST_CYCLES, go_delay) + cls.LOAD_WRITE_CYCLES
        first = cls.GATHER_FIRST_BURST_CYCLES + (IndexLines.WRAP_CYCLES if OobMode(cmd["oob"]) == OobMode.WRAP else 0)
        write = cls.LOAD_WRITE_CYCLES if op == Opcode.MGATHER_ROW else cls.ELEM_WRITE_CYCLES
        return max(first, go_delay) + write

    @classmethod
    def add_checks(cls, m, config, cmd, fail):
        """TLOAD / TSTORE's rules (:func:`rtl.engines.transfer.checks.transfer_checks`), then MGATHER's
        (:func:`rtl.engines.transfer.checks.mgather_checks`) when the engine runs MGATHER."""
        transfer_checks(m, config, cmd, fail)
        if set(GATHER_OPCODES) & set(cls.opcodes):
            mgather_checks(m, config, cmd, fail)

    # ---- the hardware -------------------------------------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        # setup: the command's geometry, registered at ``start``; the line walkers; MGATHER's lines
        s = setup(m, self)
        walk_addr, walk_data = self._line_walkers(m, s)
        index = self._gather_lines(m) if self._gathers else None
        err = Signal()              # an AXI error response came: no more UB writes, an error status
        # GM -> UB instructions back to back: whose lines, beats, words and errors are whose
        t = load_overlap.load_tracking(m, s) if self._overlap and self._loads else None
        # address side: lines -> bursts -> the AR / AW register
        a = address_side(m, cfg, self, s, walk_addr, index, t)
        load_done, store_done, aw_all, load_ready = C(0), C(0), Signal(), None
        if self._loads:
            # GM -> UB: R beats, the realigner (TLOAD, MGATHER_ROW) or the element placer (MGATHER_ELEM)
            rbuf, pop = load_path.beat_buffer(m, cfg, self, err, t)
            realign, load_ready = load_path.realigner(m, cfg, self, s, walk_data, index, rbuf, t)
            load_done = load_path.ub_write(m, cfg, self, s, index, rbuf, pop, realign, err, t)
        old = store_overlap.older_store(m, cfg) if self._overlap and self._stores else None
        if self._stores:
            # UB -> GM (TSTORE): the UB reader (its one read port, shared with MGATHER's index reads), W, B
            reader = store_path.ub_reader(m, cfg, self, s, walk_data, index, load_ready)
            st = store_path.w_channel(m, cfg, self, s, a, reader, err, old)
            store_done, aw_all = st.done, st.aw_all
        else:
            # the read port is MGATHER's alone; R and B / W: nothing here drives W, every B is taken
            store_path.index_reads_only(m, self, index, load_ready, walk_data)
        if self._overlap and self._loads:       # TLOADs and MGATHERs back to back (the GM -> UB half)
            load_overlap.overlap_completion(m, self, s, walk_addr, walk_data, a, load_done, t, index)
        elif self._overlap:                     # TSTOREs back to back (the UB -> GM half)
            store_overlap.overlap_completion(m, self, s, walk_addr, walk_data, a, st, old, err)
        else:
            self._completion(m, s, load_done, store_done, aw_all, err)
        return m

    @property
    def _loads(self):
        """The engine runs GM -> UB instructions (TLOAD, MGATHER)."""
        return Opcode.TLOAD in self.opcodes

    @property
    def _stores(self):
        """The engine runs TSTORE."""
        return Opcode.TSTORE in self.opcodes

    @property
    def _gathers(self):
        return bool(set(GATHER_OPCODES) & set(self.opcodes))

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
        m.submodules.index = index = IndexLines(self._config, self.opcodes, overlap=self._overlap and self._loads)
        m.d.comb += [index.cmd.eq(self.cmd), index.start.eq(self.start)]
        return index

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
