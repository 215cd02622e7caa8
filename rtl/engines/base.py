"""The contract between the command front end and an engine: :class:`EngineSignature` (its ports) and
:class:`Engine` (the base class every engine derives from: what the front end, the checker, the golden
model's supported set, coverage and the bench need to know of it)."""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.checker.checker import Checker
from rtl.isa import Command, Opcode, Status
from rtl.lib.axi import Axi4Signature
from rtl.ub.buffer import UbReadSignature, UbWriteSignature

__all__ = ["EngineSignature", "Engine", "GO_DELAY", "START_REGISTER_CYCLES", "tile_lines", "words_of"]

#: The register that raises ``start`` in the front end: an engine starts in the cycle after the edge that
#: accepts its command (the serial unit, a speculative start) or takes it from its pipe's queue (the
#: concurrent unit). The response's ``queued`` counts it (``rtl.isa.Response``).
START_REGISTER_CYCLES = 1
#: The register that raises ``go`` in the front end (it reaches every engine from a flip-flop).
GO_REGISTER_CYCLES = 1
#: Cycles from an engine's ``start`` to its ``go`` in the unit, for a command the checker passes: the
#: checker's pipeline, then ``go``'s register. Part of the engine contract (an engine's first UB write
#: or AXI request waits for ``go``), so an engine may state how its pipeline relates to it (a
#: ``require``); the front end (``rtl.top.VectorUnit.GO_DELAY``) raises ``go`` after exactly this.
GO_DELAY = Checker.LATENCY + GO_REGISTER_CYCLES


class EngineSignature(wiring.Signature):
    """What every engine exposes, as seen from the engine.

    ``cmd`` is the accepted instruction, held stable from ``start`` until ``done`` (or, with overlap, until
    ``release``); between instructions it may change in any cycle (the concurrent unit's front end lets
    it follow its queue's head), so an engine reads it only from a ``start`` on. ``start`` is a
    one-cycle pulse; the engine answers with a one-cycle ``done`` pulse and ``status`` valid in that
    cycle. ``ub_rd``/``ub_wr`` and ``axi`` reach the shared resources, which the front end hands to one
    engine at a time, from the ``start`` cycle on (so a UB read may be issued with ``start``); an
    engine's ``ub_wr.valid`` must be low while it is idle.

    UB writes wait for the port: ``ub_wr`` has a ``valid`` / ``ready`` handshake
    (:class:`rtl.ub.buffer.UbWriteSignature` with ``handshake=True``): a word is written only at an edge
    where both are high, ``valid`` does not depend on ``ready``, and a refused word stays offered
    unchanged. ``done`` comes in the cycle the instruction's last word is taken. Pipelines that cannot
    stop between their stages hold their words in an :class:`rtl.lib.output_queue.OutputQueue` and issue
    only with its ``room``. The unit's front end holds ``ready`` high today (one instruction at a time);
    a port shared by pipes that run at once will not, and the engine bench refuses words at random
    (``EngineBench(write_stalls=True)``) to hold every engine to this.

    Speculative start: ``start`` comes while the checker is still deciding (it needs
    ``Checker.LATENCY`` cycles), so that the engine's first UB reads and address arithmetic overlap the
    check. ``go`` rises when the checker has passed the command and stays high until ``done``. Before
    ``go`` an engine may read the UB and compute, but must not write the UB or raise ``arvalid`` /
    ``awvalid`` / ``wvalid`` (the engine bench in tests/rtl checks this on every command). If the
    checker rejects the command, the front end resets the engine instead of raising ``go``: each engine
    runs in a clock domain of its own (``DomainRenamer``: the unit's clock, a reset that is one register
    of the unit's reset or the abort, distributed over a global network on an ECP5), so the whole engine
    returns to idle. An engine may also finish (``done``) before
    ``go``, e.g. on an empty region, provided it wrote nothing.

    Overlap (``overlap=True``, an engine with :attr:`Engine.OVERLAP` built for the concurrent unit): the
    engine also drives ``release``, high while it has finished with the held ``cmd`` of every instruction
    started so far and takes a ``start`` (low in a ``start`` cycle); once high, it stays high until the next
    ``start`` (the concurrent unit sees it through a register, a cycle late: ``rtl.concurrent``; the engine
    bench's ``execute_overlapped`` checks it). From then on the front end may hold
    the next command (one of :meth:`Engine.overlap_opcodes`) and ``start`` it while the earlier instructions
    are still in flight; their ``done``
    pulses come in the order they were started, one per instruction, and ``go`` stays high until the last.
    """

    def __init__(self, config, *, ub_read_ports=0, ub_write=False, axi=False, overlap=False):
        members = {"cmd": In(Command), "start": In(1), "go": In(1), "done": Out(1), "status": Out(Status)}
        if overlap:
            members["release"] = Out(1)
        if ub_read_ports:
            members["ub_rd"] = Out(UbReadSignature(config)).array(ub_read_ports)
        if ub_write:
            members["ub_wr"] = Out(UbWriteSignature(config, handshake=True))
        if axi:
            members["axi"] = Out(Axi4Signature(addr_width=config.gm_addr_bits,
                                               data_width=config.axi_data_bits,
                                               id_width=config.axi_id_bits))
        super().__init__(members)


class Engine(wiring.Component):
    """The base of every engine.

    An engine is a ``wiring.Component`` whose signature is an :class:`EngineSignature`; it runs the
    instructions in :attr:`opcodes`, one at a time, from ``start`` to ``done``. ``rtl.top.ENGINES``
    registers the classes; ``rtl.top.engines_for(config)`` picks those a unit of ``config`` has
    (``Config.engines``, :meth:`available`); the front end dispatches their opcodes, gives each a private
    copy of the command and a clock domain of its own, and shares the UB ports and the AXI master among
    them; the checker builds each engine's own rules (:meth:`add_checks`); the opcodes of an engine a
    unit lacks answer ``UNSUPPORTED`` there, in the golden model (``rtl.top.supported_opcodes``) and in
    coverage.

    A subclass defines (checked when the class is created, and again by ``rtl.top.check_engines``):

    ``name``
        Its name in ``Config.engines`` (``"transfer"``, ...): lower case, unique among the engines.
    ``opcodes``
        The opcodes it runs: members of :class:`rtl.isa.Opcode`, no opcode in two engines.
    ``UB_READ_PORTS``, ``UB_WRITE``, ``AXI``
        What it needs of the shared resources: the number of UB read ports (at least; a subclass may
        use more where the configuration has them, :meth:`read_ports`), the UB write port, the AXI
        master. :meth:`__init__` builds the signature from them.
    :meth:`available`
        Whether a unit of ``config`` can have it (default: the configuration has the read ports).
    :meth:`add_checks`
        Its rules beyond the instruction table's common checks (default: none).
    :meth:`bound`
        The cycle model's lower bound: the cycles its narrowest resource needs for a command (the bench
        reports measured cycles against it).
    :meth:`cycles`
        The cycle model: cycles from ``start`` to ``done`` of a command when ``go`` comes ``go_delay``
        cycles after ``start`` (0 in an engine's block test; ``VectorUnit.GO_DELAY`` in the unit), or
        ``None`` where they depend on something outside the engine (global memory's latency).

    The cycle model takes the command as :func:`rtl.isa.decode` gives it (a nested dict).
    """

    #: The engine's name in ``Config.engines``.
    name = None
    #: The opcodes the engine runs.
    opcodes = ()
    #: UB read ports the engine needs (at least).
    UB_READ_PORTS = 0
    #: The engine writes the UB.
    UB_WRITE = False
    #: The engine uses the AXI4 master (global memory).
    AXI = False
    #: The engine can be built with ``overlap=True`` (:class:`EngineSignature`'s ``release``): it takes its
    #: next instruction while the previous one is still in its pipeline (issue #33, item 5).
    OVERLAP = False
    #: The opcodes the engine takes while an earlier instruction is still in it (``release``): ``None`` for
    #: all of :attr:`opcodes`. The front end starts any other opcode only once the engine is done with
    #: every earlier one.
    OVERLAP_OPCODES = None

    @classmethod
    def overlap_opcodes(cls):
        """The opcodes the engine takes while an earlier instruction is still in it (:attr:`OVERLAP_OPCODES`)."""
        return tuple(cls.opcodes if cls.OVERLAP_OPCODES is None else cls.OVERLAP_OPCODES)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("abstract", False):
            return
        problems = []
        if not isinstance(cls.name, str) or not cls.name or cls.name != cls.name.lower():
            problems.append(f"name must be a lower-case string (got {cls.name!r})")
        if not cls.opcodes or not all(isinstance(op, Opcode) for op in cls.opcodes):
            problems.append(f"opcodes must be a non-empty tuple of rtl.isa.Opcode (got {cls.opcodes!r})")
        elif len(set(cls.opcodes)) != len(cls.opcodes):
            problems.append("opcodes lists an opcode twice")
        elif not set(cls.overlap_opcodes()) <= set(cls.opcodes):
            problems.append("OVERLAP_OPCODES must be some of opcodes")
        if not (cls.UB_READ_PORTS or cls.UB_WRITE or cls.AXI):
            problems.append("an engine needs at least one of UB_READ_PORTS, UB_WRITE, AXI")
        if cls.bound.__func__ is Engine.bound.__func__:
            problems.append("bound(config, cmd) is not defined (the cycle model's lower bound)")
        if problems:
            raise TypeError(f"engine {cls.__qualname__}: " + "; ".join(problems))

    @classmethod
    def read_ports(cls, config):
        """The UB read ports the engine has in a unit of ``config`` (default: :attr:`UB_READ_PORTS`)."""
        return cls.UB_READ_PORTS

    @classmethod
    def available(cls, config):
        """True when a unit of ``config`` can have this engine (default: it has the read ports)."""
        return config.ub_read_ports >= cls.UB_READ_PORTS

    @staticmethod
    def add_checks(m, config, cmd, fail):
        """Append, per status, the conditions under which a command of this engine breaks one of its own
        rules (``fail[status].append(condition)``), gated by its own opcodes. ``cmd`` is the checker's
        held copy; build with :mod:`rtl.checker.stages` (see docs/architecture.md, "Adding an engine").
        Default: no rules beyond the instruction table's."""

    @classmethod
    def bound(cls, config, cmd):
        """The cycles the engine's narrowest resource needs for ``cmd`` (decoded), the bench's bound."""
        raise NotImplementedError

    @classmethod
    def cycles(cls, config, cmd, *, go_delay=0):
        """Cycles from ``start`` to ``done`` for ``cmd`` (decoded) when ``go`` comes ``go_delay`` cycles
        after ``start``, or ``None`` when they are not the engine's alone to decide (default)."""
        return None

    def __init__(self, config, *, overlap=False):
        if overlap and not self.OVERLAP:
            raise ValueError(f"engine {type(self).__qualname__}: overlap=True needs OVERLAP (it cannot take an "
                             f"instruction before the previous one is done)")
        self._config, self._overlap = config, overlap
        super().__init__(EngineSignature(config, ub_read_ports=self.read_ports(config), ub_write=self.UB_WRITE,
                                         axi=self.AXI, overlap=overlap))


# ---- the cycle model's arithmetic on decoded commands (plain Python) ------------------------------------

def tile_lines(tile):
    """The lines of a decoded tile's valid region in storage order, as ``(ub_address, bytes)``: a row of a
    row-major tile, a column of a column-major one (docs/semantics.md)."""
    from rtl.isa import DTYPE_BYTES, DType, Layout
    size = DTYPE_BYTES[DType(tile["dtype"])]
    col = Layout(tile["layout"]) == Layout.COL_MAJOR
    lines, length = ((tile["valid_cols"], tile["valid_rows"]) if col else (tile["valid_rows"], tile["valid_cols"]))
    pitch = (tile["rows"] if col else tile["cols"]) * size
    if not lines or not length:
        return []
    return [(tile["base"] + k * pitch, length * size) for k in range(lines)]


def words_of(address, nbytes, word_bytes):
    """Words of ``word_bytes`` that ``nbytes`` bytes from ``address`` touch (0 for none)."""
    return 0 if nbytes == 0 else (address + nbytes - 1) // word_bytes - address // word_bytes + 1
