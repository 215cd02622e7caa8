"""Exceptions a testbench raises when the RTL disagrees with what it expects.

All are :class:`AssertionError` subclasses, so pytest and cocotb report them as test *failures* (not
errors) exactly as a plain ``assert`` would; a test that wants to tell them apart can catch the class
and read the attributes instead of parsing the message.

- :class:`HangError`: no response within the time limit (``command``, ``cycles``).
- :class:`UnitLacksEngine`: an instruction answered UNSUPPORTED because the simulated unit was built
  without its engine (``Config.engines``; ``command``, ``engine``).
- :class:`StatusMismatch`: the response's status is not the expected one (``command``, ``expected``,
  ``actual``).
- :class:`UbMismatch`, :class:`GmMismatch`: memory contents differ (``address`` of the first differing
  byte, ``expected`` and ``actual`` byte there, ``count`` of differing bytes).

Messages name status members (``GM_MISALIGNED``, not ``11``) and print addresses in hex;
:func:`format_command` renders a command dict the same way.
"""

import enum

import numpy as np

__all__ = ["HangError", "UnitLacksEngine", "StatusMismatch", "MemoryMismatch", "UbMismatch", "GmMismatch",
           "format_command", "status_name"]


def status_name(status):
    """``Status`` member name, or the raw code in hex for a code that is not a member."""
    from rtl.isa import Status
    if isinstance(status, Status):
        return status.name
    try:
        return Status(int(status)).name
    except ValueError:
        return f"0x{int(status):02x}"


def _code(value, enum_cls=None):
    if isinstance(value, enum.Enum):
        return value.name
    if enum_cls is not None:
        try:
            return enum_cls(int(value)).name
        except ValueError:
            pass
    return f"0x{int(value):x}"


def _tile(t):
    from rtl.isa import DType, Layout
    t = dict(t)
    text = f"base=0x{int(t.pop('base', 0)):x} {t.pop('rows', 0)}x{t.pop('cols', 0)}"
    vr, vc = t.pop("valid_rows", None), t.pop("valid_cols", None)
    if vr is not None or vc is not None:
        text += f" valid {vr}x{vc}"
    if "dtype" in t:
        text += f" {_code(t.pop('dtype'), DType)}"
    if "layout" in t:
        layout = t.pop("layout")
        if (layout.value if isinstance(layout, enum.Enum) else int(layout)) != Layout.ROW_MAJOR.value:
            text += f" {_code(layout, Layout)}"
    text += "".join(f" {k}={v}" for k, v in t.items())
    return "{" + text + "}"


def _gm(g):
    from rtl.isa import DType
    g = dict(g)
    text = f"base=0x{int(g.pop('base', 0)):x} {g.pop('rows', 0)}x{g.pop('cols', 0)}"
    if "row_stride" in g:
        text += f" stride {g.pop('row_stride')}"
    if "dtype" in g:
        text += f" {_code(g.pop('dtype'), DType)}"
    text += "".join(f" {k}={v}" for k, v in g.items())
    return "{" + text + "}"


def format_command(cmd):
    """A command dict (for :data:`rtl.isa.Command`) as one readable line: opcode and enum names,
    UB and GM bases in hex, e.g. ``TLOAD tag=3 dst={base=0x100 4x8 valid 3x5 INT16} gm={...}``."""
    from rtl.isa import OobMode, Opcode
    if not isinstance(cmd, dict):
        return repr(cmd)
    cmd = dict(cmd)
    opcode = _code(cmd.pop("opcode", 0), Opcode)
    parts = [opcode if not opcode.startswith("0x") else f"opcode {opcode}"]
    for key in ("tag", "oob", "nepi_log2", "num_valid"):
        if key in cmd:
            value = cmd.pop(key)
            parts.append(f"{key}={_code(value, OobMode) if key == 'oob' else value}")
    for slot in ("dst", "src0", "src1", "src2"):
        if cmd.get(slot):
            parts.append(f"{slot}={_tile(cmd.pop(slot))}")
        cmd.pop(slot, None)
    if cmd.get("gm"):
        parts.append(f"gm={_gm(cmd.pop('gm'))}")
    cmd.pop("gm", None)
    parts += [f"{k}={v}" for k, v in cmd.items()]
    return " ".join(parts)


class HangError(AssertionError):
    """The unit did not answer ``command`` within ``cycles`` clock cycles."""

    def __init__(self, command, cycles):
        self.command, self.cycles = command, cycles
        super().__init__(f"no response within {cycles} cycles: the unit hangs on {format_command(command)}")


class UnitLacksEngine(AssertionError):
    """``command`` answered UNSUPPORTED because the simulated unit was built without ``engine`` (its
    ``Config.engines`` leaves it out): the test uses an instruction its unit does not have. Add the engine
    to the test module's ``UNIT_ENGINES`` (or the regression entry's ``engines``)."""

    def __init__(self, command, engine, engines):
        self.command, self.engine, self.engines = command, engine, engines
        super().__init__(f"the simulated unit has no {engine} engine (Config.engines={engines}), needed by "
                         f"{format_command(command)}: add {engine!r} to the test module's UNIT_ENGINES")


class StatusMismatch(AssertionError):
    """The RTL answered ``actual`` for ``command``, ``expected`` was wanted. ``reference`` names who
    expected it (``"golden"``: the golden model; ``None``: the test itself)."""

    def __init__(self, command, expected, actual, *, reference="golden"):
        self.command, self.expected, self.actual, self.reference = command, expected, actual, reference
        want = f"{reference} says {status_name(expected)}" if reference else f"expected {status_name(expected)}"
        super().__init__(f"status {status_name(actual)} from the RTL, {want} for {format_command(command)}")


class MemoryMismatch(AssertionError):
    """Memory differs from the expected contents: ``count`` bytes, the first at ``address`` (absolute),
    where the RTL holds ``actual`` and ``expected`` was wanted (byte values). ``what`` qualifies the
    bytes compared (e.g. ``"defined"``), ``context`` is put in front of the message."""

    space = "memory"

    def __init__(self, address, expected, actual, count, *, what="", context=""):
        self.address, self.expected, self.actual, self.count = address, expected, actual, count
        self.what, self.context = what, context
        qualified = f"{what} bytes" if what else "bytes"
        text = (f"{self.space} differs from golden at {count} {qualified}, first at 0x{address:x}: "
                f"rtl {actual:#04x} golden {expected:#04x}")
        super().__init__(f"{context}: {text}" if context else text)

    @classmethod
    def compare(cls, address, expected, actual, *, care=None, **kwargs):
        """The mismatch between two equally long byte strings (or uint8 arrays) that start at
        ``address``, or ``None`` when they agree. ``care``: a boolean mask, only its true bytes count."""
        want = np.frombuffer(bytes(expected), np.uint8) if not isinstance(expected, np.ndarray) else expected
        got = np.frombuffer(bytes(actual), np.uint8) if not isinstance(actual, np.ndarray) else actual
        if len(want) != len(got):
            raise ValueError(f"compare: {len(want)} expected bytes, {len(got)} actual")
        differ = want != got
        if care is not None:
            differ &= np.asarray(care, bool)
        bad = np.flatnonzero(differ)
        if not len(bad):
            return None
        first = int(bad[0])
        return cls(address + first, int(want[first]), int(got[first]), len(bad), **kwargs)


class UbMismatch(MemoryMismatch):
    """The unified buffer differs (``address``: UB byte address)."""
    space = "UB"


class GmMismatch(MemoryMismatch):
    """Global memory differs (``address``: GM byte address)."""
    space = "GM"
