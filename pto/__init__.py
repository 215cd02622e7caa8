"""The PTO-AS assembler (docs/pto-as.md): the seeds' PTO assembly turned into the unit's commands.

* :func:`parse` / :func:`parse_file`: PTO-AS text -> :class:`Program` (synchronous, AS Level 1 SSA and
  Level 2 DPS forms of every instruction);
* :class:`Builder`: the same Program from Python; ``tile(...)`` / ``memref(...)`` make types;
* ``Program.assemble(config)`` -> :class:`Assembly` (UB placement, static checks with ``golden.check``);
  ``Assembly.bind(inputs)`` -> :class:`Image` (concrete commands and memory contents);
* running an image on the golden model and / or the RTL is the simulation's (:mod:`sim.programs.run`,
  ``python -m sim run``); this package imports only ``rtl.isa``, ``rtl.config`` and ``golden``.
"""

from pto.errors import AsmError, InputError, Loc
from pto.types import MemRefType, TileType, memref, tile
from pto.program import Instr, Program, Value, config_from_spec, mnemonic, signature
from pto.builder import Builder
from pto.assembly import Assembly
from pto.image import Image
from pto.parser import parse, parse_file

__all__ = ["AsmError", "InputError", "Loc", "MemRefType", "TileType", "memref", "tile", "Assembly", "Builder",
           "Image", "Instr", "Program", "Value", "config_from_spec", "mnemonic", "signature", "parse",
           "parse_file"]
