"""The instruction set, defined once: the bottom of the tree.

* :mod:`rtl.isa.encoding`: opcodes, data types, layouts, the command / response / descriptor layouts and
  ``encode`` / ``decode``;
* :mod:`rtl.isa.status`: the status codes;
* :mod:`rtl.isa.instructions`: the instruction table (operand slots, types, rules, limits, statuses).

Everything above imports its codes from here: the RTL, the golden model (``golden/``), the assembler
(``pto/``) and the tools. This package imports nothing of the project and only ``amaranth.lib.data`` /
``amaranth.lib.enum`` of Amaranth (for the bit layouts), so a model or a tool can use it without the
hardware. Every name is re-exported here: ``from rtl.isa import Opcode, Status, INSTRUCTIONS``.
"""

from rtl.isa.status import *            # noqa: F401,F403 (re-exported)
from rtl.isa.encoding import *          # noqa: F401,F403
from rtl.isa.instructions import *      # noqa: F401,F403
from rtl.isa import encoding as _encoding, instructions as _instructions, status as _status

__all__ = [*_status.__all__, *_encoding.__all__, *_instructions.__all__]
