"""Markdown tables of the instruction encoding, generated from ``rtl.isa`` / ``rtl.status``.

``python -m sim.isa_doc`` prints them; ``docs/architecture.md`` embeds them and a test keeps the two equal.
"""

from amaranth.lib import data

from rtl.isa import Command, DTYPE_BYTES, DType, GmDesc, Layout, Opcode, OobMode, Response, TileDesc
from rtl.status import Status

__all__ = ["tables"]


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


def tables():
    return "\n\n".join([
        _layout_table("Command", Command), _layout_table("TileDesc", TileDesc),
        _layout_table("GmDesc", GmDesc), _layout_table("Response", Response),
        _enum_table("Opcode", Opcode), _enum_table("DType", DType, DTYPE_BYTES),
        _enum_table("Layout", Layout), _enum_table("OobMode", OobMode), _enum_table("Status", Status),
    ])


if __name__ == "__main__":
    print(tables())
