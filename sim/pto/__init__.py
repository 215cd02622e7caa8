"""PTO assembler and runner for the tile vector unit (issue #13; docs/pto-as.md).

* :func:`parse` / :func:`parse_file`: PTO-AS text -> :class:`Program` (synchronous, AS Level 1 SSA and
  Level 2 DPS forms of every instruction);
* :class:`Builder`: the same Program from Python; ``tile(...)`` / ``memref(...)`` make types;
* ``Program.assemble(config)`` -> :class:`Assembly` (UB placement, static checks with ``golden.check``);
  ``Assembly.bind(inputs)`` -> :class:`Image` (concrete commands and memory contents);
* :mod:`sim.pto.run`: run an image on the golden model and / or the RTL (``python -m sim run``).
"""

from .errors import AsmError, InputError, Loc
from .types import MemRefType, TileType, memref, tile
from .program import Instr, Program, Value, config_from_spec, mnemonic, signature
from .builder import Builder
from .assembly import Assembly
from .image import Image
from .parser import parse, parse_file

__all__ = ["AsmError", "InputError", "Loc", "MemRefType", "TileType", "memref", "tile", "Assembly", "Builder",
           "Image", "Instr", "Program", "Value", "config_from_spec", "mnemonic", "signature", "parse",
           "parse_file"]
