"""Hardware configuration: one frozen dataclass, validated on construction, with named presets."""

from dataclasses import dataclass, fields, replace

from rtl.isa import GEMV_PARTIAL_SUMS, UB_ALIGN, Profile

__all__ = ["Config", "PRESETS", "preset", "parse_overrides", "CONCURRENT_READ_PORTS"]

#: UB read ports a concurrent unit (``Config.concurrent``) needs: GM -> UB's (MGATHER's index reads; the UB
#: debug port while the unit is empty), UB -> GM's (TSTORE's reader), and two that vector and matrix share
#: (``rtl.concurrent`` wires them).
CONCURRENT_READ_PORTS = 4


@dataclass(frozen=True)
class Config:
    """Every parameter of a ``VectorUnit``. Construct through :func:`preset` and ``dataclasses.replace``.

    All sizes are in bytes unless the name says bits.
    """

    #: Width of one unified-buffer word, i.e. of one UB read or write. A power of two, >= 16.
    ub_word_bytes: int = 32
    #: Capacity of the unified buffer. A power of two, a multiple of ``ub_word_bytes``.
    ub_bytes: int = 64 * 1024
    #: Read ports on the UB (one write port, always). Engines that read two operands per cycle need 2.
    ub_read_ports: int = 2
    #: Width of the AXI4 address buses (``araddr``/``awaddr``). GM regions beyond it are rejected.
    gm_addr_bits: int = 32
    #: Width of the AXI4 data buses. Must equal ``8 * ub_word_bytes`` in this version (one beat, one UB word).
    axi_data_bits: int = 256
    #: Width of ``arid``/``awid``/``rid``/``bid``. The unit issues ID 0 only (responses in order).
    axi_id_bits: int = 4
    #: Read bursts in flight at once (AR accepted, last R beat not yet received). Covers GM latency:
    #: MGATHER element mode needs more than the latency in cycles to sustain one element per cycle.
    max_outstanding_reads: int = 64
    #: Write bursts in flight at once (AW sent, B response not yet received).
    max_outstanding_writes: int = 16
    #: Longest burst the unit issues, in beats (AXI4 INCR allows 256). Bursts never cross 4 KiB either.
    max_burst_beats: int = 256
    #: Depth of the read-data buffer between the R channel and the UB, in beats. It bounds how many
    #: beats may be requested and not yet written, so ``rready`` never has to drop for UB pressure.
    read_buffer_beats: int = 64
    #: Interleaved partial sums per output column in the GEMV MAC array (a power of two): product k goes
    #: to partial sum ``k mod gemv_partial_sums``. Fixes the float accumulation order; see docs/semantics.md.
    #: It is also the length of the MAC array's accumulation loop: a lane adds one product per cycle only
    #: while ``gemv_partial_sums`` >= the fp32 adder's latency (``rtl.engines.gemv.mac.MacArray.ADD_DEPTH`` = 6), so the
    #: reference value 8 keeps full rate with an adder pipelined for 100 MHz; 1, 2 and 4 are exact but
    #: slower (``P / ADD_DEPTH`` of the rate).
    gemv_partial_sums: int = GEMV_PARTIAL_SUMS
    #: MAC lanes of the GEMV array (a power of two, 1 .. ``ub_word_bytes``): it computes
    #: ``min(ub_word_bytes / size(B), gemv_lanes)`` products per cycle, one output column each. Each lane
    #: is an fp32 multiplier and two fp32 adders (~2k LUT4 and 5 MULT18X18D on ECP5, see
    #: docs/architecture.md "GEMV"). The reference configuration has 1: the 64 KiB unit with 4 lanes
    #: (and 8-byte elementwise lanes) needs 108% of the ECP5-85's logic; ``small`` has 4, ``fullrate`` 32.
    gemv_lanes: int = 1
    #: Width of the elementwise engine's arithmetic lanes in bytes (a power of two, 4 .. ``ub_word_bytes``):
    #: it computes ``ew_lane_bytes / size`` elements per cycle, i.e. one UB word every
    #: ``ub_word_bytes / ew_lane_bytes`` cycles. The lanes are most of the engine's area (per 4 bytes: two
    #: fp32 adders and multipliers, ~3.3k LUT4 and 10 MULT18X18D on ECP5): the reference configuration has
    #: 4 so that the unit, with the GEMV engine, fits the ECP5-85 at 100 MHz (with 8 it places at 75% of
    #: the device but does not route at 100 MHz; docs/architecture.md, "Elementwise" and "GEMV").
    ew_lane_bytes: int = 4
    #: Target profile: which data types instructions accept (``Profile.A5`` accepts the most).
    profile: Profile = Profile.A5
    #: The engines the unit is built with, by name (``rtl.top.ENGINES``: ``transfer``, ``local_gather``,
    #: ``elementwise``, ``gemv``); ``None`` (the default) is every engine this configuration can have. The
    #: opcodes of an engine left out answer ``UNSUPPORTED`` (in the golden model and in coverage too).
    #: Integrators leave out what they do not need (area); tests simulate only what they exercise.
    #: ``--set engines=transfer+local_gather``.
    engines: tuple = None
    #: A word-wide UB debug port on the top level (``ub_dbg__*``, see ``rtl.top.VectorUnit``): loads and
    #: reads the UB while the unit is idle, through read port 0 and the write port (no extra RAM port).
    #: Testbenches use it to set and check the UB without TLOAD/TSTORE; ``False`` leaves it out.
    ub_debug_port: bool = True
    #: The engines whose pipelines cannot stop (elementwise, LOCAL_GATHER, TLOAD / MGATHER) hold their UB
    #: writes in output queues (``rtl.lib.output_queue.OutputQueue``) so that a shared write port may
    #: refuse words (the ``ub_wr`` handshake). ``False`` (today's unit, whose front end gives the port to
    #: one engine at a time and never refuses a word) builds each queue as a plain wire: on `default` the
    #: queues cost ~2,100 LUT4 and ~1,700 FF that would do nothing, and moved a placement below 100 MHz.
    #: The engine bench's ``write_stalls`` needs ``True``; pipes that run at once (issue #33) will too.
    ub_write_queues: bool = False
    #: The pipes run at once (issue #33, first version; ``rtl.concurrent``): commands are checked and queued
    #: per pipe (GM -> UB, UB -> GM, vector, matrix) behind a hazard scoreboard, and answered in completion
    #: order; the transfer engine runs as two halves, vector and matrix take turns on two shared read ports.
    #: Needs ``ub_read_ports >= 4`` and ``ub_write_queues``. An instruction that arrives while nothing is in
    #: flight starts its engine before the checker's verdict, as the serial unit does, so it takes the
    #: serial unit's cycles and one more (the engine's ``done`` through a register,
    #: ``rtl.concurrent.ENGINE_OUTPUT_REGISTER_CYCLES``). Presets ``small_concurrent``, ``default_concurrent``.
    concurrent: bool = False
    #: (``concurrent``) Instructions in flight, queued or running, all pipes together: the hazard scoreboard's
    #: entries. Instructions further apart in program order are never in flight together, so they never wait
    #: on each other (the assembler keeps a freed tile's space unused for as many instructions:
    #: ``pto.assembly.Assembly``). Each entry compares its footprint with every incoming one.
    pipe_entries: int = 8
    #: (``concurrent``) Entries of each pipe's in-order queue (at least 2).
    pipe_queue_depth: int = 4
    #: (``concurrent``) Engines that can (``Engine.OVERLAP``: the elementwise engine) take their pipe's next
    #: instruction while the previous one is still in their pipeline (its setup and its first reads under
    #: the previous one's last words: issue #33, item 5; docs/architecture.md, "The concurrent unit").
    #: ``False``: an instruction starts at the previous one's ``done``, to measure the difference.
    pipe_overlap: bool = True
    #: (``concurrent``) The UB takes a word per bank per cycle (``rtl.ub.buffer.UnifiedBuffer`` with
    #: ``write_banks``: each bank's write port fed on its own), and the write arbiter grants two writers at
    #: once when their words' parities differ, so that a transfer and a compute engine writing at once each
    #: keep a word per cycle. ``False``: one word per cycle in total. No extra block RAM: every bank already
    #: has its own write port. ``--set ub_write_banks=false`` to measure the difference.
    ub_write_banks: bool = False
    #: Mutation checks only (``concurrent``): hazard rules the scoreboard leaves out
    #: (``rtl.frontend.scoreboard.RULES``: ``ub_raw``, ``ub_war``, ``gm_raw``, ``gm_war``, ``gm_waw``), so
    #: that a test can show the fuzz catches a unit without one. A unit built with any is wrong on purpose.
    #: ``--set scoreboard_disable=ub_raw``.
    scoreboard_disable: tuple = ()

    def __post_init__(self):
        def need(cond, what):
            if not cond:
                raise ValueError(f"Config: {what}")
        pow2 = lambda v: v > 0 and v & (v - 1) == 0
        need(pow2(self.ub_word_bytes) and self.ub_word_bytes >= 16,
             f"ub_word_bytes={self.ub_word_bytes} must be a power of two >= 16")
        need(pow2(self.ub_bytes) and self.ub_bytes >= 4 * self.ub_word_bytes,
             f"ub_bytes={self.ub_bytes} must be a power of two >= 4 words")
        need(self.ub_bytes <= 1 << 24, f"ub_bytes={self.ub_bytes} exceeds the 24-bit tile base field")
        need(self.ub_read_ports >= 1, "ub_read_ports must be >= 1")
        need(self.axi_data_bits == 8 * self.ub_word_bytes,
             f"axi_data_bits={self.axi_data_bits} must equal 8 * ub_word_bytes={8 * self.ub_word_bytes}")
        need(12 <= self.gm_addr_bits <= 64, f"gm_addr_bits={self.gm_addr_bits} must be in [12, 64]")
        need(1 <= self.axi_id_bits <= 16, f"axi_id_bits={self.axi_id_bits} must be in [1, 16]")
        need(self.max_outstanding_reads >= 1, "max_outstanding_reads must be >= 1")
        need(self.max_outstanding_writes >= 1, "max_outstanding_writes must be >= 1")
        need(1 <= self.max_burst_beats <= 256, f"max_burst_beats={self.max_burst_beats} must be in [1, 256]")
        need(pow2(self.read_buffer_beats) and self.read_buffer_beats >= 4,
             f"read_buffer_beats={self.read_buffer_beats} must be a power of two >= 4")
        need(pow2(self.gemv_partial_sums) and self.gemv_partial_sums <= 64,
             f"gemv_partial_sums={self.gemv_partial_sums} must be a power of two <= 64")
        need(pow2(self.gemv_lanes) and self.gemv_lanes <= self.ub_word_bytes,
             f"gemv_lanes={self.gemv_lanes} must be a power of two in [1, ub_word_bytes={self.ub_word_bytes}]")
        need(pow2(self.ew_lane_bytes) and 4 <= self.ew_lane_bytes <= self.ub_word_bytes,
             f"ew_lane_bytes={self.ew_lane_bytes} must be a power of two in [4, ub_word_bytes={self.ub_word_bytes}]")
        need(isinstance(self.profile, Profile), f"profile={self.profile!r} must be a Profile")
        if self.engines is not None:
            need(isinstance(self.engines, tuple) and all(isinstance(e, str) for e in self.engines),
                 f"engines={self.engines!r} must be None or a tuple of engine names")
            need(len(set(self.engines)) == len(self.engines), f"engines={self.engines!r} names an engine twice")
        need(UB_ALIGN % self.ub_word_bytes == 0 or self.ub_word_bytes % UB_ALIGN == 0,
             "ub_word_bytes and UB_ALIGN must divide one another")
        need(isinstance(self.scoreboard_disable, tuple) and (self.concurrent or not self.scoreboard_disable),
             f"scoreboard_disable={self.scoreboard_disable!r} must be a tuple of rule names, and only with "
             f"concurrent=True (the serial unit has no scoreboard)")
        need(self.pipe_entries >= 2 and self.pipe_queue_depth >= 2,
             f"pipe_entries={self.pipe_entries} and pipe_queue_depth={self.pipe_queue_depth} must be >= 2")
        need(self.concurrent or not self.ub_write_banks,
             "ub_write_banks=True needs concurrent=True (the serial unit has one writer at a time)")
        need(not self.concurrent or (self.ub_read_ports >= CONCURRENT_READ_PORTS and self.ub_write_queues),
             f"concurrent=True needs ub_read_ports >= {CONCURRENT_READ_PORTS} (has {self.ub_read_ports}) and "
             f"ub_write_queues=True (has {self.ub_write_queues}): a read port per transfer pipe, two for vector "
             f"and matrix, and writers that can wait for the shared write port")

    @property
    def axi_data_bytes(self):
        return self.axi_data_bits // 8

    @property
    def ub_words(self):
        return self.ub_bytes // self.ub_word_bytes

    def describe(self):
        return ", ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


#: ``small``'s memory and bus geometry (the presets built on it differ in lanes and concurrency).
_SMALL = Config(ub_word_bytes=16, ub_bytes=4096, axi_data_bits=128, max_burst_beats=16, max_outstanding_reads=4,
                max_outstanding_writes=4, read_buffer_beats=16, ew_lane_bytes=16, gemv_lanes=4)
#: What a unit needs to run its pipes at once (``Config.concurrent``): four UB read ports, output queues, a
#: write port per UB bank.
_CONCURRENT = {"ub_read_ports": CONCURRENT_READ_PORTS, "ub_write_queues": True, "concurrent": True,
               "ub_write_banks": True}

PRESETS = {
    #: The reference configuration: 64 KiB UB of 32-byte words, 256-bit AXI.
    "default": Config(),
    #: Small and fast to simulate: 4 KiB UB of 16-byte words, 128-bit AXI, short bursts.
    "small": _SMALL,
    #: The reference configuration with full-word elementwise and GEMV lanes: one destination word (or
    #: one word of B) per cycle for every type. Too large for the ECP5-85 beside the rest of the unit (see docs/architecture.md,
    #: "Elementwise"); for larger FPGAs and ASIC flows.
    "fullrate": Config(ew_lane_bytes=32, gemv_lanes=32),
    #: The A2/A3 data-type profile on the default hardware.
    "a2a3": Config(profile=Profile.A2A3),
    #: ``small`` with its pipes running at once (``concurrent``; issue #33; docs/architecture.md, "The
    #: concurrent unit"): four UB read ports, output queues, a write port per UB bank.
    "small_concurrent": replace(_SMALL, **_CONCURRENT),
    #: The concurrent unit sized for the ECP5-85: ``small_concurrent`` with ``default``'s lanes (4-byte
    #: elementwise lanes, one GEMV lane), which fits the device (~42% of its LUT4). It is built for 80 MHz
    #: there (``flow.synth.PRESET_CLOCK_MHZ``; ``make synth-check`` runs it): its placements route at 83.5-103.0
    #: MHz over seeds 1-11, and 100 MHz at seeds 1-5 only (docs/synthesis.md, "The concurrent unit's clock").
    "ecp5_concurrent": replace(_SMALL, **_CONCURRENT, ew_lane_bytes=Config.ew_lane_bytes,
                               gemv_lanes=Config.gemv_lanes),
    #: ``default`` with its pipes running at once, as ``small_concurrent``: for simulation and area figures
    #: (it fills 89% of the ECP5-85's logic cells and does not route there; ``default`` stays the serial unit).
    "default_concurrent": Config(**_CONCURRENT),
}


def preset(name, **overrides):
    """The named preset, with any field overridden (``preset("small", gm_addr_bits=40)``)."""
    try:
        base = PRESETS[name]
    except KeyError:
        import difflib
        close = difflib.get_close_matches(str(name), list(PRESETS), n=1)
        raise ValueError(f"unknown configuration {name!r}" + (f" (did you mean {close[0]}?)" if close else "")
                         + f"; presets: {', '.join(PRESETS)}") from None
    return replace(base, **overrides)


def parse_overrides(name, sets=(), *, source=None):
    """``preset(name)`` with ``"field=value"`` overrides (command-line ``--set``): ints (``0x`` allowed),
    booleans (``true`` / ``false``) or, for ``profile``, a ``Profile`` member name. ``ub_word_bytes``
    alone also sets ``axi_data_bits`` (this version requires them equal). Returns ``(config, overrides)``;
    raises ``ValueError`` naming the field for an unknown field or a bad value, and ``Config``'s own
    message for a combination it rejects. ``source``: what the user wrote, to start each message with
    (e.g. ``--config 'small,ub_bytez=8192'``); default ``--set 'FIELD=VALUE'`` of the item at fault."""
    import difflib
    from rtl.isa import Profile
    types = {f.name: f.type for f in fields(Config)}
    names = ", ".join(sorted(types))
    overrides = {}
    for item in sets:
        where = source or f"--set {item!r}"
        key, sep, text = item.partition("=")
        key, text = key.strip(), text.strip()
        if not sep:
            raise ValueError(f"{where}: expected field=value with field one of {names}")
        if key not in types:
            close = difflib.get_close_matches(key, list(types), n=1)
            raise ValueError(f"{where}: unknown field {key!r}" + (f" (did you mean {close[0]}?)" if close else "")
                             + f"; expected field=value with field one of {names}")
        try:
            if text.lower() in ("true", "false"):
                value = text.lower() == "true"
            elif key == "profile":
                value = Profile[text.upper()]
            elif key == "engines":     # names joined by "+" ("all": every engine the configuration can have)
                value = None if text.lower() == "all" else tuple(e.strip() for e in text.split("+") if e.strip())
            elif key == "scoreboard_disable":      # rule names joined by "+"
                value = tuple(e.strip() for e in text.split("+") if e.strip())
            else:
                value = int(text, 0)
        except (ValueError, KeyError):
            hint = (", ".join(p.name.lower() for p in Profile) if key == "profile" else
                    "true or false" if types[key] in (bool, "bool") else "an integer, 0x... for hex")
            raise ValueError(f"{where}: {text!r} is not a valid value for {key} ({hint})") from None
        overrides[key] = value
    if "ub_word_bytes" in overrides and "axi_data_bits" not in overrides:
        overrides["axi_data_bits"] = 8 * overrides["ub_word_bytes"]
    try:
        return preset(name, **overrides), overrides
    except ValueError as e:
        if source is None:
            raise
        raise ValueError(f"{source}: {e}") from None
