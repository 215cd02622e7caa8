"""A program placed and checked for one configuration (:class:`Assembly`), and bound to input arrays.

``Program.assemble(config)`` places every UB tile (explicit ``pto.tassign`` addresses, the rest by a first-fit
allocator over the tiles' live ranges, 32-byte aligned) and checks every instruction whose shapes are static
with ``golden.check``; ``Assembly.bind(inputs)`` binds the ``?`` shapes from the input arrays, places GM and
gives a :class:`pto.image.Image`: the concrete commands (``rtl.isa.Command`` dicts), the initial UB and GM
contents and where the outputs are.
"""

import numpy as np

from golden.check import check_strict
from golden.errors import IsaError
from rtl.isa import (DType, DTYPE_BYTES, gm_region, INSTRUCTIONS, Layout, main_slot, Opcode, Status,
    tile as tile_desc, UB_ALIGN)
from golden.numerics import DTYPE_NUMPY

from pto.errors import AsmError, InputError
from pto.image import Image
from pto.types import MemRefType, TileType, element_name

__all__ = ["Assembly", "infer_valid", "resolve", "place_gm", "command", "describe", "placement_notes", "GM_BASE",
           "GM_ALIGN"]

#: Automatically placed GM regions start here, each aligned to GM_ALIGN bytes.
GM_BASE = 0x0010_0000
GM_ALIGN = 4096


# ------------------------------------------------------------------------------------------------ shapes

def infer_valid(ins, t):
    """The valid shape the written tile gets when its type says ``?``: ``t`` = {slot: concrete type}."""
    op = ins.opcode
    dst = t.get("dst")
    if op == Opcode.TLOAD:
        return t["gm"].shape
    if op == Opcode.MGATHER_ROW:
        return (t["src0"].valid[0], t["gm"].cols)
    if op == Opcode.MGATHER_ELEM:
        return t["src0"].valid
    if op == Opcode.LOCAL_GATHER:
        src, idx = t["src0"], t["src1"]
        n = ins.attrs.get("num_valid") or 16 * idx.valid[1]
        return (src.valid[0], n << ins.attrs.get("nepi_log2", 0))
    fam = INSTRUCTIONS[op].family
    if fam == "elementwise":
        a, b = t["src0"].valid, t["src1"].valid
        if INSTRUCTIONS[op].special and Status.VALIDITY_PATTERN in INSTRUCTIONS[op].special:
            return (max(a[0], b[0]), max(a[1], b[1]))
        return a if a[1] >= b[1] else b                 # TROWEXPAND*: the source with more valid columns
    if fam == "gemv":
        return (t["src0"].valid[0], t["src1"].valid[1])
    return dst.valid


def _concrete(ins, t, declared):
    """The written value's concrete type (``?`` filled by :func:`infer_valid`), or None if unknown."""
    if declared.static:
        return declared
    if any(x is None for x in t.values()):
        return None
    if isinstance(declared, TileType):
        inf = infer_valid(ins, t)
        return declared.with_valid(tuple(d if d is not None else i for d, i in zip(declared.valid, inf)))
    src = t["src0"]
    return declared.with_shape(tuple(d if d is not None else i for d, i in zip(declared.shape, src.valid)))


def resolve(program, bound):
    """{buffer id: concrete type or None} after binding ``bound`` = {buffer id: concrete type} of the args."""
    types = {}
    for b in program.buffers:
        types[b.id] = bound.get(b.id, b.type if b.type.static else None)
    for ins in program.instrs:
        if ins.inplace or ins.out is None:
            continue
        t = {s: types[v.buffer.id] for s, v in ins.operands.items()}
        types[ins.out.buffer.id] = _concrete(ins, t, ins.out.buffer.type)
    return types


def _align(x, a):
    return -(-x // a) * a


def place_gm(program, types):
    """{buffer id: GM address} for every GM buffer whose type is concrete (explicit ones as given)."""
    addr, out = GM_BASE, {}
    for b in program.ordered_buffers():
        if b.space != "gm":
            continue
        if b.addr is not None:
            out[b.id] = b.addr
            continue
        t = types.get(b.id)
        if t is None:
            continue
        out[b.id] = addr
        addr = _align(addr + max(t.nbytes(), 1), GM_ALIGN)
    return out


def command(ins, types, ub, gm):
    """The ``rtl.isa.Command`` dict of ``ins`` from concrete types and addresses."""
    cmd = {"opcode": ins.opcode}
    for k in ("oob", "nepi_log2", "num_valid"):
        if k in ins.attrs:
            cmd[k] = ins.attrs[k]
    for slot, v in ins.slots.items():
        t = types[v.buffer.id]
        if slot == "gm":
            cmd["gm"] = gm_region(gm[v.buffer.id], t.rows, t.cols, t.dtype,
                                  row_stride=t.stride() * DTYPE_BYTES[t.dtype])
        else:
            cmd[slot] = tile_desc(ub[v.buffer.id], t.rows, t.cols, t.dtype, valid=t.valid, layout=t.layout)
    return cmd


def describe(ins, types):
    """(shape, type) strings of an instruction's main tile for the run table (valid/static, dtype)."""
    slot = main_slot(ins.opcode)
    if slot is None:                    # tsync: no tile
        return "-", "-"
    v = ins.slots.get(slot)
    t = types.get(v.buffer.id) if v is not None else None
    if t is None:
        return "?", "-"
    shape = f"{t.valid[0]}x{t.valid[1]}/{t.rows}x{t.cols}" + (" col" if t.layout == Layout.COL_MAJOR else "")
    return shape, element_name(t.dtype)


def placement_notes(ins, status, config, types):
    """[(message, Loc)]: where the explicit placements (``pto.tassign``) that make ``ins`` answer ``status``
    were written (UB_MISALIGNED: a tile not on a UB_ALIGN boundary; UB_OUT_OF_RANGE: a tile past the end of the
    UB; GM_MISALIGNED / GM_OUT_OF_RANGE: every explicitly placed region), for an error at ``ins`` to point
    at them too."""
    notes, seen = [], set()
    for v in ins.slots.values():
        b = v.buffer
        if b.addr is None or b.id in seen:
            continue
        seen.add(b.id)
        t = types.get(b.id)
        where = b.addr_loc or b.loc
        if b.space == "ub" and status == Status.UB_MISALIGNED and b.addr % UB_ALIGN:
            notes.append((f"%{v.name} is placed at {b.addr:#x} here, not a multiple of {UB_ALIGN}", where))
        elif b.space == "ub" and status == Status.UB_OUT_OF_RANGE and t is not None \
                and b.addr + t.nbytes > config.ub_bytes:
            notes.append((f"%{v.name} is placed at {b.addr:#x} here: its {t.nbytes} bytes end at "
                          f"{b.addr + t.nbytes:#x}, past the {config.ub_bytes}-byte UB", where))
        elif b.space == "gm" and status in (Status.GM_MISALIGNED, Status.GM_OUT_OF_RANGE):
            notes.append((f"%{v.name} is placed at {b.addr:#x} here", where))
    return notes


def _shape_text(t):
    """``valid 3x8`` of a tile type, ``3x8`` of a memref type (as bound at run time)."""
    if isinstance(t, TileType):
        return f"valid {t.valid[0]}x{t.valid[1]}"
    return f"{t.shape[0]}x{t.shape[1]}"


def _suggest_ub(need, config, spec):
    """What configuration a program that needs ``need`` bytes of UB fits in, for a UB overflow message."""
    from rtl.config import PRESETS
    if need > 1 << 24:
        return f"; the program needs {need} bytes of UB, more than any configuration has (at most 16 MiB)"
    size = max(1 << (need - 1).bit_length(), 4 * config.ub_word_bytes)
    ways = []
    fits = sorted((c.ub_bytes, c.profile != config.profile, n) for n, c in PRESETS.items() if c.ub_bytes >= need)
    if fits:
        ways.append(f"--config {fits[0][2]} (a {fits[0][0]}-byte UB)")
    if isinstance(spec, str):
        parts = [x.strip() for x in spec.split(",") if x.strip() and x.split("=")[0].strip() != "ub_bytes"]
        ways.append(f"--config {','.join(parts + [f'ub_bytes={size}'])} with --sim none (the RTL is built for the "
                    f"presets only)")
    else:
        ways.append(f"a configuration with ub_bytes={size}")
    return f"; the program needs {need} bytes of UB: it fits with " + ", or ".join(ways)


# ------------------------------------------------------------------------------------------------ assembly

class Assembly:
    """A program placed for one configuration and checked where its shapes are static.

    ``ub``: {buffer id: UB address}; ``static``: per instruction the golden's (status, message) when its
    shapes are static, else None."""

    def __init__(self, program, config, spec=None):
        self.program, self.config, self.spec = program, config, spec
        self.ub = self._place_ub()
        self.static = self._check()

    def _intervals(self):
        p = self.program
        end = len(p.instrs)
        first, last = {}, {}
        for b in p.buffers:
            if b.arg:
                first[b.id] = last[b.id] = -1
        for ins in p.instrs:
            for v in ins.slots.values():
                i = v.buffer.id
                first.setdefault(i, ins.index)
                last[i] = ins.index
        for v in p.outputs:
            first.setdefault(v.buffer.id, end)
            last[v.buffer.id] = end
        for b in p.buffers:
            first.setdefault(b.id, end)
            last.setdefault(b.id, first[b.id])
        return first, last

    def _place_ub(self):
        # On a unit whose pipes run at once, a tile's space is not reused for ``gap`` instructions after its
        # last use: an instruction that reused it at once would wait for the last user (a write-after-read
        # or write-after-write hazard), where a double-buffered program means its buffers to be
        # independent. The largest gap up to Config.pipe_entries that fits the UB (instructions that far
        # apart are never in flight together), down to 0 (the tightest placement).
        gaps = list(range(self.config.pipe_entries, -1, -1)) if self.config.concurrent else [0]
        for gap in gaps:
            placed, overflow = self._first_fit(self.config.ub_bytes, gap=gap)
            if overflow is None:
                break
        if overflow is not None:
            whole, _ = self._first_fit(None)
            need = max((a + size for a, size, _, _ in whole.values()), default=0)
            message, loc = overflow
            raise AsmError(message + _suggest_ub(need, self.config, self.spec), loc)
        return {i: a for i, (a, _, _, _) in placed.items()}

    def _first_fit(self, capacity, gap=0):
        """({buffer id: (addr, size, first, last)}, None) of every UB buffer, or (partial, (message, loc)) at the
        first that does not fit in ``capacity`` bytes (None: no limit). First fit does not depend on the
        capacity, so the placement without a limit tells how much UB the program needs. ``gap``: a buffer's
        space stays unused for that many instructions after its last use."""
        p = self.program
        first, last = self._intervals()
        placed = {}        # id -> (addr, size, first, last)
        end = len(p.instrs)
        outs = {v.buffer.id for v in p.outputs}
        for b in p.buffers:
            if b.space == "ub" and b.addr is not None:
                size = b.type.nbytes
                if capacity is not None and (b.arg or b.id in outs) and b.addr + size > capacity:
                    role = "input" if b.arg else "output"
                    return placed, (f"UB overflow: {role} %{b.name} at {b.addr:#x} + {size} bytes = "
                                    f"{b.addr + size:#x} > UB size {capacity:#x}", b.addr_loc or b.loc)
                placed[b.id] = (b.addr, size, -1, end)
        auto = sorted((b for b in p.buffers if b.space == "ub" and b.addr is None), key=lambda b: (first[b.id], b.id))
        for b in auto:
            size, f, l = b.type.nbytes, first[b.id], last[b.id]
            live = sorted((a, s, n) for i, (a, s, ff, ll) in placed.items()
                          if ff <= l + gap and f <= ll + gap and s > 0 for n in [i])
            addr = 0
            for a, s, _ in live:
                if addr + size <= a:
                    break
                addr = max(addr, _align(a + s, UB_ALIGN))
            if capacity is not None and addr + size > capacity:
                names = ", ".join(f"%{p.buffers[n].name} [{a:#x}, +{s}]" for a, s, n in live)
                return placed, (f"UB overflow: %{b.name} ({b.type}, {size} bytes) does not fit in the "
                                f"{capacity}-byte UB of this configuration; live at that point: {names or 'none'}",
                                b.loc)
            placed[b.id] = (addr, size, f, l)
        return placed, None

    def _check(self):
        p = self.program
        types = resolve(p, {})
        gm = place_gm(p, types)
        out = []
        for ins in p.instrs:
            if any(types[v.buffer.id] is None or (v.buffer.space == "gm" and v.buffer.id not in gm)
                   for v in ins.slots.values()):
                out.append(None)
                continue
            cmd = command(ins, types, self.ub, gm)
            try:
                check_strict(cmd, self.config)
                got = (Status.OK, "")
            except IsaError as e:
                got = (e.status, e.message)
            want = ins.attrs.get("expect", Status.OK)
            if got[0] != want:
                notes = placement_notes(ins, got[0], self.config, types)
                if want == Status.OK:
                    raise AsmError(f"{ins.name}: {got[0].name}: {got[1]}", ins.loc, status=got[0], notes=notes)
                raise AsmError(f"{ins.name}: expected {want.name}, the checks answer {got[0].name}"
                               + (f": {got[1]}" if got[1] else ""), ins.loc, status=got[0], notes=notes)
            out.append(got)
        return out

    def bind(self, inputs):
        """An :class:`Image` for the input arrays ``inputs`` ({arg name: ndarray}); InputError when one is
        missing, unknown, or of the wrong shape or type."""
        from golden.machine import Machine
        p, cfg = self.program, self.config
        problems = []
        names = {a.name for a in p.args}
        missing = [a for a in p.args if a.name not in inputs]
        for a in missing:
            problems.append(f"missing input '{a.name}' ({_expect_shape(a.type)} of {a.type})")
        for k in inputs:
            if k not in names:
                problems.append(f"unknown input '{k}' (the program takes: {', '.join(sorted(names)) or 'nothing'})")
        bound, arrays = {}, {}
        for a in p.args:
            if a.name not in inputs:
                continue
            arr, t, msg = _bind_array(a, inputs[a.name])
            if msg:
                problems.append(msg)
                continue
            bound[a.buffer.id], arrays[a.buffer.id] = t, arr
        if problems:
            raise InputError("; ".join(problems))
        types = resolve(p, bound)
        gm = place_gm(p, types)
        commands, info = [], []
        for ins in p.instrs:
            unresolved = [v.name for v in ins.slots.values() if types[v.buffer.id] is None]
            if unresolved:
                raise AsmError(f"{ins.name}: cannot bind the shape of " + ", ".join(f"%{n}" for n in unresolved), ins.loc)
            commands.append(command(ins, types, self.ub, gm))
            shape, dt = describe(ins, types)
            at_run = [f"%{v.name} {_shape_text(types[v.buffer.id])}" for v in ins.slots.values()
                      if not v.buffer.type.static]
            notes = {st.name: [[m, l.to_json() if l else None] for m, l in placement_notes(ins, st, cfg, types)]
                     for st in (Status.UB_MISALIGNED, Status.UB_OUT_OF_RANGE, Status.GM_MISALIGNED,
                                Status.GM_OUT_OF_RANGE)}
            info.append({"line": ins.line, "op": ins.name, "shape": shape, "dtype": dt,
                         "expect": ins.attrs.get("expect", Status.OK).name,
                         "loc": ins.loc.to_json() if ins.loc else None, "bound": ", ".join(at_run),
                         "writes": ins.out and ins.out.buffer.id, "reads": [v.buffer.id for v in ins.operands.values()],
                         "notes": {k: v for k, v in notes.items() if v}})
        m = Machine(cfg)
        gm_init = []
        for a in p.args:
            b, t, arr = a.buffer, bound[a.buffer.id], arrays[a.buffer.id]
            if b.space == "ub":
                desc = tile_desc(self.ub[b.id], t.rows, t.cols, t.dtype, valid=t.valid, layout=t.layout)
                m.write_tile(desc, arr)
            else:
                size = DTYPE_BYTES[t.dtype]
                stride = t.stride() * size
                if gm[b.id] + t.nbytes() > 1 << cfg.gm_addr_bits:
                    raise AsmError(f"GM overflow: input %{b.name} at {gm[b.id]:#x} + {t.nbytes()} bytes = "
                                   f"{gm[b.id] + t.nbytes():#x} is outside the {cfg.gm_addr_bits}-bit GM address "
                                   f"space (gm_addr_bits)", b.addr_loc or b.loc)
                if t.row_stride is None or t.row_stride == t.cols:
                    gm_init.append((gm[b.id], np.ascontiguousarray(arr).tobytes()))
                else:
                    gm_init += [(gm[b.id] + r * stride, np.ascontiguousarray(arr[r]).tobytes()) for r in range(t.rows)]
        outputs = []
        for v in p.outputs:
            b, t = v.buffer, types[v.buffer.id]
            if t is None:
                raise AsmError(f"cannot bind the shape of output %{v.name}", v.loc)
            if b.space == "ub":
                outputs.append({"name": v.name, "space": "ub", "buffer": b.id,
                                "desc": tile_desc(self.ub[b.id], t.rows, t.cols, t.dtype, valid=t.valid,
                                                  layout=t.layout)})
            else:
                outputs.append({"name": v.name, "space": "gm", "buffer": b.id,
                                "desc": gm_region(gm[b.id], t.rows, t.cols, t.dtype,
                                                  row_stride=t.stride() * DTYPE_BYTES[t.dtype])})
        return Image(self.spec or "small", commands, info, bytes(m.ub), gm_init, outputs, file=p.file)


def _expect_shape(t):
    if isinstance(t, TileType):
        r, c = t.valid
        return f"shape ({'<=' + str(t.rows) if r is None else r}, {'<=' + str(t.cols) if c is None else c})"
    r, c = t.shape
    return f"shape ({'any' if r is None else r}, {'any' if c is None else c})"


def _bind_array(a, arr):
    """(array, concrete type, None) or (None, None, message)."""
    t = a.type
    want = DTYPE_NUMPY[t.dtype]
    arr = np.asarray(arr)
    if arr.dtype != want:
        ml = t.dtype in (DType.BF16, DType.FP8E4M3, DType.FP8E5M2)     # ml_dtypes: stored in .npz as bits
        if arr.dtype.itemsize == want.itemsize and (arr.dtype.kind == "V" or (ml and arr.dtype.kind == "u")):
            arr = arr.view(want)
        else:
            return None, None, (f"input '{a.name}' has dtype {arr.dtype}, the program wants {want} "
                                f"({element_name(t.dtype)})")
    if arr.ndim == 1 and isinstance(t, MemRefType) and t.rows == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2:
        return None, None, f"input '{a.name}' has shape {arr.shape}, the program wants a 2-D {_expect_shape(t)}"
    if isinstance(t, TileType):
        r, c = t.valid
        ok = (arr.shape[0] == r if r is not None else arr.shape[0] <= t.rows) and \
             (arr.shape[1] == c if c is not None else arr.shape[1] <= t.cols)
        if not ok:
            return None, None, f"input '{a.name}' has shape {arr.shape}, the program wants {_expect_shape(t)} ({t})"
        return arr, t.with_valid(arr.shape), None
    r, c = t.shape
    if (r is not None and arr.shape[0] != r) or (c is not None and arr.shape[1] != c):
        return None, None, f"input '{a.name}' has shape {arr.shape}, the program wants {_expect_shape(t)} ({t})"
    if t.row_stride is not None and t.row_stride < arr.shape[1]:
        return None, None, f"input '{a.name}': {arr.shape[1]} columns exceed the row stride {t.row_stride}"
    return arr, t.with_shape(arr.shape), None
