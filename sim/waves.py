"""GTKWave save files (``.gtkw``) for a test's FST, with signals grouped by interface and engine.

The signal list is read from the FST header (``fst2vcd``, shipped with GTKWave); the save file is
written with pyvcd's :class:`vcd.gtkw.GTKWSave`. Groups: command / response streams and the front end,
one group per AXI channel, one per engine (its control signals), and the UB ports.
"""

import pathlib
import re
import shutil
import subprocess

__all__ = ["fst_signals", "write_gtkw"]

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


def write_gtkw(fst, out=None, top="vector_unit"):
    """Write ``<fst>.gtkw`` (or ``out``) grouping the FST's signals; returns its path."""
    from vcd.gtkw import GTKWSave
    fst = pathlib.Path(fst)
    out = pathlib.Path(out) if out else fst.with_suffix(".gtkw")
    sigs = fst_signals(fst)
    top_sigs = [(s, n, w) for s, n, w in sigs if s == top]

    def trace(g, scope, name, width):
        ref = f"{scope}.{name}"
        g.trace(ref if width == 1 else f"{ref}[{width - 1}:0]", datafmt="hex")

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
