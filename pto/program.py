"""The program object of the PTO assembler: :class:`Program`, its :class:`Instr` / :class:`Value` /
:class:`Buffer`, and the operand signature of every opcode.

A :class:`Program` is what both the parser (:func:`pto.parser.parse`) and the Python
:class:`pto.builder.Builder` produce: a function signature (inputs: GM memrefs or UB tiles; outputs), a list
of :class:`Instr`, and the buffers (UB tiles, GM regions) its values live in. ``Program.assemble(config)`` gives
a :class:`pto.assembly.Assembly` (placement and static checks), whose ``bind(inputs)`` gives a
:class:`pto.image.Image`.

Operand order of every instruction (the slots and roles come from ``rtl.isa.INSTRUCTIONS``): a GM
operand the instruction reads comes first (TLOAD's source, MGATHER's table), then the tile sources in slot
order, except an accumulator input (TGEMV_ACC's ``C_in``) which comes first, as in the seed
(``tgemv.acc %acc0, %a, %b``). The written slot is the result (TSTORE: the GM memref).
"""

from dataclasses import dataclass, field

from rtl.isa import INSTRUCTIONS, Opcode

from pto.errors import Loc

__all__ = ["Value", "Buffer", "Instr", "Program", "Signature", "signature", "mnemonic", "lookup_op",
           "config_from_spec"]

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


def config_from_spec(spec, source=None):
    """A Config from ``NAME`` or ``NAME,field=value,...`` (e.g. ``default,ub_bytes=0x200000``); a
    :class:`UsageError` naming ``source`` (default ``configuration 'SPEC'``; the command line's
    ``--config 'SPEC'``) and what is wrong when it names no configuration."""
    if not isinstance(spec, str):
        return spec
    from rtl.config import parse_overrides
    from pto.errors import UsageError
    source = source or f"configuration {spec!r}"
    name, *rest = [s.strip() for s in spec.split(",") if s.strip()] or [""]
    try:
        return parse_overrides(name, rest, source=source)[0]
    except ValueError as e:
        raise UsageError(str(e)) from None


@dataclass(frozen=True)
class Signature:
    """Assembly operands of one opcode: ``inputs`` = ((slot, role, kind), ...) in assembly order, ``output`` =
    (slot, role, kind) of what it writes, kind ``tile`` or ``memref``; ``None`` for an instruction without
    operands (``tsync``: no operand, no result)."""
    opcode: Opcode
    inputs: tuple
    output: tuple

    def roles(self):
        return ", ".join(r for _, r, _ in self.inputs)


def signature(op):
    ins = INSTRUCTIONS[Opcode(op)]
    if not ins.slots and not ins.gm:
        return Signature(ins.opcode, (), None)
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
    one, or an existing buffer's in DPS form; ``None`` for ``tsync``), ``attrs`` {``oob``, ``nepi_log2``,
    ``num_valid``, ``expect``}."""
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
        if self.out is not None:
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
    attr_locs: dict = field(default_factory=dict)   # {attribute: Loc} of the function's attributes (config)

    def __eq__(self, other):
        """Two programs are equal when they are the same program (:meth:`signature_key`: names, types,
        instructions, attributes, placements), however they were written (text or Builder, SSA or DPS form)
        and wherever (locations are not compared)."""
        if not isinstance(other, Program):
            return NotImplemented
        return self.signature_key() == other.signature_key()

    __hash__ = None                                 # mutable, compared by value

    @property
    def config(self):
        return self.attrs.get("config")

    def assemble(self, config=None):
        """Place and check for ``config`` (a Config, a preset spec, or None: the program's ``config``
        attribute, else ``small``); raises :class:`AsmError` (a configuration attribute that names no
        configuration: at the attribute), ``UsageError`` for a ``config`` spec that names none."""
        from pto.assembly import Assembly
        from pto.errors import AsmError, UsageError
        if config is not None:
            spec = config
            cfg = config_from_spec(spec)
        else:
            spec = self.config or "small"
            try:
                cfg = config_from_spec(spec, source=f"config = {spec!r}")
            except UsageError as e:
                raise AsmError(str(e), self.attr_locs.get("config")) from None
        return Assembly(self, cfg, spec if isinstance(spec, str) else None)

    def text(self):
        """The program in canonical PTO-AS (see :func:`pto.printer.print_program`)."""
        from pto.printer import print_program
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
                tuple((i.opcode, tuple((s, v(x)) for s, x in i.operands.items()), i.out and v(i.out), i.inplace,
                       tuple(sorted((k, str(a)) for k, a in i.attrs.items()))) for i in self.instrs),
                tuple((b.name, str(b.type), b.space, b.arg, b.addr) for b in self.ordered_buffers()),
                tuple(sorted(self.attrs.items())))
