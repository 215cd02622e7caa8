"""The :class:`Builder`: a :class:`pto.program.Program` from Python; the parser drives the same methods
(operand and attribute checks with source locations for the error messages).

From Python, every method checks at the call and an error names the caller's line (``script.py:12:7``, the
first frame outside ``pto``): operands, types, attributes, and the golden's shape and type rules on an
instruction whose shapes are static (:meth:`Builder.op`). The op methods (``b.tpartadd``, ``b.mgather_row``,
...) are listed by :func:`method_table` (docs/pto-as.md, "Builder")."""

import difflib
import linecache
import os
import sys

import numpy as np

from rtl.isa import INSTRUCTIONS, OobMode, Opcode, Status

from pto.errors import AsmError, Loc
from pto.program import Buffer, Instr, Program, Value, lookup_op, mnemonic, signature
from pto.types import MemRefType, TileType

__all__ = ["Builder", "ATTRIBUTES", "method_name", "method_table"]

#: Assembly attribute name -> command field, per immediate of the instruction table.
ATTRIBUTES = {"oob": "oob", "nepi_log2": "num_elem_per_idx", "num_valid": "num_valid_indices"}


def _member(enum_type, v, loc, kind, choices):
    """``v`` (a member, a name, or a parsed ``(kind, name)`` token) as a member of ``enum_type``, else an
    :class:`AsmError` at ``loc``: ``unknown <kind> 'name' (<choices>)``."""
    if isinstance(v, enum_type):
        return v
    name = v[1] if isinstance(v, tuple) else str(v)
    try:
        return enum_type[name.upper()]
    except KeyError:
        raise AsmError(f"unknown {kind} {name!r} ({choices})", loc) from None


def _status(v, loc):
    return _member(Status, v, loc, "status", "a name of rtl.isa.Status, e.g. shape_mismatch")


def _oob(v, loc):
    return _member(OobMode, v, loc, "oob mode", "undefined, clamp, wrap, zero")


_HERE = os.path.dirname(os.path.abspath(__file__))


def caller_loc(depth=1):
    """The :class:`Loc` of the first Python frame outside ``pto`` (the user's call), with its line's text
    and the column of the call; None when there is none."""
    f = sys._getframe(depth)
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == _HERE:
        f = f.f_back
    if f is None:
        return None
    file, line = f.f_code.co_filename, f.f_lineno
    col = 1
    try:
        import inspect
        pos = inspect.getframeinfo(f, context=0).positions
        if pos is not None and pos.lineno == line and pos.col_offset is not None:
            col = pos.col_offset + 1
    except (AttributeError, ValueError, OSError):
        pass
    try:
        rel = os.path.relpath(file)
        file = rel if not rel.startswith("..") else file
    except ValueError:
        pass
    return Loc(file, line, col, linecache.getline(f.f_code.co_filename, line))


def method_name(op):
    """The Builder method of an opcode: its mnemonic with ``_`` for the dot (``mgather_row``)."""
    return mnemonic(op).replace(".", "_")


def _arg_name(role):
    return role.lower().replace(" ", "_")


def method_table():
    """Markdown table of the Builder's op methods, one per opcode, from the instruction table
    (``rtl.isa.INSTRUCTIONS``; ``python -m flow.docs builder``)."""
    rows = ["| method | op | operands, in order | result | attributes |", "|---|---|---|---|---|"]
    for op in Opcode:
        sig = signature(op)
        if sig.output is None:          # tsync
            rows.append(f"| `b.{method_name(op)}()` | `{mnemonic(op)}` | - | - | - |")
            continue
        args = [_arg_name(r) for _, r, _ in sig.inputs]
        okind = sig.output[2]
        call = f"b.{method_name(op)}({', '.join(args + [okind + '_type'])})"
        operands = ", ".join(f"`{a}` {kind}" for a, (_, _, kind) in zip(args, sig.inputs))
        attrs = ", ".join(f"`{ATTRIBUTES[i]}`" for i in INSTRUCTIONS[op].immediates) or "-"
        rows.append(f"| `{call}` | `{mnemonic(op)}` | {operands} | {okind} | {attrs} |")
    return "\n".join(rows)


_PERMISSIVE = None


def _permissive_config():
    """The configuration that accepts the most: A5 types and layouts, the largest UB, 64-bit GM addresses. An
    instruction it rejects (every tile at UB 0, every region at GM 0) is illegal in every configuration."""
    global _PERMISSIVE
    if _PERMISSIVE is None:
        from rtl.config import Config
        from rtl.isa import Profile
        _PERMISSIVE = Config(ub_bytes=1 << 24, gm_addr_bits=64, profile=Profile.A5)
    return _PERMISSIVE


#: The pipe event types of PTOAS's ``pto.record_event`` / ``pto.wait_event`` (``#pto.pipe_event_type<...>``).
SYNC_PIPES = ("TLOAD", "TSTORE_ACC", "TSTORE_VEC", "TMOV_M2L", "TMOV_M2S", "TMOV_M2B", "TMOV_M2V", "TMOV_V2M",
              "TMATMUL", "TVEC", "TVECWAIT_EVENT")
#: Their event ids (``#pto.event<EVENT_ID0>`` .. ``<EVENT_ID7>``: Ascend has 8 per pipe pair).
SYNC_EVENTS = tuple(f"EVENT_ID{k}" for k in range(8))


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

    Op methods are named by the op (``b.tpartadd``, ``b.mgather_row`` or ``b.op("mgather.row", ...)``; all of
    them: :func:`method_table`): the operands (Values) in assembly order, then the result type; keyword ``out=``
    writes an existing Value (DPS), ``name=`` names the result, other keywords are attributes (``oob``,
    ``num_elem_per_idx``, ``num_valid_indices``, ``expect``).

    ``check``: check each instruction at the call (the golden's rules, when its shapes are static and it has no
    ``expect``); the fuzzer turns it off, as it marks illegal instructions itself. ``locate``: locations of the
    Python caller for calls that give none (the parser gives its own)."""

    def __init__(self, name="main", *, config=None, file="<builder>", check=True, locate=True):
        self.name, self.file = name, file
        self.check, self.locate = check, locate
        self.attr_locs = {}
        self.attrs = {} if config is None else {"config": config}
        self.args, self.outputs, self.instrs, self.buffers = [], [], [], []
        self.scope = {}
        self.allocs = []
        self._auto = 0
        self._returned = False

    def _here(self, loc):
        return loc if loc is not None or not self.locate else caller_loc(2)

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
        loc = self._here(loc)
        if isinstance(type_, MemRefType) and type_.row_stride is not None and type_.cols is not None \
                and type_.row_stride < type_.cols:
            raise AsmError(f"%{name}: row stride {type_.row_stride} < {type_.cols} columns", loc)
        v = self._define(name, type_, loc, arg=True)
        self.args.append(v)
        return v

    def alloc_tile(self, name, type_, loc=None):
        """A tile buffer for DPS ``outs(...)`` (``%t = pto.alloc_tile : !pto.tile_buf<...>``)."""
        loc = self._here(loc)
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
        loc = self._here(loc)
        if not isinstance(value, Value):
            raise AsmError(f"tassign places a value, not {value!r}", loc)
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
        if attr.startswith("_"):
            raise AttributeError(attr)
        if lookup_op(attr) is None:
            names = [method_name(o) for o in Opcode]
            close = difflib.get_close_matches(attr, names, n=1)
            raise AttributeError(f"Builder has no op {attr!r}" + (f"; did you mean b.{close[0]}?" if close else "")
                                 + f" The op methods: {', '.join(names)} (or b.op(name, operands, type); "
                                 f"the other methods: arg, alloc_tile, tassign, ret, build)")

        def method(*args, out=None, name=None, loc=None, **attrs):
            ops = [a for a in args if isinstance(a, Value)]
            types = [a for a in args if isinstance(a, (TileType, MemRefType))]
            if len(ops) + len(types) != len(args) or len(types) > 1:
                raise AsmError(f"{attr}: operands (Values) then at most one result type, got "
                               f"{', '.join(type(a).__name__ for a in args)}", self._here(loc))
            return self.op(attr, ops, types[0] if types else None, out=out, name=name, attrs=attrs,
                           loc=self._here(loc))
        return method

    def op(self, opname, operands, result_type=None, *, out=None, name=None, name_loc=None, attrs=None, loc=None,
           form="ssa", operand_locs=None, types=None, types_locs=None, attr_locs=None, out_type_loc=None):
        """Append an instruction; returns the Value it writes.

        ``operands``: Values in assembly order. ``result_type``: the type of a new result (None with ``out=``).
        ``out``: an existing Value to write (DPS ``outs``; TSTORE into a memref). ``name`` (or
        ``result_name``): the new result's name. ``types``: the operand types as annotated (checked against
        the operands'). The ``*_loc(s)`` arguments are source locations for error messages."""
        result_name = name
        loc = self._here(loc)
        op = lookup_op(opname)
        if op is None:
            known = [mnemonic(o) for o in Opcode]
            bare = opname[4:] if opname.startswith("pto.") else opname
            close = difflib.get_close_matches(bare.replace("_", ".").lower(), known, n=1)
            raise AsmError(f"unknown op '{opname}'" + (f" (did you mean {close[0]}?)" if close else "")
                           + f"; known: {', '.join(known)}", loc)
        sig = signature(op)
        if sig.output is None:
            return self._barrier(op, operands, result_type, out, result_name, attrs, attr_locs, loc, form)
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
            self._check_now(op, operands, sig, out, a, loc)
            written = out
            if result_name is not None:           # "%m2 = tstore %t, %m": a new name for the same buffer
                written = self._define(result_name, out.type, name_loc or loc, buffer=out.buffer)
            inplace = True
        else:
            if result_type is None:
                raise AsmError(f"{mnemonic(op)} needs a result type", loc)
            if not isinstance(result_type, (TileType, MemRefType)):
                raise AsmError(f"{mnemonic(op)}: the result type must be a tile(...) or memref(...), not "
                               f"{result_type!r}", out_type_loc or loc)
            if result_type.kind != okind:
                raise AsmError(f"{mnemonic(op)} produces a !pto.{okind}, not {result_type}", out_type_loc or loc)
            if result_name is not None and result_name in self.scope:
                self._define(result_name, result_type, name_loc or loc)        # raises: a redefinition
            self._check_now(op, operands, sig, Value(result_name or "result", result_type,
                                                     Buffer(-1, "", result_type, "ub" if okind == "tile" else "gm")),
                            a, loc)
            written = self._define(result_name, result_type, name_loc or loc)
            inplace = False
        ins = Instr(op, {slot: v for (slot, _, _), v in zip(sig.inputs, operands)}, written, a, loc,
                    form, inplace, len(self.instrs), alias=out if inplace and result_name is not None else None)
        self.instrs.append(ins)
        return written

    def _barrier(self, op, operands, result_type, out, name, attrs, attr_locs, loc, form):
        """An instruction without operands and result (``tsync``): appended; returns None."""
        if operands or result_type is not None or out is not None or name is not None:
            raise AsmError(f"{mnemonic(op)} takes no operands and has no result (the barrier: it answers when "
                           f"every instruction before it has finished; the unit orders the pipes itself, so it "
                           f"needs no event tokens)", loc)
        a = self._attrs(op, attrs or {}, attr_locs or {}, loc)
        self.instrs.append(Instr(op, {}, None, a, loc, form, False, len(self.instrs)))
        return None

    def sync_event(self, kind, src, dst, event, loc=None):
        """``pto.record_event`` / ``pto.wait_event`` (``kind`` ``"record"`` / ``"wait"``) of a program written
        for Ascend, whose pipes need them to order each other: checked (``src``/``dst`` pipe names of
        :data:`SYNC_PIPES`, ``event`` one of ``EVENT_ID0`` .. ``EVENT_ID7``) and dropped. This unit orders every
        pair of instructions that share UB or GM bytes in hardware, so an event adds nothing; a program keeps
        its meaning without them (docs/pto-as.md, "Synchronization")."""
        loc = self._here(loc)
        if kind not in ("record", "wait"):
            raise AsmError(f"unknown event operation {kind!r} (record or wait)", loc)
        for what, name in (("source pipe", src), ("destination pipe", dst)):
            if name not in SYNC_PIPES:
                raise AsmError(f"pto.{kind}_event: {what} {name!r} is not a pipe event type; known: "
                               f"{', '.join(SYNC_PIPES)}", loc)
        if event not in SYNC_EVENTS:
            raise AsmError(f"pto.{kind}_event: event {event!r} is not one of {SYNC_EVENTS[0]} .. {SYNC_EVENTS[-1]}", loc)

    def _check_now(self, op, operands, sig, written, attrs, loc):
        """The golden's checks on the instruction at the call (``check``), when every operand's shape is static
        and it has no ``expect``: in the most permissive configuration, every tile at UB 0 and every region at
        GM 0, so what fails here fails in every configuration and placement (the placement and a
        configuration's own limits are checked by ``Program.assemble``). Catching a shape error here, at its
        own line, keeps it from showing up later as a type mismatch where its result is used."""
        if not self.check or "expect" in attrs:
            return
        values = [(slot, v) for (slot, _, _), v in zip(sig.inputs, operands)] + [(sig.output[0], written)]
        if not all(v.buffer.type.static for _, v in values):
            return
        from golden.check import check_strict
        from golden.errors import IsaError
        from pto.assembly import command
        ins = Instr(op, dict(values[:-1]), written, attrs, loc)
        types = {v.buffer.id: v.buffer.type for _, v in values}
        zero = {i: 0 for i in types}
        try:
            check_strict(command(ins, types, zero, zero), _permissive_config())
        except IsaError as e:
            raise AsmError(f"{mnemonic(op)}: {e.status.name}: {e.message}", loc, status=e.status) from None

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
        loc = self._here(loc)
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
                       dict(self.attrs), self.file, list(self.allocs), dict(self.attr_locs))
