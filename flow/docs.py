"""Markdown tables generated from ``rtl/``: the instruction encoding (``rtl.isa``), the
operand slots and the map from instruction to files (``rtl.isa.INSTRUCTIONS``, ``rtl.top.ENGINES``), and the PTO
Builder's op methods (``pto.builder``, from the instruction table).

``python -m flow.docs [encoding|slots|map|builder]`` prints them; ``docs/architecture.md``,
``docs/semantics.md`` and ``docs/pto-as.md`` embed them between ``<!-- BEGIN GENERATED: python -m flow.docs NAME -->`` and
``<!-- END GENERATED -->`` markers, and a test keeps the documents equal to the code
(``python -m flow.docs --write`` rewrites them).
"""

import pathlib
import sys

from amaranth.lib import data

from rtl.isa import (Command, DType, DTYPE_BYTES, FRONT_END_OPCODES, GmDesc, INSTRUCTIONS, Layout, OobMode, Opcode, Profile,
    Response, Status, TILE_SLOTS, TileDesc)

__all__ = ["tables", "slot_table", "instruction_map", "builder_table", "GENERATED", "render", "write_docs"]

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _layout_table(title, layout):
    rows = [f"**{title}** ({layout.size} bits)", "", "| field | bits | width | type |", "|---|---|---|---|"]
    for name, field in layout:
        shape = field.shape
        kind = shape.__name__ if isinstance(shape, type) else (
            "struct" if isinstance(shape, data.Layout) else "unsigned")
        lo, w = field.offset, field.width
        rows.append(f"| `{name}` | {lo + w - 1}:{lo} | {w} | {kind} |")
    return "\n".join(rows)


def _enum_table(title, enum, extra=None):
    rows = [f"**{title}**", "", "| name | code |" + (" size |" if extra else ""),
            "|---|---|" + ("---|" if extra else "")]
    for m in enum:
        rows.append(f"| `{m.name}` | 0x{m.value:02x} |" + (f" {extra[m]} |" if extra else ""))
    return "\n".join(rows)


def _types(ins):
    if not ins.slots and not ins.gm:
        return "-"
    if ins.type_rule == "gemv":
        return "GEMV triples (" + ", ".join(f"{p.value}: {len(ins.triples[p])}" for p in Profile) + ")"
    parts = []
    for p in Profile:
        t = ins.types[p]
        parts.append(f"{p.value}: " + ("all" if t == frozenset(DType) else
                                       ", ".join(x.name.lower() for x in sorted(t, key=lambda d: d.value))
                                       or "none"))
    return "; ".join(parts)


def slot_table():
    """Operand slots, roles, GM use, immediates and engine of every opcode (``rtl.isa.instructions``)."""
    from rtl.top import ENGINES
    engine = {op: e.__name__ for e in ENGINES for op in e.opcodes}
    rows = ["| opcode | `dst` | `src0` | `src1` | `src2` | `gm` | immediates | types | rules | engine in this build |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for op, ins in INSTRUCTIONS.items():
        cells = []
        for name in TILE_SLOTS:
            s = ins.slot(name)
            if s is None:
                cells.append("")
                continue
            text = s.role + (" (index)" if s.kind == "index" else "")
            rm = s.row_major
            if rm and rm != frozenset(Profile):
                text += ", row-major in " + "/".join(p.value for p in sorted(rm, key=lambda p: p.value))
            elif rm:
                text += ", row-major"
            cells.append(text)
        imm = ", ".join(f"`{i}`" for i in ins.immediates)
        where = ('`' + engine[op] + '`' if op in engine else
                 "the front end (`VectorUnit`)" if op in FRONT_END_OPCODES else 'none yet (UNSUPPORTED)')
        rows.append(f"| {op.name} | " + " | ".join(cells) + f" | {ins.gm} | {imm} | {_types(ins)} | {ins.note} | "
                    f"{where} |")
    return "\n".join(rows)


def _exists(path):
    return f"`{path}`" if (ROOT / path).exists() else "none yet"


def instruction_map():
    """Where each instruction lives: its pipe (``rtl.isa.Pipe``), RTL component, golden function, cocotb
    testbench, block test."""
    import inspect
    from rtl.top import ENGINES
    engine = {op: e for e in ENGINES for op in e.opcodes}
    rows = ["| instruction | pipe | RTL component | golden function | testbench | block test | seed |",
            "|---|---|---|---|---|---|---|"]
    for op, ins in INSTRUCTIONS.items():
        e = engine.get(op)
        if op in FRONT_END_OPCODES:
            rtl = "the front end (`VectorUnit`, `rtl/top.py`)"
        elif e is None:
            rtl = "none yet"
        else:
            package = pathlib.Path(inspect.getfile(e)).parent.relative_to(ROOT)
            rtl = f"`{e.__name__}` (`{package.as_posix()}/`)"
            part = package / f"{ins.family}.py"          # the family's own part of a shared engine (MGATHER)
            if (ROOT / part).exists():
                rtl += f", parts in `{part.as_posix()}`"
        pipe = ins.pipe.value if ins.pipe else "none (waits for all)"
        block = "- (no engine)" if op in FRONT_END_OPCODES else _exists(f'tests/rtl/test_rtl_{ins.family}.py')
        rows.append(f"| {op.name} | {pipe} | {rtl} | `golden.ops.{ins.golden}` | "
                    f"{_exists(f'cocotb_tests/test_{ins.family}.py')} | {block} | "
                    f"{ins.seed or '-'} |")
    return "\n".join(rows)


def tables():
    return "\n\n".join([
        _layout_table("Command", Command), _layout_table("TileDesc", TileDesc),
        _layout_table("GmDesc", GmDesc), _layout_table("Response", Response),
        _enum_table("Opcode", Opcode), _enum_table("DType", DType, DTYPE_BYTES),
        _enum_table("Layout", Layout), _enum_table("OobMode", OobMode), _enum_table("Status", Status),
    ])


def builder_table():
    """The PTO Builder's op methods, one per opcode (``pto.builder.method_table``)."""
    from pto.builder import method_table
    return method_table()


#: Generated sections: name -> (function, documents that embed it).
GENERATED = {
    "encoding": (tables, ("docs/architecture.md",)),
    "slots": (slot_table, ("docs/architecture.md", "docs/semantics.md")),
    "map": (instruction_map, ("docs/architecture.md",)),
    "builder": (builder_table, ("docs/pto-as.md",)),
}


def _markers(name):
    return f"<!-- BEGIN GENERATED: python -m flow.docs {name} -->", "<!-- END GENERATED -->"


def render(text, name):
    """``text`` with the generated section ``name`` replaced by the current table."""
    begin, end = _markers(name)
    i = text.index(begin) + len(begin)
    j = text.index(end, i)
    return text[:i] + "\n" + GENERATED[name][0]().strip() + "\n" + text[j:]


def write_docs():
    """Rewrite every generated section in the documents; returns the paths changed."""
    changed = []
    for name, (_, docs) in GENERATED.items():
        for doc in docs:
            path = ROOT / doc
            old = path.read_text()
            new = render(old, name)
            if new != old:
                path.write_text(new)
                changed.append(doc)
    return changed


if __name__ == "__main__":
    arg = sys.argv[1] if len(sys.argv) > 1 else "encoding"
    if arg == "--write":
        print("\n".join(write_docs()) or "docs up to date")
    else:
        print(GENERATED[arg][0]())
