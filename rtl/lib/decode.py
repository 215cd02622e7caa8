"""Opcode decodes derived from the encoding table instead of written as bit positions."""

from rtl.isa import Opcode

__all__ = ["opcode_bit"]


def opcode_bit(among, chosen):
    """The lowest bit position ``b`` such that, among the opcodes ``among`` (the only ones an engine is
    started for), bit ``b`` of the code is 1 exactly for the opcodes in ``chosen``. An engine tests
    ``cmd.opcode.as_value()[b]`` instead of a full compare (one LUT input instead of eight), and the
    position follows the table in ``rtl.isa`` instead of being written down. Raises ``ValueError`` when
    no single bit tells them apart (then compare the opcode)."""
    among, chosen = [Opcode(op) for op in among], {Opcode(op) for op in chosen}
    if not chosen <= set(among):
        raise ValueError(f"opcode_bit: {sorted(o.name for o in chosen - set(among))} not among the opcodes")
    for b in range(Opcode.as_shape().width):
        if all(((op.value >> b) & 1) == (op in chosen) for op in among):
            return b
    raise ValueError(f"opcode_bit: no bit of the codes of {[o.name for o in among]} is 1 for exactly "
                     f"{sorted(o.name for o in chosen)}")
