"""NKI ``local_gather`` inside the unified buffer (LOCAL_GATHER): the engine, its timing contract and its
cycle model. The hardware is built by sections, one module each: :mod:`.geometry` (sizes, the geometry
table and registers), :mod:`.control` (control state, slot registers, the issue state machine),
:mod:`.reads` (index tables, read addresses, input registers), :mod:`.placement` (rotations, packing, the
write queue and the UB write)."""

from amaranth import *

from rtl.engines.base import Engine, tile_lines, words_of
from rtl.engines.local_gather.checks import local_gather_checks
from rtl.engines.local_gather.control import control_registers, slot_issue, slot_registers
from rtl.engines.local_gather.geometry import GROUP, Sizes, geometry_registers, piece_geometry
from rtl.engines.local_gather.overlap import release_and_done, slot_geometry
from rtl.engines.local_gather.placement import pack, place, write_queue
from rtl.engines.local_gather.reads import input_registers, read_addresses
from rtl.lib.output_queue import OutputQueue
from rtl.isa import DTYPE_BYTES, DType, Opcode
from rtl.ub.buffer import WINDOW_CYCLES, UnifiedBuffer

__all__ = ["LocalGatherEngine"]


class LocalGatherEngine(Engine):
    """Executes LOCAL_GATHER: ``dst`` (destination), ``src0`` (source), ``src1`` (UINT16 index tile),
    immediates ``nepi_log2`` and ``num_valid`` (docs/semantics.md, "local_gather").

    For every group of 16 source rows the group's ``16 x X`` index block, flattened column by column
    (``indices_1d[k] = idx[16 g + k % 16, k // 16]``), lists ``n`` element offsets; row ``p`` of the
    group gets ``dst[p, k * nepi + e] = src[p, indices_1d[k] + e]`` (a bit copy of ``B = nepi * size``
    bytes per *chunk*).

    Parameters
    ----------
    config : :class:`rtl.config.Config`
        Uses ``ub_word_bytes`` (``W``), ``ub_bytes`` and ``ub_read_ports``.
    overlap : bool
        Build with ``release`` (:class:`rtl.engines.base.EngineSignature`, the concurrent unit): the engine
        takes its next instruction ``RELEASE_CYCLES`` = 1 cycle after the running one's last slot is
        issued (its last row's flush, when that spills), while that one's last slots are still in the
        pipeline and the write queue; up to ``IN_FLIGHT`` = 3 instructions, ``done`` once per instruction
        in start order (an empty destination's waits for the older ones'). What travels with each slot
        and what is per instruction: :mod:`rtl.engines.local_gather.overlap`. Without it the netlist is the
        serial one.

    Ports
    -----
    cmd, start, go, done, status
        As :class:`rtl.engines.base.EngineSignature`.
    release : (``overlap=True`` only) high while the issue is idle (the last slot of every instruction
        started so far has been issued), no empty destination waits for its ``done`` and fewer than
        ``IN_FLIGHT`` instructions with words are in flight; low in a ``start`` cycle.
    ub_rd : ``min(MAX_READ_PORTS, config.ub_read_ports)`` UB read ports
        Index reads, then piece reads (one piece, or index read, per port and cycle).
    ub_wr : the UB write port, with its handshake (``valid`` / ``ready``)
        One destination word per cycle at most, exact byte enables, from the write queue (below): a
        word the port refuses stays offered, unchanged, until it is taken; ``valid`` never before
        ``go``. No AXI.

    Operation. Work is cut into *blocks* of up to 16 consecutive ``k`` (one column of the group's index
    block). For each block the engine first reads its indices (two per cycle, one per read port, for
    at least ``INDEX_MIN_CYCLES`` = 6 cycles), then, for each of the 16 rows, moves the block's chunks as
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
    and a register; ``ub_rd.addr`` / ``en`` come straight from registers, ``ub_wr`` through one LUT and
    the write queue's bypass, a 2:1 multiplexer whose select is a register):

    - Geometry (:func:`~rtl.engines.local_gather.geometry.geometry_registers`): the element size, the
      strides and the first block's state are registered from ``cmd`` while the engine is idle (``cmd``
      is valid and held from the ``start`` cycle on), and everything that depends on the element size
      and ``nepi`` alone (chunk and piece sizes, pairing, masks) one cycle later, from tables
      (``GEOMETRY_DELAY`` = 2 cycles after ``start``); so no path starts at ``cmd`` once the engine runs,
      and ``start`` only decides the next state and the first index read. Addresses are byte addresses
      modulo the UB (``log2(ub_bytes)`` bits: reads wrap at its end).
    - Issue (:mod:`~rtl.engines.local_gather.control`), cycle ``c``: the control registers one *slot*:
      index reads, piece reads, or a flush of a pending word. A slot that may write (a piece slot or a
      flush) goes only while the write queue has ``room`` (below); without it the control holds its
      state and issues nothing (a bubble, as while it waits for ``go``; index reads go on). Running
      pointers, no multiplies: the
      source row plus the piece's offset in its chunk (one add), the chunk number(s) ``k`` (a shift of
      the offset in the row's block), the destination pointer. ``c + D_STAGE`` (D,
      :func:`~rtl.engines.local_gather.reads.read_addresses`): each piece's index, read from LUT RAM
      (two banks, even and odd ``k``) and scaled by the element size, is added (for an index read:
      nothing on port 0, the index stride on port 1); the word addresses go to the registers that drive
      ``ub_rd`` in ``c + READ_STAGE`` (``READ_STAGE`` = 2), and the UB's words arrive in
      ``c + READ_STAGE + READ_LATENCY``, in the engine's input register a cycle later (stage 1:
      ``c + STAGE_1``, ``STAGE_1`` = 6).
    - Index capture (stage 1, :func:`~rtl.engines.local_gather.reads.input_registers`): the index
      half-word of each read window into its bank (the indices of a block are read two per cycle, ``k``
      even on port 0 and odd on port 1), readable ``INDEX_WRITE`` = 1 cycle later.
    - Placement, stages 1 and 2 (:func:`~rtl.engines.local_gather.placement.place`): a piece's bytes
      are taken from the window's two words (byte ``i`` from the first word when ``i >= offset``, else
      from the second: a piece of at most ``W`` bytes uses each byte position once) and that word is
      rotated by ``offset - lane`` modulo ``W`` so that every piece byte lands in its destination lane:
      by a multiple of 8 bytes into a register in stage 1, by 0-7 bytes in stage 2 (as
      :func:`rtl.ub.byteshift.select_bytes`; the fine amount is registered in one copy per
      ``FINE_LANES`` = 4 lanes, which keeps its fan-out down). The two pieces of a pair are merged per
      lane into one registered word; the lane masks (which lanes each piece covers, which belong to the
      current destination word) are registered a stage ahead.
    - Packing, stage 3 (:func:`~rtl.engines.local_gather.placement.pack`): lanes at or above the slot's
      first lane belong to the current destination word, the lower ones (wrapped around) to the next;
      the current word is written (the pending bytes and the new ones, exact byte enables) when it is
      complete or the row's block ends, the rest stays pending. When a row's block ends with bytes
      spilled into the next word (destination rows not word-aligned), the issue side gives up one slot
      so that the pending word gets the write port (at the end of a block that flush goes with the next
      block's first index reads and costs nothing; at the end of the instruction it is the last write).
      A slot without a word (an index read, a bubble) changes no pending byte.
    - Write queue (:func:`~rtl.engines.local_gather.placement.write_queue`, an
      :class:`rtl.lib.output_queue.OutputQueue` of ``WRITE_QUEUE_DEPTH`` = 16 entries of LUT RAM, after
      stage 3): stage 3's words (address, data, byte enables and a mark on the instruction's last word)
      wait here while ``ub_wr.ready`` is low; the stages cannot stop, so the control issues only with
      the queue's ``room`` (a register), and its latency is the issue's distance to stage 3,
      ``WRITE_QUEUE_LATENCY`` = ``PIPELINE`` = 8 (the depth: the least power of two above it). While the
      queue holds nothing, stage 3's word is on ``ub_wr`` in its own cycle (the bypass), so a port that
      is always ready (the unit's, today) sees every word, and ``done``, in the cycle it had without
      the queue.

    Latency
    -------
    The first index read(s) go in the ``start`` cycle; ``done`` (status ``OK``) comes in the cycle the
    port takes the last word (marked in the write queue): with a port that is always ready, that is
    ``PIPELINE`` = 8 cycles after the last slot was issued; an empty destination (no rows or ``n = 0``)
    writes nothing and is done in the cycle after ``start`` (``EMPTY_CYCLES`` = 1). Cycles from
    ``start`` to ``done`` with a port that is always ready (:meth:`cycles`, exact): the sum over blocks
    of (index cycles + moving cycles, below), plus one when the instruction's last row's block spills
    (its flush is the last write), plus the cycles the first block's pieces wait for ``go`` (none in
    the unit), + ``PIPELINE - 1`` (e.g. 16 rows of 16 chunks of ``W / 2`` bytes: 8 + 128 + 7 = 143).
    A port that refuses words delays the words behind them in the queue and, once ``room`` falls, the
    issue: :meth:`cycles` is then a lower bound.

    With ``overlap``, a stream of independent instructions each started at ``release`` (with a port that
    is always ready) costs the first one's :meth:`cycles` plus, for each later one, its :meth:`cycles`
    ``- PIPELINE + RELEASE_CYCLES`` (7 fewer than alone: the pipeline behind its last slot is hidden
    behind the next one's slots; ``tests/rtl/test_rtl_local_gather_overlap.py``). Each instruction's
    first block still pays its index reads after the previous one's last slot.

    Throughput
    ----------
    Per block of ``K`` chunks and 16 rows: ``max(INDEX_MIN_CYCLES, ceil(K / 2))`` cycles of index reads
    (``max(INDEX_MIN_CYCLES, K)`` with one read port) plus one cycle per piece (half a cycle for a
    paired piece; where a piece lies in its source words does not matter) plus one cycle at the end of
    a row's block when its last destination word spills into the next word and another row of the
    block follows (only when ``dst`` rows are not word-aligned). Hence, with two read ports and
    word-aligned ``dst`` rows, at any offsets: ``B >= W`` moves ``W`` bytes per cycle, ``32 / 33`` = 97%
    of the write port once the index reads of full blocks are counted (``B = W``: ``K / 2`` index cycles
    per ``16 K`` moving ones; a block of ``K < 12`` chunks has 6); ``B = W / 2`` also moves ``W`` bytes
    per cycle, ``16 / 17`` = 94% (``K / 2`` per ``8 K``); ``B < W / 2`` is bound by the read ports at
    ``2 B`` bytes per cycle. With one read port: one piece per cycle, nothing is paired.
    """

    name = "local_gather"
    opcodes = (Opcode.LOCAL_GATHER,)
    UB_READ_PORTS = 1           # MAX_READ_PORTS where the configuration has them (:meth:`read_ports`)
    UB_WRITE = True
    OVERLAP = True              # rtl/engines/local_gather/overlap.py
    #: (overlap) Instructions with words the engine holds at most (started, last word not yet taken): the
    #: running one and two released ones, as the front end holds (``rtl.frontend.pipe_front.PipeFrontEnd.
    #: RELEASED`` = 2 per pipe). The write queue's ``room`` keeps the engine below it: an instruction writes
    #: at least ``GROUP`` words, and the words issued and not yet taken are at most ``WRITE_QUEUE_DEPTH`` =
    #: 16, so an instruction's last slot is issued only after the previous one's last word was taken; with
    #: an empty destination's ``done`` waiting, two instructions are in the engine at most. The gate binds
    #: when ``IN_FLIGHT`` is made smaller (``test_overlap_in_flight_gate``: with 1, no instruction starts
    #: before the previous one is done, and a release without the gate fails it).
    IN_FLIGHT = 3
    #: (overlap) Cycles from the issue of an instruction's last slot (its last row's flush, when it spills)
    #: to ``release``: the issue state machine's register (``IDLE`` in the next cycle).
    RELEASE_CYCLES = 1

    #: Read ports the engine uses where the configuration has them (two pieces, or two index reads, per
    #: cycle).
    MAX_READ_PORTS = 2
    #: Cycles from the UB's read data to the engine's input register (the window register of
    #: :func:`rtl.ub.buffer.read_window`: stage 1 works on registers of its own, not on the UB's read data).
    INPUT_REGISTER = WINDOW_CYCLES
    #: Cycles from a UB read's ``en`` to its words in the engine's input register.
    IN_LATENCY = UnifiedBuffer.READ_LATENCY + INPUT_REGISTER
    #: Cycles from a slot's issue to its D stage, where its chunk's index is read from LUT RAM and added
    #: to its source pointer (the slot's register).
    D_STAGE = 1
    #: Cycles from the D stage to the UB reads' ``en`` (the read address registers).
    ADDRESS_REGISTER = 1
    #: Cycles from a slot's issue to its UB reads' ``en``.
    READ_STAGE = D_STAGE + ADDRESS_REGISTER
    #: Cycles from a slot's issue to stage 1, its reads' words in the input registers.
    STAGE_1 = READ_STAGE + IN_LATENCY
    #: Cycles from stage 1 to stage 3, the write: the coarse rotation's register and the fine rotation's
    #: (with the pair merged).
    PLACE_STAGES = 2
    #: Cycles from a slot's issue to its UB write (stage 3: its word at the write queue's input).
    PIPELINE = STAGE_1 + PLACE_STAGES
    #: The write queue's latency (:class:`rtl.lib.output_queue.OutputQueue`): the most cycles from an issue
    #: gated by its ``room`` (a slot the control emits) to that slot's word at its input, stage 3.
    WRITE_QUEUE_LATENCY = PIPELINE
    #: Entries of the write queue (LUT RAM): the least power of two above WRITE_QUEUE_LATENCY, so that
    #: ``room`` stays high while the port takes every word.
    WRITE_QUEUE_DEPTH = OutputQueue.depth_for(WRITE_QUEUE_LATENCY)
    #: Cycles from an index's capture (stage 1) to the first cycle its bank returns it (the LUT RAM's
    #: synchronous write).
    INDEX_WRITE = 1
    #: Least cycles of index reads per block: an index read issued in cycle ``c`` is in its bank from
    #: ``c + STAGE_1 + INDEX_WRITE``, where the first piece slot ``c'`` reads it (in ``c' + D_STAGE``).
    INDEX_MIN_CYCLES = STAGE_1 + INDEX_WRITE - D_STAGE
    #: Cycles from ``start`` to the level-2 geometry: level 1 registered from ``cmd`` while idle, level 2
    #: from tables of level 1.
    GEOMETRY_DELAY = 2
    #: Cycles from a block's chunk count (and the level-2 geometry) to the per-block values that begin
    #: its rows (one register).
    BLOCK_VALUES_DELAY = 1
    #: Cycles from ``start`` to ``done`` for an empty destination (``done`` from a state register).
    EMPTY_CYCLES = 1
    #: Copies of each input register's load enable and of its read's parity, each for a slice of its two
    #: words.
    IN_EN_COPIES = 8
    #: Lanes per copy of a fine rotation amount (16: 11.1 ns in `default` seed 3 at ea2de51; 8: 10.8 ns
    #: at e1b106f).
    FINE_LANES = 4

    @classmethod
    def read_ports(cls, config):
        """Two UB read ports where the configuration has them (two pieces per cycle), else one."""
        return min(cls.MAX_READ_PORTS, config.ub_read_ports)

    @classmethod
    def _work(cls, config, cmd):
        """``(groups, n, geometry, esz)`` of a decoded command (``None`` when it moves nothing)."""
        src, idx = cmd["src0"], cmd["src1"]
        groups = src["valid_rows"] // GROUP
        n = cmd["num_valid"] or GROUP * idx["valid_cols"]
        if not groups or not n:
            return None
        esz = DTYPE_BYTES[DType(src["dtype"])].bit_length() - 1
        sh = config.ub_word_bytes.bit_length() - 1
        return groups, n, piece_geometry(esz, cmd["nepi_log2"], sh, cls.read_ports(config) >= 2), esz

    @classmethod
    def bound(cls, config, cmd):
        """The narrowest resource: the UB write port (one word of the destination per cycle) or the read
        ports (one piece or one index per port and cycle)."""
        W = config.ub_word_bytes
        writes = sum(words_of(address, n, W) for address, n in tile_lines(cmd["dst"]))
        work = cls._work(config, cmd)
        if work is None:
            return writes
        groups, n, geo, _ = work
        reads = groups * n * ((GROUP << geo["npc_log2"]) + 1)       # 16 rows' pieces and an index per chunk
        return max(writes, -(-reads // cls.read_ports(config)))

    @classmethod
    def cycles(cls, config, cmd, *, go_delay=0):
        """Cycles from ``start`` to ``done`` of ``cmd`` (decoded) with a UB write port that is always ready
        (a lower bound otherwise), exact for every command: per block its
        index cycles and the slots of its 16 rows, a flush cycle per row whose block spills into the next
        destination word where no index read hides it, ``PIPELINE - 1``. ``go_delay``: the cycle after
        ``start`` in which ``go`` rises; the first block's pieces wait for it (never in the unit:
        ``VectorUnit.GO_DELAY`` is shorter than the first block's index reads, as is the default 0)."""
        work = cls._work(config, cmd)
        if work is None:
            return cls.EMPTY_CYCLES
        groups, n, geo, esz = work
        W, ports, dst = config.ub_word_bytes, cls.read_ports(config), cmd["dst"]
        B, P, step = 1 << geo["b_log2"], geo["psize"], geo["step"]
        issued = 0                              # cycles from start to the last slot, inclusive
        for g in range(groups):
            for k0 in range(0, n, GROUP):
                K = min(GROUP, n - k0)
                index = max(cls.INDEX_MIN_CYCLES, -(-K // ports))
                issued += index + (max(0, go_delay - (index - 1)) if g == k0 == 0 else 0)
                pieces = K << geo["npc_log2"]
                slots = ((pieces - 1) >> geo["pmode"]) + 1
                last = P << (geo["pmode"] & (pieces % 2 == 0))       # bytes of the row's last slot
                for p in range(GROUP):
                    row = dst["base"] + (GROUP * g + p) * (dst["cols"] << esz) + k0 * B
                    spill = (row + (slots - 1) * step) % W + last > W
                    # a spilled word's flush takes a slot, except beside the next block's index reads
                    final = g == groups - 1 and k0 + GROUP >= n
                    issued += slots + (spill and (p < GROUP - 1 or final))
        return issued - 1 + cls.PIPELINE

    def __init__(self, config, *, overlap=False):
        self._ports = self.read_ports(config)
        super().__init__(config, overlap=overlap)

    @staticmethod
    def add_checks(m, config, cmd, fail):
        """LOCAL_GATHER constraints beyond the common ones
        (:func:`rtl.engines.local_gather.checks.local_gather_checks`)."""
        local_gather_checks(m, config, cmd, fail)

    def elaborate(self, platform):
        """The sections in the order they add hardware (the order is part of the netlist)."""
        m = Module()
        sz = Sizes.of(self._config, self._ports)
        geo = geometry_registers(m, self.cmd, sz)
        ctl = control_registers(m, self, sz, geo)
        pl = slot_registers(m, self, sz)
        wq = write_queue(self, sz)              # (added to the module by pack)
        issue = slot_issue(m, self, sz, geo, ctl, pl, wq)
        rd = read_addresses(m, self, sz, geo, pl)
        win = input_registers(m, self, sz, pl, rd)
        # (with overlap the placement reads the slot's own P, not the setup's: overlap.slot_geometry)
        placed = place(m, self, sz, slot_geometry(m, self, geo) if self._overlap else geo, pl, win)
        pack(m, self, sz, pl, placed, wq)
        if self._overlap:
            release_and_done(m, self, geo, issue.idle, issue.last_taken)
        return m
