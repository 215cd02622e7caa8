"""GTKWave save files (``.gtkw``) for a test's FST, with signals grouped by interface and engine.

The signal list is read from the FST header (``fst2vcd``, shipped with GTKWave); the save file is
written with pyvcd's :class:`vcd.gtkw.GTKWSave`. Groups: command / response streams and the front end,
one group per AXI channel, one per engine (its control signals), and the UB ports.

Names instead of numbers: every signal of the design whose values have names (an enum-shaped signal or
struct field: opcode, data type, status, layout, OOB mode, lane op; and every FSM state register) gets a
GTKWave *translate filter file* generated from the design itself (the enums of ``rtl/`` and the FSMs'
state names, through Amaranth's signal decoders: one source of truth), and the save file applies it to
that trace, so GTKWave shows ``MGATHER_ROW``, ``FP16``, ``UB_MISALIGNED``, ``RUN``.
"""

import pathlib
import re
import shutil
import subprocess

__all__ = ["fst_signals", "write_gtkw", "signal_names", "write_filters", "filters_for"]

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
    ``\\signal.field`` (Yosys' escaped name)."""
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


def write_gtkw(fst, out=None, top="vector_unit", filters=None):
    """Write ``<fst>.gtkw`` (or ``out``) grouping the FST's signals; returns its path. ``filters``:
    ``{"scope.name": filter file}`` (default: :func:`filters_for` the run directory) applied to those
    traces so GTKWave shows names instead of numbers."""
    from vcd.gtkw import GTKWSave
    fst = pathlib.Path(fst)
    out = pathlib.Path(out) if out else fst.with_suffix(".gtkw")
    sigs = fst_signals(fst)
    top_sigs = [(s, n, w) for s, n, w in sigs if s == top]
    if filters is None:
        filters = filters_for(fst) or {}

    def trace(g, scope, name, width):
        ref = f"{scope}.{name}"
        flt = filters.get(ref)
        g.trace(ref if width == 1 else f"{ref}[{width - 1}:0]", datafmt="hex", translate_filter_file=flt)

    with open(out, "w") as f:
        g = GTKWSave(f)
        g.dumpfile(str(fst.resolve()))
        g.zoom_markers(-8.0)
        with g.group("command / response"):
            for s, n, w in top_sigs:
                if n == "clk" or n == "rst" or n.startswith(("s_axis_cmd__", "m_axis_rsp__")):
                    trace(g, s, n, w)
            for s, n, w in top_sigs:
                if n in ("frontend_state", "status", "cycles", "active") or n in ("\\cmd.opcode", "\\cmd.tag"):
                    trace(g, s, n, w)
        for title, prefix in (*_AXI_CHANNELS, ("UB debug port", "ub_dbg__")):
            with g.group(title, closed=True):
                for s, n, w in top_sigs:
                    if n.startswith(prefix):
                        trace(g, s, n, w)
        children = sorted({s.split(".")[1] for s, _, _ in sigs if s.count(".") == 1})
        for child in children:
            scope = f"{top}.{child}"
            mine = [(s, n, w) for s, n, w in sigs
                    if s == scope and w <= 64 and not n.startswith(("\\cmd", "axi__"))]
            if mine:
                with g.group(f"{child}", closed=child in ("checker",)):
                    for s, n, w in mine:
                        trace(g, s, n, w)
    return out


if __name__ == "__main__":
    import sys
    print(write_gtkw(sys.argv[1]))
