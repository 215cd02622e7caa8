"""The program object of the PTO assembler, its builder, placement, static checks and binding.

A :class:`Program` is what both the parser (:func:`sim.pto.parser.parse`) and the Python :class:`Builder`
produce: a function signature (inputs: GM memrefs or UB tiles; outputs), a list of :class:`Instr`, and the
buffers (UB tiles, GM regions) its values live in. ``Program.assemble(config)`` places every UB tile
(explicit ``pto.tassign`` addresses, the rest by a first-fit allocator over the tiles' live ranges, 32-byte
aligned) and checks every instruction whose shapes are static with ``golden.check``;
``Assembly.bind(inputs)`` binds the ``?`` shapes from the input arrays, places GM and gives an :class:`Image`:
the concrete commands (``rtl.isa.Command`` dicts), the initial UB and GM contents and where the outputs are.

Operand order of every instruction (the slots and roles come from ``rtl.instructions.INSTRUCTIONS``): a GM
operand the instruction reads comes first (TLOAD's source, MGATHER's table), then the tile sources in slot
order, except an accumulator input (TGEMV_ACC's ``C_in``) which comes first, as in the seed
(``tgemv.acc %acc0, %a, %b``). The written slot is the result (TSTORE: the GM memref).
"""

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from golden.check import check_strict
from golden.errors import IsaError
from rtl.config import preset
from rtl.instructions import INSTRUCTIONS, main_slot
from rtl.isa import DTYPE_BYTES, DTYPE_NUMPY, UB_ALIGN, DType, Layout, OobMode, Opcode
from rtl.status import Status
from sim.driver import gm_region, tile as tile_desc

from .errors import AsmError, InputError, Loc
from .types import MemRefType, TileType, element_name

__all__ = ["Value", "Buffer", "Instr", "Program", "Builder", "Assembly", "Image", "Signature", "signature",
           "mnemonic", "lookup_op", "config_from_spec", "GM_BASE", "GM_ALIGN", "ATTRIBUTES"]

#: Automatically placed GM regions start here, each aligned to GM_ALIGN bytes.
GM_BASE = 0x0010_0000
GM_ALIGN = 4096

#: Assembly attribute name -> command field, per immediate of the instruction table.
ATTRIBUTES = {"oob": "oob", "nepi_log2": "num_elem_per_idx", "num_valid": "num_valid_indices"}

_DOTTED = {Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM, Opcode.TGEMV_ACC, Opcode.TGEMV_BIAS}


def mnemonic(op):
    """The canonical op name: the opcode name lower-cased, with the seeds' dot for a mode suffix
    (``mgather.row``, ``mgather.elem``, ``tgemv.acc``, ``tgemv.bias``)."""
    name = Opcode(op).name.lower()
    if op in _DOTTED:
        head, _, tail = name.rpartition("_")
        return f"{head}.{tail}"
    return name


def lookup_op(name):
    """Opcode of an op name: optional ``pto.`` prefix, ``.`` and ``_`` interchangeable, any case; None if
    unknown."""
    n = name[4:] if name.startswith("pto.") else name
    key = n.replace(".", "_").upper()
    return Opcode.__members__.get(key)


def config_from_spec(spec):
    """A Config from ``NAME`` or ``NAME,field=value,...`` (e.g. ``default,ub_bytes=0x200000``)."""
    if not isinstance(spec, str):
        return spec
    from rtl.config import parse_overrides
    name, *rest = [s.strip() for s in spec.split(",") if s.strip()]
    return parse_overrides(name, rest)[0]


@dataclass(frozen=True)
class Signature:
    """Assembly operands of one opcode: ``inputs`` = ((slot, role, kind), ...) in assembly order, ``output`` =
    (slot, role, kind) of what it writes; kind ``tile`` or ``memref``."""
    opcode: Opcode
    inputs: tuple
    output: tuple

    def roles(self):
        return ", ".join(r for _, r, _ in self.inputs)


def signature(op):
    ins = INSTRUCTIONS[Opcode(op)]
    dest = ins.destination
    srcs = [s for s in ins.slots if not s.writes]
    first = [s for s in srcs if s.kind == "init" and s.role == "C_in"]
    inputs = [("gm", ins.gm, "memref")] if ins.gm and dest is not None else []
    inputs += [(s.name, s.role, "tile") for s in first + [s for s in srcs if s not in first]]
    output = (dest.name, dest.role, "tile") if dest is not None else ("gm", ins.gm, "memref")
    return Signature(ins.opcode, tuple(inputs), output)


@dataclass(eq=False)
class Buffer:
    """Storage: a UB tile (``space`` ``ub``) or a GM region (``gm``); ``addr``: explicit address or None."""
    id: int
    name: str
    type: object
    space: str
    arg: bool = False
    addr: int = None
    addr_loc: Loc = None
    loc: Loc = None


@dataclass(eq=False)
class Value:
    """An SSA name (``%name`` without the ``%``) bound to a buffer, with its type."""
    name: str
    type: object
    buffer: Buffer
    loc: Loc = None

    def __repr__(self):
        return f"%{self.name}: {self.type}"


@dataclass(eq=False)
class Instr:
    """One instruction: ``operands`` {slot: Value} (the signature's inputs), ``out`` the Value written (a new
    one, or an existing buffer's in DPS form), ``attrs`` {``oob``, ``nepi_log2``, ``num_valid``, ``expect``}."""
    opcode: Opcode
    operands: dict
    out: Value
    attrs: dict
    loc: Loc = None
    form: str = "ssa"                    # "sync" (no pto. prefix), "ssa", "dps"
    inplace: bool = False                # writes an existing buffer (DPS outs, TSTORE into a memref)
    index: int = 0
    alias: Value = None                  # in place under a new name ("%m2 = tstore %t, %m"): the Value written

    @property
    def name(self):
        return mnemonic(self.opcode)

    @property
    def slots(self):
        """{slot: Value} of every operand slot including the written one."""
        out = dict(self.operands)
        out[signature(self.opcode).output[0]] = self.out
        return out

    @property
    def line(self):
        return self.loc.line if self.loc is not None and self.loc.line else None


@dataclass(eq=False)
class Program:
    name: str
    args: list
    outputs: list
    instrs: list
    buffers: list
    attrs: dict = field(default_factory=dict)
    file: str = "<builder>"
    allocs: list = field(default_factory=list)      # [(instruction index, Value)] of pto.alloc_tile

    @property
    def config(self):
        return self.attrs.get("config")

    def assemble(self, config=None):
        """Place and check for ``config`` (a Config, a preset spec, or None: the program's ``config``
        attribute, else ``small``); raises :class:`AsmError`."""
        spec = config if config is not None else (self.config or "small")
        return Assembly(self, config_from_spec(spec), spec if isinstance(spec, str) else None)

    def text(self):
        """The program in canonical PTO-AS (see :func:`sim.pto.printer.print_program`)."""
        from .printer import print_program
        return print_program(self)

    def ordered_buffers(self):
        """The buffers, the function's inputs first (the order GM placement follows, whatever the order in
        which a builder declared its arguments)."""
        return sorted(self.buffers, key=lambda b: (not b.arg, b.id))

    def signature_key(self):
        """A structural summary (for comparing a parsed and a built program)."""
        def v(x):
            return (x.name, str(x.type))
        return (self.name, tuple(v(a) for a in self.args), tuple(v(o) for o in self.outputs),
                tuple((i.opcode, tuple((s, v(x)) for s, x in i.operands.items()), v(i.out), i.inplace,
                       tuple(sorted((k, str(a)) for k, a in i.attrs.items()))) for i in self.instrs),
                tuple((b.name, str(b.type), b.space, b.arg, b.addr) for b in self.ordered_buffers()),
                tuple(sorted(self.attrs.items())))


# ------------------------------------------------------------------------------------------------ builder

def _status(v, loc):
    if isinstance(v, Status):
        return v
    name = v[1] if isinstance(v, tuple) else str(v)
    try:
        return Status[name.upper()]
    except KeyError:
        raise AsmError(f"unknown status {name!r} (a name of rtl.status.Status, e.g. shape_mismatch)", loc) from None


def _oob(v, loc):
    if isinstance(v, OobMode):
        return v
    name = v[1] if isinstance(v, tuple) else str(v)
    try:
        return OobMode[name.upper()]
    except KeyError:
        raise AsmError(f"unknown oob mode {name!r} (undefined, clamp, wrap, zero)", loc) from None


def _int(v, what, loc):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise AsmError(f"{what} must be an integer, not {v!r}", loc)
    return int(v)


class Builder:
    """Builds a :class:`Program` in Python; the parser drives the same methods.

    ::

        b = Builder("gather_scale")
        table = b.arg("table", memref(1024, 64, "f32"))
        idx = b.arg("idx", tile(16, 1, "i32"))
        rows = b.mgather_row(table, idx, tile(16, 64, "f32"), oob="clamp", name="rows")
        b.tassign(idx, 0x0)
        b.ret(rows)
        program = b.build()

    Op methods are named by the op (``b.tpartadd``, ``b.mgather_row`` or ``b.op("mgather.row", ...)``): the
    operands (Values) in assembly order, then the result type; keyword ``out=`` writes an existing Value
    (DPS), ``name=`` names the result, other keywords are attributes (``oob``, ``num_elem_per_idx``,
    ``num_valid_indices``, ``expect``)."""

    def __init__(self, name="main", *, config=None, file="<builder>"):
        self.name, self.file = name, file
        self.attrs = {} if config is None else {"config": config}
        self.args, self.outputs, self.instrs, self.buffers = [], [], [], []
        self.scope = {}
        self.allocs = []
        self._auto = 0
        self._returned = False

    # ---- values
    def _new_buffer(self, name, type_, arg, loc):
        space = "ub" if isinstance(type_, TileType) else "gm"
        b = Buffer(len(self.buffers), name, type_, space, arg=arg, loc=loc)
        self.buffers.append(b)
        return b

    def _define(self, name, type_, loc, buffer=None, arg=False):
        if name is None:
            name = f"t{self._auto}"
            while name in self.scope:
                self._auto += 1
                name = f"t{self._auto}"
            self._auto += 1
        if name in self.scope:
            raise AsmError(f"redefinition of %{name} (first defined at {self.scope[name].loc or 'an earlier op'})", loc)
        if not isinstance(type_, (TileType, MemRefType)):
            raise AsmError(f"%{name} needs a !pto.tile, !pto.tile_buf or !pto.memref type, not {type_!r}", loc)
        v = Value(name, type_, buffer or self._new_buffer(name, type_, arg, loc), loc)
        self.scope[name] = v
        return v

    def arg(self, name, type_, loc=None):
        """A function input: a GM memref (its data is placed in GM) or a UB tile (its data loaded into the UB)."""
        if isinstance(type_, MemRefType) and type_.row_stride is not None and type_.cols is not None \
                and type_.row_stride < type_.cols:
            raise AsmError(f"%{name}: row stride {type_.row_stride} < {type_.cols} columns", loc)
        v = self._define(name, type_, loc, arg=True)
        self.args.append(v)
        return v

    def alloc_tile(self, name, type_, loc=None):
        """A tile buffer for DPS ``outs(...)`` (``%t = pto.alloc_tile : !pto.tile_buf<...>``)."""
        if not isinstance(type_, TileType):
            raise AsmError("pto.alloc_tile needs a !pto.tile or !pto.tile_buf type", loc)
        v = self._define(name, type_, loc)
        self.allocs.append((len(self.instrs), v))
        return v

    def value(self, name, loc=None):
        """The Value named ``name`` (for the parser); AsmError if undefined."""
        if name not in self.scope:
            raise AsmError(f"use of undefined value %{name}", loc)
        return self.scope[name]

    def tassign(self, value, addr, loc=None, space=None):
        """Place ``value``'s buffer at ``addr``: ``@tile(addr)`` for a UB tile, ``@gm(addr)`` for a memref."""
        b = value.buffer
        want = "ub" if b.space == "ub" else "gm"
        if space is not None and space != want:
            raise AsmError(f"%{value.name} is a {'tile' if want == 'ub' else 'memref'}: place it with "
                           f"@{'tile' if want == 'ub' else 'gm'}(...)", loc)
        if b.addr is not None:
            raise AsmError(f"%{value.name} is already placed at {b.addr:#x} ({b.addr_loc or 'earlier'})", loc)
        addr = _int(addr, "an address", loc)
        if addr < 0:
            raise AsmError("an address is not negative", loc)
        b.addr, b.addr_loc = addr, loc

    # ---- instructions
    def __getattr__(self, attr):
        if attr.startswith("_") or lookup_op(attr) is None:
            raise AttributeError(attr)

        def method(*args, out=None, name=None, loc=None, **attrs):
            ops = [a for a in args if isinstance(a, Value)]
            types = [a for a in args if isinstance(a, (TileType, MemRefType))]
            if len(ops) + len(types) != len(args) or len(types) > 1:
                raise TypeError(f"{attr}: operands (Values) then at most one result type")
            return self.op(attr, ops, types[0] if types else None, out=out, name=name, attrs=attrs, loc=loc)
        return method

    def op(self, opname, operands, result_type=None, *, out=None, name=None, name_loc=None, attrs=None, loc=None,
           form="ssa", operand_locs=None, types=None, types_locs=None, attr_locs=None, out_type_loc=None):
        """Append an instruction; returns the Value it writes.

        ``operands``: Values in assembly order. ``result_type``: the type of a new result (None with ``out=``).
        ``out``: an existing Value to write (DPS ``outs``; TSTORE into a memref). ``name`` (or
        ``result_name``): the new result's name. ``types``: the operand types as annotated (checked against
        the operands'). The ``*_loc(s)`` arguments are source locations for error messages."""
        result_name = name
        op = lookup_op(opname)
        if op is None:
            known = ", ".join(mnemonic(o) for o in Opcode)
            raise AsmError(f"unknown op '{opname}' (known: {known})", loc)
        sig = signature(op)
        operands = list(operands)
        operand_locs = list(operand_locs or [loc] * len(operands))
        attr_locs = attr_locs or {}
        n = len(sig.inputs)
        # TSTORE: the GM memref may be given as a second operand (SSA) instead of out=
        if sig.output[2] == "memref" and out is None and len(operands) == n + 1:
            out = operands.pop()
            operand_locs.pop()
            if types and len(types) == n + 1:
                out_ann = types[-1]
                types = types[:-1]
                if not out.type.same(out_ann):
                    raise AsmError(f"type mismatch: %{out.name} is {out.type}, annotated {out_ann}",
                                   (types_locs or [loc] * (n + 1))[-1])
        if len(operands) != n:
            extra = " (and optionally the destination memref)" if sig.output[2] == "memref" else ""
            raise AsmError(f"{mnemonic(op)} takes {n} operand{'s' if n != 1 else ''} ({sig.roles()}){extra}, "
                           f"got {len(operands)}", loc)
        for (slot, role, kind), v, vloc in zip(sig.inputs, operands, operand_locs):
            if not isinstance(v, Value):
                raise AsmError(f"operand {role} of {mnemonic(op)} must be a value", vloc)
            if v.type.kind != kind:
                raise AsmError(f"{mnemonic(op)}: operand {role} (%{v.name}) must be a !pto.{kind}, it is {v.type}",
                               vloc)
        if types is not None:
            if len(types) == 1 and n > 1:           # "tpartadd %a, %b : !pto.tile<...> -> ...": one type for all
                types = list(types) * n
                types_locs = list(types_locs or [loc]) * n
            if len(types) != n:
                raise AsmError(f"{mnemonic(op)}: {len(types)} operand types for {n} operands",
                               (types_locs or [loc])[0])
            for v, t, tloc in zip(operands, types, types_locs or [loc] * n):
                if not v.type.same(t):
                    raise AsmError(f"type mismatch: %{v.name} is {v.type}, annotated {t}", tloc)
        a = self._attrs(op, attrs or {}, attr_locs, loc)
        okind = sig.output[2]
        if out is not None:
            if not isinstance(out, Value):
                raise AsmError("outs must be a value", loc)
            if out.type.kind != okind:
                raise AsmError(f"{mnemonic(op)} writes a !pto.{okind}; %{out.name} is {out.type}", out_type_loc or loc)
            if result_type is not None and not out.type.same(result_type):
                raise AsmError(f"type mismatch: %{out.name} is {out.type}, annotated {result_type}", out_type_loc or loc)
            written = out
            if result_name is not None:           # "%m2 = tstore %t, %m": a new name for the same buffer
                written = self._define(result_name, out.type, name_loc or loc, buffer=out.buffer)
            inplace = True
        else:
            if result_type is None:
                raise AsmError(f"{mnemonic(op)} needs a result type", loc)
            if result_type.kind != okind:
                raise AsmError(f"{mnemonic(op)} produces a !pto.{okind}, not {result_type}", out_type_loc or loc)
            written = self._define(result_name, result_type, name_loc or loc)
            inplace = False
        ins = Instr(op, {slot: v for (slot, _, _), v in zip(sig.inputs, operands)}, written, a, loc,
                    form, inplace, len(self.instrs), alias=out if inplace and result_name is not None else None)
        self.instrs.append(ins)
        return written

    def _attrs(self, op, attrs, attr_locs, loc):
        ins = INSTRUCTIONS[op]
        allowed = {ATTRIBUTES[i]: i for i in ins.immediates}
        out = {}
        for k, v in attrs.items():
            aloc = attr_locs.get(k, loc)
            if k == "expect":
                out["expect"] = _status(v, aloc)
            elif k not in allowed:
                ok = ", ".join(list(allowed) + ["expect"])
                raise AsmError(f"{mnemonic(op)} has no attribute {k!r} (it takes: {ok})", aloc)
            elif k == "oob":
                out["oob"] = _oob(v, aloc)
            elif k == "num_elem_per_idx":
                n = _int(v, k, aloc)
                if n < 1 or n & (n - 1) or n > 128:
                    raise AsmError(f"num_elem_per_idx {n} is not a power of two in 1..128 (the hardware takes 1..32; "
                                   f"64 and 128 are encodable and answer PARAM_INVALID)", aloc)
                out["nepi_log2"] = n.bit_length() - 1
            elif k == "num_valid_indices":
                n = _int(v, k, aloc)
                if not 1 <= n < 1 << 13:
                    raise AsmError(f"num_valid_indices {n} not in 1..8191 (omit it for all indices; 13-bit field)", aloc)
                out["num_valid"] = n
        return out

    def ret(self, *values, loc=None):
        """The outputs (``return %a, %b``)."""
        if self._returned:
            raise AsmError("a second return", loc)
        names = set()
        for v in values:
            if not isinstance(v, Value):
                raise AsmError("return takes values", loc)
            if v.name in names:
                raise AsmError(f"%{v.name} returned twice", loc)
            names.add(v.name)
        self.outputs = list(values)
        self._returned = True

    def build(self):
        """The :class:`Program`."""
        return Program(self.name, list(self.args), list(self.outputs), list(self.instrs), list(self.buffers),
                       dict(self.attrs), self.file, list(self.allocs))


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
        if ins.inplace:
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
    v = ins.slots.get(slot)
    t = types.get(v.buffer.id) if v is not None else None
    if t is None:
        return "?", "-"
    shape = f"{t.valid[0]}x{t.valid[1]}/{t.rows}x{t.cols}" + (" col" if t.layout == Layout.COL_MAJOR else "")
    return shape, element_name(t.dtype)


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
        p, cfg = self.program, self.config
        first, last = self._intervals()
        placed = {}        # id -> (addr, size, first, last)
        end = len(p.instrs)
        outs = {v.buffer.id for v in p.outputs}
        for b in p.buffers:
            if b.space == "ub" and b.addr is not None:
                size = b.type.nbytes
                if (b.arg or b.id in outs) and b.addr + size > cfg.ub_bytes:
                    role = "input" if b.arg else "output"
                    raise AsmError(f"UB overflow: {role} %{b.name} at {b.addr:#x} + {size} bytes = "
                                   f"{b.addr + size:#x} > UB size {cfg.ub_bytes:#x}", b.addr_loc or b.loc)
                placed[b.id] = (b.addr, size, -1, end)
        auto = sorted((b for b in p.buffers if b.space == "ub" and b.addr is None), key=lambda b: (first[b.id], b.id))
        for b in auto:
            size, f, l = b.type.nbytes, first[b.id], last[b.id]
            live = sorted((a, s, n) for i, (a, s, ff, ll) in placed.items()
                          if ff <= l and f <= ll and s > 0 for n in [i])
            addr = 0
            for a, s, _ in live:
                if addr + size <= a:
                    break
                addr = max(addr, _align(a + s, UB_ALIGN))
            if addr + size > cfg.ub_bytes:
                names = ", ".join(f"%{p.buffers[n].name} [{a:#x}, +{s}]" for a, s, n in live)
                raise AsmError(f"UB overflow: %{b.name} ({b.type}, {size} bytes) does not fit in the "
                               f"{cfg.ub_bytes}-byte UB of this configuration; live at that point: {names or 'none'}",
                               b.loc)
            placed[b.id] = (addr, size, f, l)
        return {i: a for i, (a, _, _, _) in placed.items()}

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
                if want == Status.OK:
                    raise AsmError(f"{ins.name}: {got[0].name}: {got[1]}", ins.loc, status=got[0])
                raise AsmError(f"{ins.name}: expected {want.name}, the checks answer {got[0].name}"
                               + (f": {got[1]}" if got[1] else ""), ins.loc, status=got[0])
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
            info.append({"line": ins.line, "op": ins.name, "shape": shape, "dtype": dt,
                         "expect": ins.attrs.get("expect", Status.OK).name})
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
                outputs.append({"name": v.name, "space": "ub",
                                "desc": tile_desc(self.ub[b.id], t.rows, t.cols, t.dtype, valid=t.valid,
                                                  layout=t.layout)})
            else:
                outputs.append({"name": v.name, "space": "gm",
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


# ------------------------------------------------------------------------------------------------ image

_ENUMS = {"opcode": Opcode, "oob": OobMode, "dtype": DType, "layout": Layout}


def cmd_to_json(cmd):
    out = {}
    for k, v in cmd.items():
        if isinstance(v, dict):
            out[k] = cmd_to_json(v)
        elif k in _ENUMS and isinstance(v, _ENUMS[k]):
            out[k] = v.name
        else:
            out[k] = int(v)
    return out


def cmd_from_json(d):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out[k] = cmd_from_json(v)
        elif k in _ENUMS and isinstance(v, str):
            out[k] = _ENUMS[k][v]
        else:
            out[k] = v
    return out


@dataclass
class Image:
    """Everything a run needs, concrete: ``commands`` (Command dicts), ``info`` (per command: line, op, shape,
    dtype, expect), ``ub`` (the initial UB, whole), ``gm`` ([(address, bytes)]), ``outputs`` ([{name, space
    ``ub``/``gm``, desc}]). Saved as a directory (``image.json``, ``ub.bin``, ``gm<i>.bin``) for the
    testbench (``TILEVEC_PROGRAM``)."""
    config: str
    commands: list
    info: list
    ub: bytes
    gm: list
    outputs: list
    file: str = ""

    def save(self, directory):
        import json
        import pathlib
        d = pathlib.Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / "ub.bin").write_bytes(self.ub)
        gm = []
        for i, (addr, data) in enumerate(self.gm):
            (d / f"gm{i}.bin").write_bytes(data)
            gm.append({"addr": addr, "file": f"gm{i}.bin"})
        (d / "image.json").write_text(json.dumps({
            "config": self.config, "file": self.file, "commands": [cmd_to_json(c) for c in self.commands],
            "info": self.info, "gm": gm,
            "outputs": [{**o, "desc": cmd_to_json(o["desc"])} for o in self.outputs]}, indent=1))
        return d

    @classmethod
    def load(cls, directory):
        import json
        import pathlib
        d = pathlib.Path(directory)
        j = json.loads((d / "image.json").read_text())
        return cls(j["config"], [cmd_from_json(c) for c in j["commands"]], j["info"], (d / "ub.bin").read_bytes(),
                   [(g["addr"], (d / g["file"]).read_bytes()) for g in j["gm"]],
                   [{**o, "desc": cmd_from_json(o["desc"])} for o in j["outputs"]], j.get("file", ""))


def output_extent(out):
    """(address, length) of the bytes holding an output: the tile's static extent, or the GM region."""
    d = out["desc"]
    size = DTYPE_BYTES[DType(d["dtype"])]
    if out["space"] == "ub":
        return d["base"], d["rows"] * d["cols"] * size
    if d["rows"] == 0 or d["cols"] == 0:
        return d["base"], 0
    return d["base"], (d["rows"] - 1) * d["row_stride"] + d["cols"] * size


def decode_output(out, raw):
    """The output array from the bytes of :func:`output_extent`."""
    d = out["desc"]
    dt = DTYPE_NUMPY[DType(d["dtype"])]
    size = dt.itemsize
    if out["space"] == "ub":
        flat = np.frombuffer(bytes(raw), dt)
        if d["layout"] == Layout.COL_MAJOR:
            full = flat.reshape(d["cols"], d["rows"]).T
        else:
            full = flat.reshape(d["rows"], d["cols"])
        return np.ascontiguousarray(full[:d["valid_rows"], :d["valid_cols"]])
    rows = [np.frombuffer(bytes(raw[r * d["row_stride"]:r * d["row_stride"] + d["cols"] * size]), dt)
            for r in range(d["rows"])]
    return np.stack(rows) if rows else np.zeros((0, d["cols"]), dt)
