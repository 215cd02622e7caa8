"""GTKWave save files (``.gtkw``) for a test's FST, with signals grouped by interface and engine.

The signal list is read from the FST header (``fst2vcd``, shipped with GTKWave); the save file is
written with pyvcd's :class:`vcd.gtkw.GTKWSave`. Groups: command / response streams and the front end,
one group per AXI channel, one per engine (its control signals), and the UB ports.

Names instead of numbers: every signal of the design whose values have names (an enum-shaped signal or
struct field: opcode, data type, status, layout, OOB mode, lane op; and every FSM state register) gets a
GTKWave *translate filter file* generated from the design itself (the enums of ``rtl/`` and the FSMs'
state names, through Amaranth's signal decoders: one source of truth), and the save file applies it to
that trace, so GTKWave shows ``MGATHER_ROW``, ``FP16``, ``UB_MISALIGNED``, ``RUN``.

What a person sees first: the save file opens on the whole run (the zoom fitted to the FST's time span, read
from its header), the command stream's 640 bits and the response's 64 split into their fields by name
(``rtl.isa.Command`` / ``Response``: opcode, tag, each tile's base, shape, valid shape, type and layout, the GM
region; tag, status, cycles), enums by name, counts (tags, cycles, shapes) in decimal.
"""

import functools
import math
import pathlib
import re
import shutil
import struct
import subprocess

__all__ = ["fst_signals", "fst_span", "fst_timescale", "fit_zoom", "struct_fields", "write_gtkw", "signal_names", "write_filters",
           "filters_for"]

_AXI_CHANNELS = (("AXI AR (read address)", "m_axi__ar"), ("AXI R (read data)", "m_axi__r"),
                 ("AXI AW (write address)", "m_axi__aw"), ("AXI W (write data)", "m_axi__w"),
                 ("AXI B (write response)", "m_axi__b"))


def fst_signals(fst):
    """``[(scope path, name, width)]`` of every named signal in an FST (auto-named wires dropped)."""
    if shutil.which("fst2vcd") is None:
        raise RuntimeError("fst2vcd not found (it ships with GTKWave: apt-get install gtkwave)")
    proc = subprocess.Popen(["fst2vcd", str(fst)], stdout=subprocess.PIPE, text=True)
    scope, out = [], []
    for line in proc.stdout:
        if line.startswith("$enddefinitions"):
            break
        parts = line.split()
        if parts[:2] == ["$scope", "module"]:
            scope.append(parts[2])
        elif parts[:1] == ["$scope"]:
            scope.append(None)          # functions, tasks: not signals anyone wants
        elif parts[:1] == ["$upscope"]:
            scope.pop()
        elif parts[:1] == ["$var"] and None not in scope:
            name = parts[4]
            if not re.fullmatch(r"_\d+_", name) and "$" not in name:
                out.append((".".join(scope), name, int(parts[2])))
    proc.kill()
    proc.wait()
    return out


def _fst_header(fst):
    """The first 74 bytes of an FST's header block (block type 0, a 64-bit length, start and end time, the
    endianness double, the memory, scope, variable, variable-count and block-count words, the time scale),
    or None when the file has no such header."""
    try:
        with open(fst, "rb") as f:
            head = f.read(74)
    except OSError:
        return None
    return head if len(head) == 74 and head[0] == 0 else None


def fst_span(fst):
    """``(start, end)`` simulation time of an FST in its time unit (big-endian words of its header); None
    when it has no header."""
    head = _fst_header(fst)
    if head is None:
        return None
    start, end = struct.unpack(">QQ", head[9:25])
    return (start, end) if end >= start else None


def fst_timescale(fst):
    """The FST's time unit as a power of ten of a second (``-12``: ps), a signed byte of its header; None
    when it has no header."""
    head = _fst_header(fst)
    return None if head is None else struct.unpack(">b", head[73:74])[0]


#: GTKWave's zoom: ``zoom`` z shows ``ZOOM_BASE ** -z`` time units per ``ZOOM_FRAME`` pixels (its default zoom
#: base, and its frame of 200 pixels).
ZOOM_BASE, ZOOM_FRAME = 2.0, 200

#: The window the save file asks for (``[size]``) and the part of it the waves get (the signal list is
#: ``SIGNALS_WIDTH`` wide, the tree of scopes is closed): the zoom that fits the run is computed for it.
WINDOW, SIGNALS_WIDTH, WAVE_WIDTH = (1400, 900), 300, 1000


def fit_zoom(duration, pixels=WAVE_WIDTH):
    """GTKWave's zoom value that shows ``duration`` time units in ``pixels`` pixels."""
    return -math.log(max(duration, 1) * ZOOM_FRAME / pixels, ZOOM_BASE)


def struct_fields(layout, prefix=""):
    """``[(name, offset, width, enum or None)]`` of every field of an Amaranth struct layout, nested structs
    flattened with dots (``dst.valid_rows``), reserved fields left out."""
    from amaranth.lib import data
    import enum
    out = []
    for name, field in layout:
        if name.startswith("_"):
            continue
        shape = field.shape
        if isinstance(shape, data.Layout):
            out += [(f"{prefix}{name}.{n}", field.offset + o, w, e) for n, o, w, e in struct_fields(shape)]
        else:
            kind = shape if isinstance(shape, type) and issubclass(shape, enum.Enum) else None
            out.append((f"{prefix}{name}", field.offset, field.width, kind))
    return out


def _fsm_names(decoder):
    """{value: state name} of an FSM state register (Amaranth's decoder gives ``"NAME/value"``)."""
    names, v = {}, 0
    while True:
        try:
            names[v] = str(decoder(v)).rsplit("/", 1)[0]
        except (KeyError, IndexError):
            return names
        v += 1


def signal_names(config, top="vector_unit"):
    """``{"scope.name": {value: name}}`` for every signal and struct field of ``VectorUnit(config)`` whose
    values have names: enum-shaped ones (Amaranth's ``Format.Enum``, from the enums in ``rtl/``) and FSM
    state registers. Scopes as in the FST (``vector_unit.elementwiseengine``); a struct field is
    ``\\signal.field`` (Yosys' escaped name). Elaborating the unit takes seconds: the names are computed
    once per process and configuration (a copy is returned)."""
    return {ref: dict(names) for ref, names in _signal_names(config, top).items()}


@functools.lru_cache(maxsize=4)
def _signal_names(config, top):
    from amaranth.hdl import Format, Fragment
    from rtl.top import VectorUnit
    design = Fragment.get(VectorUnit(config), None).prepare()
    out = {}

    def walk(path, fmt):
        if isinstance(fmt, Format.Enum):
            yield path, dict(fmt._variants)
        elif isinstance(fmt, Format.Struct):
            for name, field in fmt._fields.items():
                yield from walk(f"{path}.{name}", field)

    for info in design.fragments.values():
        scope = ".".join((top, *info.name[1:]))
        for sig, name in info.signal_names.items():
            fmt = getattr(sig, "_format", None)
            if isinstance(fmt, Format.Enum):
                out[f"{scope}.{name}"] = dict(fmt._variants)
            elif isinstance(fmt, Format.Struct):
                for path, names in walk(name, fmt):
                    out[f"{scope}.\\{path}"] = names
            elif callable(sig.decoder) and not isinstance(sig.decoder, type):
                names = _fsm_names(sig.decoder)
                if names:
                    out[f"{scope}.{name}"] = names
    return out


def write_filters(config, directory):
    """Translate filter files for :func:`signal_names` under ``directory`` (one per distinct value map)
    and ``filters.json`` mapping each signal to its file; returns that map."""
    import json
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files, mapping = {}, {}
    for ref, names in sorted(signal_names(config).items()):
        key = tuple(sorted(names.items()))
        if key not in files:
            path = directory / f"names_{len(files)}.txt"
            width = max(names).bit_length() or 1
            digits = max(1, -(-width // 4))
            lines = [f"# {ref} and every signal with the same names"]
            # GTKWave prints hex with one digit per 4 bits of the trace: write every padding it may use
            for v, n in sorted(names.items()):
                for d in range(digits, digits + 3):
                    lines.append(f"{v:0{d}X} {n}")
            path.write_text("\n".join(lines) + "\n")
            files[key] = str(path.resolve())
        mapping[ref] = files[key]
    (directory / "filters.json").write_text(json.dumps(mapping, indent=1))
    return mapping


def filters_for(fst):
    """The filter map of the configuration a run directory belongs to (``build/run/<sim>-<config>/...``),
    written on first use under ``build/waves/<config>/``; None if the configuration is unknown."""
    import json
    from rtl.config import PRESETS, preset
    fst = pathlib.Path(fst).resolve()
    config = next((p.name.split("-", 1)[1] for p in fst.parents if p.parent.name == "run" and "-" in p.name), None)
    if config is None:
        return None
    config = config.removesuffix("-waves")
    if config not in PRESETS:
        return None
    root = next(p for p in fst.parents if p.name == "run").parent
    directory = root / "waves" / config
    index = directory / "filters.json"
    if index.exists():
        return json.loads(index.read_text())
    return write_filters(preset(config), directory)


#: Where the translate filter of each enum of the command and response is found (a signal of the design of that
#: enum, as :func:`signal_names` names it).
_ENUM_REFS = {"Opcode": "\\cmd.opcode", "DType": "\\cmd.dst.dtype", "Layout": "\\cmd.dst.layout",
              "OobMode": "\\cmd.oob", "Status": "status"}

#: Fields shown in hexadecimal (addresses); every other field without names is a count, shown in decimal.
_HEX_FIELDS = ("base",)


class _Save:
    """pyvcd's GTKWSave with the traces this module writes: a whole signal, and a field of a vector (its bits
    combined into one trace with a name: GTKWave's ``#{name} (i)vector[msb:0] ...``, ``i`` counted from the
    most significant bit)."""

    def __init__(self, f, filters):
        from vcd.gtkw import GTKWSave
        self.g, self.filters = GTKWSave(f), filters

    def trace(self, scope, name, width, datafmt=None):
        ref = f"{scope}.{name}"
        flt = self.filters.get(ref)
        fmt = datafmt or ("dec" if name in ("cycles", "\\cmd.tag") and not flt else "hex")
        self.g.trace(ref if width == 1 else f"{ref}[{width - 1}:0]", datafmt=fmt, translate_filter_file=flt)

    def field(self, ref, width, name, lo, size, datafmt="dec", flt=None):
        from vcd.gtkw import GTKWFlag
        g = self.g
        flags = GTKWFlag[datafmt if not flt else "hex"] | GTKWFlag.rjustify
        if flt:
            flags |= GTKWFlag.ftranslated
        g._set_flags(flags)
        g._set_translate_filter_file(flt)
        # GTKWave numbers a vector's bits from the left: bit b of ref[width-1:0] is (width - 1 - b)
        bits = " ".join(f"({width - 1 - b}){ref}[{width - 1}:0]" for b in range(lo + size - 1, lo - 1, -1))
        g._p(f"#{{{name}}} {bits}")


def _fields(save, top, tdata, layout, prefix, enum_filters, groups):
    """The fields of ``layout`` packed in the vector ``top.tdata``: the ones of ``groups`` (a field name's
    first part: ``dst``, ``gm``...) in a closed sub-group each, the others at this level."""
    ref = f"{top}.{tdata}"
    fields = struct_fields(layout)
    width = layout.size
    loose = [f for f in fields if f[0].split(".")[0] not in groups]
    for name, lo, size, kind in loose:
        flt = enum_filters.get(kind.__name__) if kind else None
        save.field(ref, width, f"{prefix}{name}", lo, size, "hex" if name.endswith(_HEX_FIELDS) else "dec", flt)
    for grp in groups:
        mine = [f for f in fields if f[0].split(".")[0] == grp]
        with save.g.group(f"{prefix}{grp}", closed=grp != "dst"):
            for name, lo, size, kind in mine:
                flt = enum_filters.get(kind.__name__) if kind else None
                save.field(ref, width, f"{prefix}{name}", lo, size, "hex" if name.endswith(_HEX_FIELDS) else "dec",
                           flt)


#: The concurrent front end's signals in its GTKWave group (``rtl.frontend.pipe_front``, ``...dispatch``):
#: per pipe whether it runs, has a released instruction (its engine took the next one before this one's
#: ``done``), waits on a hazard, takes an instruction, retires one; the engines' start / go; the queues' fill;
#: the unit empty (TSYNC's condition); the check stage's commands (``check_cmds.level``: accepted, not yet
#: answered or in the dispatcher), its speculative start and its footprints to drop.
_FRONT_TRACES = (r"(busy|stalled|empty|speculate|drop|pipe\d+_(running|released|release|take|done|free|retire|ended)"
                 r"|(start|go|sel)_\w+|running\d+|released\d+|draining\d+|queue\d+\.level|level)")


def write_gtkw(fst, out=None, top="vector_unit", filters=None, window_ns=None):
    """Write ``<fst>.gtkw`` (or ``out``) grouping the FST's signals; returns its path. ``filters``:
    ``{"scope.name": filter file}`` (default: :func:`filters_for` the run directory) applied to those
    traces so GTKWave shows names instead of numbers.

    The file opens on the whole run (:func:`fst_span`, :func:`fit_zoom`), or with ``window_ns=(start, end)``
    (simulated ns) on that part of it with markers A and B at its ends (one testcase of a run of several,
    ``sim.regress.run_group``), the command and response streams' data split into their fields
    (:func:`struct_fields` of ``rtl.isa.Command`` / ``Response``), counts in decimal."""
    from rtl.isa import Command, Response
    fst = pathlib.Path(fst)
    out = pathlib.Path(out) if out else fst.with_suffix(".gtkw")
    sigs = fst_signals(fst)
    top_sigs = [(s, n, w) for s, n, w in sigs if s == top]
    widths = {n: w for _, n, w in top_sigs}
    if filters is None:
        filters = filters_for(fst) or {}
    enum_filters = {kind: filters[f"{top}.{ref}"] for kind, ref in _ENUM_REFS.items() if f"{top}.{ref}" in filters}
    span = fst_span(fst)
    marks = {}
    if window_ns is not None and fst_timescale(fst) is not None:
        unit = 10.0 ** (-9 - fst_timescale(fst))         # FST time units per ns
        span = tuple(round(t * unit) for t in window_ns)
        marks = {"a": span[0], "b": span[1]}

    with open(out, "w") as f:
        save = _Save(f, filters)
        g = save.g
        g.dumpfile(str(fst.resolve()))
        g.size(*WINDOW)
        g.signals_width(SIGNALS_WIDTH)
        g.sst_expanded(False)
        if span is not None:
            g.timestart(span[0])
            g.zoom_markers(fit_zoom(span[1] - span[0]), **marks)
        else:
            g.zoom_markers(-8.0)
        with g.group("command / response"):
            for n in ("clk", "rst", "s_axis_cmd__tvalid", "s_axis_cmd__tready"):
                if n in widths:
                    save.trace(top, n, widths[n])
            if widths.get("s_axis_cmd__tdata") == Command.size:
                with g.group("command (s_axis_cmd__tdata)"):
                    _fields(save, top, "s_axis_cmd__tdata", Command, "cmd.", enum_filters,
                            ("dst", "src0", "src1", "src2", "gm"))
            for n in ("m_axis_rsp__tvalid", "m_axis_rsp__tready"):
                if n in widths:
                    save.trace(top, n, widths[n])
            if widths.get("m_axis_rsp__tdata") == Response.size:
                with g.group("response (m_axis_rsp__tdata)"):
                    _fields(save, top, "m_axis_rsp__tdata", Response, "rsp.", enum_filters, ())
            with g.group("raw stream data", closed=True):
                for n in ("s_axis_cmd__tdata", "m_axis_rsp__tdata"):
                    if n in widths:
                        save.trace(top, n, widths[n])
            for s, n, w in top_sigs:
                if n in ("frontend_state", "status", "cycles", "active") or n in ("\\cmd.opcode", "\\cmd.tag"):
                    save.trace(s, n, w)
        # the concurrent unit (Config.concurrent): what each pipe does and why it waits, from its front end
        front = [(sc, n, w) for sc, n, w in sigs if sc in (f"{top}.front", f"{top}.front.dispatch",
                                                           f"{top}.front.check_cmds") and w <= 32
                 and re.fullmatch(_FRONT_TRACES, n.lstrip("\\"))]
        if front:
            with g.group("pipes: queues and hazard stalls (the concurrent front end)"):
                for sc, n, w in front:
                    save.trace(sc, n, w)
        for title, prefix in (("pipes: busy cycles (perf__busy__0..3: GM -> UB, UB -> GM, vector, matrix)",
                               "perf__busy__"),
                              ("pipes: stalled-on-hazard cycles (perf__stalled__0..3; the concurrent unit)",
                               "perf__stalled__"),
                              ("pipes: early starts (perf__early__0..3: started while the pipe's previous "
                               "instruction was still in its engine; the concurrent unit)", "perf__early__"),
                              ("pipes: the accepted command's pipe (one-hot)", "cmd_pipe"),
                              *_AXI_CHANNELS, ("UB debug port", "ub_dbg__")):
            if not any(n.startswith(prefix) for _, n, _ in top_sigs):
                continue
            with g.group(title, closed=True):
                for s, n, w in top_sigs:
                    if n.startswith(prefix):
                        save.trace(s, n, w)
        children = sorted({s.split(".")[1] for s, _, _ in sigs if s.count(".") == 1})
        for child in children:
            scope = f"{top}.{child}"
            mine = [(s, n, w) for s, n, w in sigs
                    if s == scope and w <= 64 and not n.startswith(("\\cmd", "axi__"))]
            if mine:
                with g.group(f"{child}", closed=child in ("checker",)):
                    for s, n, w in mine:
                        save.trace(s, n, w)
    return out


if __name__ == "__main__":
    import sys
    print(write_gtkw(sys.argv[1]))
