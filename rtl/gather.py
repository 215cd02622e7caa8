"""MGATHER: index tiles in the UB turned into GM lines for the transfer engine's read path."""

from amaranth import *
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .checker import tile_checks
from .isa import Command, DType, Layout, OobMode, Opcode, Profile
from .status import Status
from .tile import dtype_valid, elem_log2
from .ub import UbReadSignature
from .walker import LINE_BYTES_BITS

__all__ = ["GatherLine", "IndexLines", "ModuloPipeline", "mgather_checks"]


def GatherLine(config):
    """A line of the read path: ``zero`` lines read nothing and write zeros; ``reuse`` lines (element
    mode) take the previous line's beat again instead of a new one (coalescing: no AR is issued)."""
    return data.StructLayout({
        "ub_addr": 24,
        "gm_addr": config.gm_addr_bits,
        "length":  LINE_BYTES_BITS,
        "zero":    1,
        "reuse":   1,
    })


def mgather_checks(m, config, cmd, fail):
    """MGATHER_ROW / MGATHER_ELEM constraints, as ``golden.check`` (docs/semantics.md, MGATHER)."""
    op = cmd.opcode
    row = op == Opcode.MGATHER_ROW
    enable = row | (op == Opcode.MGATHER_ELEM)
    dst, idx, gm = cmd.dst, cmd.src0, cmd.gm
    fail[Status.DTYPE_INVALID].append(
        enable & ~(dtype_valid(dst.dtype) & dtype_valid(idx.dtype) & dtype_valid(gm.dtype)))
    if config.profile == Profile.A2A3:            # MGATHER is an A5 instruction (seed MGATHER.txt)
        fail[Status.DTYPE_UNSUPPORTED].append(enable)
    fail[Status.DTYPE_MISMATCH].append(enable & (gm.dtype != dst.dtype))
    fail[Status.INDEX_DTYPE].append(enable & (idx.dtype != DType.INT32) & (idx.dtype != DType.UINT32))
    esz = tile_checks(m, config, fail, dst, enable)
    tile_checks(m, config, fail, idx, enable)
    fail[Status.LAYOUT_UNSUPPORTED].append(
        enable & ((dst.layout != Layout.ROW_MAJOR) | (idx.layout != Layout.ROW_MAJOR)))
    row_shape = ((idx.rows != dst.rows) | (idx.cols != 1) | (idx.valid_rows != dst.valid_rows) |
                 (idx.valid_cols != 1) | (gm.cols != dst.valid_cols))
    elem_shape = ((idx.rows != dst.rows) | (idx.cols != dst.cols) | (idx.valid_rows != dst.valid_rows) |
                  (idx.valid_cols != dst.valid_cols))
    fail[Status.SHAPE_MISMATCH].append(enable & Mux(row, row_shape, elem_shape))
    entries = Signal(64)
    m.d.comb += entries.eq(Mux(row, gm.rows, gm.rows * gm.cols))
    nonempty = (dst.valid_rows != 0) & (dst.valid_cols != 0)
    fail[Status.DIM_OUT_OF_RANGE].append(enable & nonempty & (entries == 0))
    mask = Signal(2)
    m.d.comb += mask.eq((1 << esz) - 1)
    fail[Status.GM_MISALIGNED].append(enable & (((gm.base & mask) != 0) | (row & ((gm.row_stride & mask) != 0))))
    end = Signal(64 + 66)   # one past the last table byte
    m.d.comb += end.eq(Mux(row, gm.base + (gm.rows - 1) * gm.row_stride + (gm.cols << esz),
                           gm.base + (entries << esz)))
    fail[Status.GM_OUT_OF_RANGE].append(enable & (entries != 0) & (end > (1 << config.gm_addr_bits)))


class ModuloPipeline(wiring.Component):
    """``u mod s`` for unsigned ``width``-bit operands, one restoring-division step per stage.

    Ports: ``i_valid``, ``i_u``, ``i_s``, ``i_tag`` in; ``o_valid``, ``o_r``, ``o_tag`` out ``width``
    cycles later. No backpressure: the user bounds what is in flight. ``s`` must be non-zero.
    Latency: ``width`` cycles; throughput one per cycle.
    """

    def __init__(self, width, tag_width):
        self._w = width
        super().__init__({
            "i_valid": In(1), "i_u": In(width), "i_s": In(width), "i_tag": In(tag_width),
            "o_valid": Out(1), "o_r": Out(width), "o_tag": Out(tag_width),
        })

    def elaborate(self, platform):
        m = Module()
        w = self._w
        valid, u, s, r, tag = self.i_valid, self.i_u, self.i_s, C(0, w + 1), self.i_tag
        for k in range(w):
            shifted = Cat(u[w - 1 - k], r[:w])              # r * 2 + next bit of u
            nr = Signal(w + 1, name=f"r{k}")
            m.d.sync += nr.eq(Mux(shifted >= s, shifted - s, shifted))
            nv, nu, ns, nt = (Signal.like(x, name=f"{n}{k}") for x, n in
                              ((valid, "v"), (u, "u"), (s, "s"), (tag, "t")))
            m.d.sync += [nv.eq(valid), nu.eq(u), ns.eq(s), nt.eq(tag)]
            valid, u, s, r, tag = nv, nu, ns, nr, nt
        m.d.comb += [self.o_valid.eq(valid), self.o_r.eq(r[:w]), self.o_tag.eq(tag)]
        return m


class IndexLines(wiring.Component):
    """Reads an MGATHER index tile from the UB and emits one :func:`GatherLine` per destination row (row
    mode) or element (element mode), in row-major order, on two streams (``ar`` for address issue,
    ``data`` for the data path), each a FIFO of ``depth`` lines.

    Out-of-bounds handling of an index ``u`` (read as uint32) against the table size ``S``:
    CLAMP -> ``S - 1``; WRAP -> ``u mod S`` (through a :class:`ModuloPipeline`); ZERO -> a ``zero`` line;
    UNDEFINED -> treated as CLAMP (the result is undefined; clamping keeps every read inside the table).
    Element mode marks a line ``reuse`` when its element lies in the same bus beat as the previous
    non-zero line's, so that beat is read once (coalescing).

    Ports: ``cmd`` (held), ``start`` (pulse), ``ub_rd`` (a UB read port), ``ar``/``data`` (streams out).
    Throughput: one index per cycle. Latency: the first index is read in the ``start`` cycle; its line
    is on ``ar`` 2 cycles later (34 with WRAP; ``ar`` bypasses its FIFO when that is empty) and on
    ``data`` 3 cycles later (35).
    """

    def __init__(self, config, depth=64):
        self._config = config
        self._depth = depth
        layout = GatherLine(config)
        super().__init__({
            "cmd": In(Command), "start": In(1),
            "ub_rd": Out(UbReadSignature(config)),
            "ar": Out(stream.Signature(layout)),
            "data": Out(stream.Signature(layout)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W = cfg.ub_word_bytes
        sh = W.bit_length() - 1
        cmd = self.cmd
        dst, idx, gm = cmd.dst, cmd.src0, cmd.gm
        row = cmd.opcode == Opcode.MGATHER_ROW
        wrap = cmd.oob == OobMode.WRAP
        esz = elem_log2(m, dst.dtype)
        layout = GatherLine(cfg)

        m.submodules.q_ar = q_ar = fifo.SyncFIFO(width=layout.size, depth=self._depth)
        m.submodules.q_data = q_data = fifo.SyncFIFO(width=layout.size, depth=self._depth)
        m.d.comb += [
            q_ar.r_en.eq(self.ar.ready),
            self.data.valid.eq(q_data.r_rdy), self.data.payload.eq(q_data.r_data),
            q_data.r_en.eq(self.data.ready),
        ]

        # ---- stage 0: walk (i, j) over the valid region and read the index word ------------------
        size = Signal(32)       # table entries
        m.d.sync += size.eq(Mux(row, gm.rows, gm.rows * gm.cols))
        busy = Signal()
        i = Signal(16)           # (i, j) is back at (0, 0) whenever the walk is idle
        j = Signal(16)
        last_j = Mux(row, 0, dst.valid_cols - 1)
        # Indices between the UB read and the FIFO write: read, lane pick, 32 modulo stages (WRAP), resolve.
        inflight = Signal(range(2 + 32 + 2 + 1))
        room = (q_data.level + inflight < self._depth - 1) & (q_ar.level + inflight < self._depth - 1)
        # The first index is read in the ``start`` cycle itself (the walk starts at (0, 0)).
        nonempty = (dst.valid_rows != 0) & (dst.valid_cols != 0)
        issue = (busy | (self.start & nonempty)) & room
        idx_addr = Signal(24)
        m.d.comb += idx_addr.eq(idx.base + ((i * idx.cols + j) << 2))
        m.d.comb += [self.ub_rd.addr.eq(idx_addr >> sh), self.ub_rd.en.eq(issue)]
        with m.If(self.start):
            m.d.sync += busy.eq(nonempty)
        with m.If(issue):
            with m.If(j == last_j):
                m.d.sync += [j.eq(0), i.eq(i + 1)]
                with m.If(i == dst.valid_rows - 1):
                    m.d.sync += [busy.eq(0), i.eq(0)]
            with m.Else():
                m.d.sync += j.eq(j + 1)

        # ---- stage 1: the index word arrives; pick the lane ---------------------------------------
        s1_valid = Signal()
        s1_lane = Signal(range(W // 4))
        s1_i, s1_j = Signal(16), Signal(16)
        m.d.sync += [s1_valid.eq(issue), s1_lane.eq(idx_addr[2:sh]), s1_i.eq(i), s1_j.eq(j)]
        u = Signal(32)
        m.d.comb += u.eq(self.ub_rd.data.word_select(s1_lane, 32))

        # ---- stage 2: out-of-bounds resolution (WRAP through the modulo pipeline) -----------------
        inside = u < size
        tag = Cat(s1_i, s1_j)
        m.submodules.mod = mod = ModuloPipeline(32, len(tag))
        m.d.comb += [mod.i_valid.eq(s1_valid & wrap), mod.i_u.eq(u), mod.i_s.eq(size), mod.i_tag.eq(tag)]
        s2_valid, s2_r, s2_zero = Signal(), Signal(32), Signal()
        s2_i, s2_j = Signal(16), Signal(16)
        with m.If(wrap):
            m.d.sync += [s2_valid.eq(mod.o_valid), s2_r.eq(mod.o_r), s2_zero.eq(0),
                         Cat(s2_i, s2_j).eq(mod.o_tag)]
        with m.Else():
            m.d.sync += [s2_valid.eq(s1_valid), s2_i.eq(s1_i), s2_j.eq(s1_j),
                         s2_zero.eq((cmd.oob == OobMode.ZERO) & ~inside),
                         s2_r.eq(Mux(inside, u, size - 1))]

        # ---- stage 3: addresses, coalescing, into both FIFOs --------------------------------------
        line = Signal(layout)
        gm_addr = Signal(cfg.gm_addr_bits)
        m.d.comb += gm_addr.eq(Mux(row, gm.base + s2_r * gm.row_stride, gm.base + (s2_r << esz)))
        m.d.comb += [
            line.gm_addr.eq(gm_addr),
            line.ub_addr.eq(dst.base + ((s2_i * dst.cols + s2_j) << esz)),
            line.length.eq(Mux(row, dst.valid_cols << esz, 1 << esz)),
            line.zero.eq(s2_zero),
        ]
        last_beat = Signal(cfg.gm_addr_bits - sh)
        have_beat = Signal()
        with m.If(self.start):
            m.d.sync += have_beat.eq(0)
        with m.Elif(s2_valid & ~s2_zero):
            m.d.sync += [last_beat.eq(gm_addr >> sh), have_beat.eq(1)]
        m.d.comb += line.reuse.eq(~row & ~s2_zero & have_beat & (last_beat == (gm_addr >> sh)))
        # The address side bypasses its FIFO when that is empty (the FIFO's write-to-read cycle would
        # delay every instruction's first AR); the data side has the memory latency to hide its own.
        with m.If(q_ar.r_rdy):
            m.d.comb += [self.ar.valid.eq(1), self.ar.payload.eq(q_ar.r_data),
                         q_ar.w_en.eq(s2_valid)]
        with m.Else():
            m.d.comb += [self.ar.valid.eq(s2_valid), self.ar.payload.eq(line),
                         q_ar.w_en.eq(s2_valid & ~self.ar.ready)]
        m.d.comb += [q_ar.w_data.eq(line), q_data.w_data.eq(line), q_data.w_en.eq(s2_valid)]

        m.d.sync += inflight.eq(inflight + issue - s2_valid)
        return m
