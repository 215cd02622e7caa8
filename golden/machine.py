"""A whole-state reference machine: the UB as bytes, a sparse global memory, and ``execute(cmd)``.

The cocotb testbenches compare complete UB and GM images against this machine, so it is exact to the
byte: an instruction writes exactly the bytes of its destination's valid region (TSTORE: exactly the GM
bytes of the transfer) and nothing else; an illegal instruction changes nothing.
"""

import numpy as np

from rtl.isa import DTYPE_BYTES, Layout, Opcode, Status

from . import ops
from .access import access
from .check import check_strict, normalize, tile_view, gm_view, SLOTS
from .errors import AmbiguousFault, IsaError, UndefinedResult
from .faults import GmFaults
from .numerics import UINT_OF_SIZE, bits, from_bits, np_dtype

__all__ = ["Machine", "SparseMemory"]


class SparseMemory:
    """Byte-addressed memory of ``2**addr_bits`` bytes, stored as 4 KiB pages; unwritten bytes read 0."""

    PAGE = 4096

    def __init__(self, addr_bits=64):
        self.addr_bits = addr_bits
        self.pages = {}

    def _span(self, addr, n):
        if addr < 0 or n < 0 or addr + n > 1 << self.addr_bits:
            raise ValueError(f"GM access [{addr:#x}, +{n}) outside the {self.addr_bits}-bit address space")

    def read(self, addr, n):
        self._span(addr, n)
        out = bytearray(n)
        pos = 0
        while pos < n:
            a = addr + pos
            page, off = divmod(a, self.PAGE)
            k = min(n - pos, self.PAGE - off)
            p = self.pages.get(page)
            if p is not None:
                out[pos:pos + k] = p[off:off + k]
            pos += k
        return bytes(out)

    def write(self, addr, data):
        data = bytes(data)
        self._span(addr, len(data))
        pos = 0
        while pos < len(data):
            a = addr + pos
            page, off = divmod(a, self.PAGE)
            k = min(len(data) - pos, self.PAGE - off)
            p = self.pages.setdefault(page, bytearray(self.PAGE))
            p[off:off + k] = data[pos:pos + k]
            pos += k

    def write_array(self, addr, array):
        """Write a numpy array's bytes (C order) at ``addr``."""
        self.write(addr, np.ascontiguousarray(array).tobytes())

    def read_array(self, addr, dtype, shape):
        dtype = np.dtype(dtype)
        n = int(np.prod(shape)) * dtype.itemsize
        return np.frombuffer(self.read(addr, n), dtype=dtype).reshape(shape).copy()

    def image(self):
        """{page address: bytes} of every page holding a non-zero byte (for whole-image comparison)."""
        return {pg * self.PAGE: bytes(p) for pg, p in sorted(self.pages.items()) if any(p)}

    def copy(self):
        m = SparseMemory(self.addr_bits)
        m.pages = {k: bytearray(v) for k, v in self.pages.items()}
        return m


class _GmTable:
    """A lazy view of an MGATHER table in GM: reads only the rows / elements the gather asks for."""

    def __init__(self, gm, desc, row_mode):
        self.gm, self.desc, self.row_mode = gm, desc, row_mode
        self.reads = []         # the GM byte ranges read, (lo, hi)
        self.size = DTYPE_BYTES[desc.dtype]
        self.uint = UINT_OF_SIZE[self.size]
        self.dtype = np.dtype(np_dtype(desc.dtype))
        self.shape = (desc.rows, desc.cols) if row_mode else (desc.rows * desc.cols,)

    def __getitem__(self, index):
        index = np.asarray(index, dtype=np.int64)
        d = self.desc
        uniq, inv = np.unique(index, return_inverse=True)
        if self.row_mode:
            spans = [(d.base + int(r) * d.row_stride, d.base + int(r) * d.row_stride + d.cols * self.size)
                     for r in uniq]
            self.reads += spans
            rows = [np.frombuffer(self.gm.read(lo, hi - lo), self.uint) for lo, hi in spans]
            got = np.stack(rows) if rows else np.zeros((0, d.cols), self.uint)
            out = got[inv.reshape(-1)].reshape(index.shape + (d.cols,))
        else:
            self.reads += [(d.base + int(f) * self.size, d.base + (int(f) + 1) * self.size) for f in uniq]
            vals = np.array([np.frombuffer(self.gm.read(d.base + int(f) * self.size, self.size), self.uint)[0]
                             for f in uniq], dtype=self.uint)
            out = vals[inv.reshape(-1)].reshape(index.shape)
        return out.view(self.dtype)


def _ub_view(ub, t):
    """A writable (rows, cols) view of tile ``t``'s elements in ``ub`` as unsigned integers."""
    size = DTYPE_BYTES[t.dtype]
    n = t.rows * t.cols * size
    flat = ub[t.base:t.base + n].view(UINT_OF_SIZE[size])
    if t.layout == Layout.ROW_MAJOR:
        return flat.reshape(t.rows, t.cols)
    return flat.reshape(t.cols, t.rows).T


#: Source slots that may be the *identical* tile as the destination (same base, static shape, layout,
#: type): elementwise instructions read element (i, j) only to produce element (i, j).
#: ``"full"``: the TROWEXPAND* full operand (``ops.trowexpand_roles``), never the expanded one.
_IDENTICAL_OK = {
    **{op: {"src0", "src1"} for op in ops.TPART_FUNCTIONS},
    **{op: {"full"} for op in ops.TROWEXPAND_FUNCTIONS},
    Opcode.TGEMV_ACC: {"src2"},
    Opcode.TGEMV_BIAS: {"src2"},
}


class Machine:
    """The golden machine. ``ub``: numpy uint8 array of ``config.ub_bytes``; ``gm``: ``SparseMemory``."""

    def __init__(self, config, supported=None, faults=None):
        self.config = config
        #: Opcodes this configuration executes (None: all); others answer ``Status.UNSUPPORTED``.
        self.supported = None if supported is None else frozenset(supported)
        self.ub = np.zeros(config.ub_bytes, np.uint8)
        self.gm = SparseMemory(config.gm_addr_bits)
        #: After ``execute(..., on_undefined="mask")``: boolean mask over the UB bytes left unspecified by
        #: the last instruction (None when everything was defined).
        self.last_undefined = None
        #: Where global memory rejects accesses (:class:`golden.faults.GmFaults`; docs/semantics.md, "AXI
        #: errors"): an instruction whose AXI traffic touches a window answers ``AXI_READ_ERROR`` /
        #: ``AXI_WRITE_ERROR`` and leaves its destination undefined.
        self.faults = faults if faults is not None else GmFaults()
        #: After ``execute``: the GM byte ranges ``(lo, hi)`` the last instruction left undefined (a TSTORE
        #: that met a write fault: its lines); empty otherwise.
        self.last_gm_undefined = []

    # -------------------------------------------------------------------------------------------- tiles
    @staticmethod
    def _tile(desc, slot="tile"):
        return desc if hasattr(desc, "vr") else tile_view({slot: desc}, slot)

    def read_tile(self, desc):
        """The tile's elements at its static shape, in logical (rows, cols) order (a copy)."""
        t = self._tile(desc)
        return from_bits(_ub_view(self.ub, t).copy(), t.dtype)

    def write_tile(self, desc, array, region=None):
        """Write ``array`` (logical order) into the tile: only its top-left ``region`` (default: the valid
        region) changes in the UB."""
        t = self._tile(desc)
        r, c = region if region is not None else (t.vr, t.vc)
        _ub_view(self.ub, t)[:r, :c] = bits(np.asarray(array, dtype=np_dtype(t.dtype)))[:r, :c]

    def footprint(self, desc, elements=None):
        """Boolean mask over the UB of the bytes of the tile's valid region (or of ``elements``, a boolean
        mask at the tile's static shape)."""
        t = self._tile(desc)
        m = np.zeros(self.config.ub_bytes, np.uint8)
        v = _ub_view(m, t)
        if elements is None:
            v[:t.vr, :t.vc] = np.iinfo(v.dtype).max
        else:
            v[np.asarray(elements, bool)] = np.iinfo(v.dtype).max
        return m.astype(bool)

    # -------------------------------------------------------------------------------------------- GM
    def _gm_lines(self, g, t):
        rm = t.layout == Layout.ROW_MAJOR
        lines, line_len = (t.vr, t.vc) if rm else (t.vc, t.vr)
        return rm, lines, line_len, DTYPE_BYTES[t.dtype]

    def _gm_read_block(self, g, t):
        rm, lines, line_len, size = self._gm_lines(g, t)
        u = UINT_OF_SIZE[size]
        block = np.zeros((lines, line_len), u)
        for l in range(lines if line_len else 0):
            block[l] = np.frombuffer(self.gm.read(g.base + l * g.row_stride, line_len * size), u)
        return from_bits(block if rm else block.T, t.dtype)

    def _gm_write_block(self, g, t, block):
        rm, lines, line_len, size = self._gm_lines(g, t)
        b = bits(block)
        b = b if rm else b.T
        for l in range(lines if line_len else 0):     # increasing line order: with overlapping lines,
            self.gm.write(g.base + l * g.row_stride, np.ascontiguousarray(b[l]).tobytes())   # later wins

    # -------------------------------------------------------------------------------------------- execute
    def execute(self, cmd, on_undefined="raise"):
        """Check ``cmd``; if legal, run it and return ``Status.OK``; if illegal, return the status and change
        nothing.

        When the result is undefined (see docs/semantics.md, "Undefined results"):
        ``on_undefined="raise"``: raise ``UndefinedResult`` (with ``ub_mask``, the unspecified UB bytes),
        state unchanged; ``"mask"``: write the defined part, set ``last_undefined`` to the mask of
        unspecified UB bytes (those keep their old value here) and return ``Status.OK``.
        """
        if on_undefined not in ("raise", "mask"):
            raise ValueError("on_undefined must be 'raise' or 'mask'")
        self.last_undefined = None
        self.last_gm_undefined = []
        try:
            check_strict(cmd, self.config, self.supported)
        except IsaError as e:
            return e.status
        cmd = normalize(cmd)
        op = cmd["opcode"]
        slots, uses_gm = SLOTS[op]
        t = {s: tile_view(cmd, s, role) for s, role in slots.items()}
        g = gm_view(cmd) if uses_gm else None
        dst = t.get("dst")
        fault = self._transfer_fault(op, t, g)
        if fault is not None:
            return fault
        table = None
        try:
            if dst is not None:
                self._overlap(op, t)
            if op in (Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM):
                table = _GmTable(self.gm, g, op == Opcode.MGATHER_ROW)
            new = self._run(op, cmd, t, g, table)
        except UndefinedResult as e:
            if op in (Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM) and self.faults.read and \
                    self.faults.read_hit(access(cmd).gm_reads, self.config.axi_data_bytes):
                raise AmbiguousFault(f"{op.name}: its result is undefined ({e.message}), so which table rows "
                                     f"it reads is too, and a read fault lies in its table: the status may be "
                                     f"OK or AXI_READ_ERROR") from e
            mask = self.footprint(dst, e.elements) if e.elements is not None else self.footprint(dst)
            e.ub_mask = mask
            if on_undefined == "raise":
                raise
            partial = getattr(e, "partial", None)
            if partial is not None:
                self.write_tile(dst, partial)
            self.last_undefined = mask
            return Status.OK
        if table is not None and self.faults.read_hit(table.reads, self.config.axi_data_bytes):
            self.last_undefined = self.footprint(dst)
            return Status.AXI_READ_ERROR
        if new is not None:
            self.write_tile(dst, new)
        return Status.OK

    def _transfer_fault(self, op, t, g):
        """TLOAD / TSTORE against ``faults``: the status of a transfer that meets a fault (its destination
        undefined: ``last_undefined`` / ``last_gm_undefined``), else None. MGATHER's reads are known only
        once its indices are (``execute``)."""
        if op not in (Opcode.TLOAD, Opcode.TSTORE) or not self.faults:
            return None
        tile = t["dst"] if op == Opcode.TLOAD else t["src0"]
        _, lines, line_len, size = self._gm_lines(g, tile)
        spans = [(g.base + k * g.row_stride, g.base + k * g.row_stride + line_len * size)
                 for k in range(lines if line_len else 0)]
        if op == Opcode.TLOAD and self.faults.read_hit(spans, self.config.axi_data_bytes):
            self.last_undefined = self.footprint(tile)
            return Status.AXI_READ_ERROR
        if op == Opcode.TSTORE and self.faults.write_hit(spans):
            self.last_gm_undefined = spans
            return Status.AXI_WRITE_ERROR
        return None

    def _overlap(self, op, t):
        dst = t["dst"]
        if not dst.vr or not dst.vc:
            return
        written = self.footprint(dst)
        ok = set(_IDENTICAL_OK.get(op, ()))
        if "full" in ok:
            role = ops.trowexpand_roles((dst.vr, dst.vc), (t["src0"].vr, t["src0"].vc),
                                        (t["src1"].vr, t["src1"].vc))
            ok = {f"src{role}"}
        for slot, src in t.items():
            if slot == "dst" or not src.vr or not src.vc:
                continue
            same = (src.base, src.rows, src.cols, src.layout, src.dtype) == \
                   (dst.base, dst.rows, dst.cols, dst.layout, dst.dtype)
            if slot in ok and same:
                continue
            if (self.footprint(src) & written).any():
                raise UndefinedResult(f"{op.name}: destination {dst.base:#x} overlaps {slot} ({src.role}) at "
                                      f"{src.base:#x} (only an identical elementwise operand may)")

    def _run(self, op, cmd, t, g, table=None):
        prof = self.config.profile
        if op == Opcode.TSYNC:
            return ops.tsync()
        rd = lambda s: self.read_tile(t[s])
        v = lambda s: (t[s].vr, t[s].vc)
        if op == Opcode.TLOAD:
            return ops.tload(rd("dst"), v("dst"), self._gm_read_block(g, t["dst"]))
        if op == Opcode.TSTORE:
            self._gm_write_block(g, t["src0"], ops.tstore(rd("src0"), v("src0")))
            return None
        if op in (Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM):
            row = op == Opcode.MGATHER_ROW
            fn = ops.mgather_row if row else ops.mgather_elem
            return fn(rd("dst"), v("dst"), rd("src0"), v("src0"), table or _GmTable(self.gm, g, row), cmd["oob"],
                      profile=prof)
        if op == Opcode.LOCAL_GATHER:
            return ops.local_gather(rd("dst"), v("dst"), rd("src0"), v("src0"), rd("src1"), v("src1"),
                                    1 << cmd["nepi_log2"], cmd["num_valid"], profile=prof)
        if op in ops.TROWEXPAND_FUNCTIONS:
            return ops.TROWEXPAND_FUNCTIONS[op](rd("dst"), v("dst"), rd("src0"), v("src0"), t["src0"].layout,
                                                rd("src1"), v("src1"), t["src1"].layout,
                                                dst_layout=t["dst"].layout, profile=prof)
        if op in ops.TPART_FUNCTIONS:
            return ops.TPART_FUNCTIONS[op](rd("dst"), v("dst"), rd("src0"), v("src0"), rd("src1"), v("src1"),
                                           profile=prof)
        P = self.config.gemv_partial_sums
        if op == Opcode.TGEMV:
            return ops.tgemv(rd("dst"), v("dst"), rd("src0"), v("src0"), rd("src1"), v("src1"),
                             partial_sums=P, profile=prof)
        fn = ops.tgemv_acc if op == Opcode.TGEMV_ACC else ops.tgemv_bias
        return fn(rd("dst"), v("dst"), rd("src2"), v("src2"), rd("src0"), v("src0"), rd("src1"), v("src1"),
                  partial_sums=P, profile=prof)
