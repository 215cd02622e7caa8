"""Worst paths of a routed design, from nextpnr's SDF, grouped by start and end module.

nextpnr reports one critical path per clock. To see *where* the slow logic is, this module runs a small
static timing analysis over the SDF nextpnr writes after routing (``--sdf``): cell delays (``IOPATH``,
clock-to-out included), setup checks (``SETUPHOLD``) and every routed connection (``INTERCONNECT``),
all with their max delays, clock ideal (no clock-network skew). For every timing endpoint (a register,
block-RAM or DSP input with a setup check) it finds the worst arriving path and its start cell; the
endpoints are then grouped by (start module, end module), where a cell's module is the longest module
path of the design that prefixes its name (yosys names mapped cells after the nets they drive, and the
nets keep Amaranth's hierarchical names, e.g. ``unit.transferengine.index.q_ar.level``).

The analysis agrees with nextpnr's own critical path to within the clock skew nextpnr adds; the result
records both so that a difference is visible.
"""

import re
from collections import defaultdict

__all__ = ["read_sdf", "analyse", "module_of", "stem"]

_TRIPLE = r"\(([^()]*)\)"
_RE_INTERCONNECT = re.compile(rf"^\s*\(INTERCONNECT\s+(\S+)\s+(\S+)\s+{_TRIPLE}\s+{_TRIPLE}\s*\)\s*$")
_RE_IOPATH = re.compile(rf"^\s*\(IOPATH\s+(\S+)\s+(\S+)\s+{_TRIPLE}\s+{_TRIPLE}\s*\)\s*$")
_RE_SETUPHOLD = re.compile(rf"^\s*\(SETUPHOLD\s+\((?:posedge|negedge)\s+(\S+)\)\s+\((posedge|negedge)\s+(\S+)\)"
                           rf"\s+{_TRIPLE}\s+{_TRIPLE}\s*\)\s*$")
_RE_INSTANCE = re.compile(r"^\s*\(INSTANCE\s*(.*?)\)\s*$")
_RE_CELLTYPE = re.compile(r'^\s*\(CELLTYPE\s+"(.*)"\)\s*$')
_RE_UNESCAPE = re.compile(r"\\(.)")
#: Clock pins of ECP5 cells (in addition to every pin a setup check names as its clock).
_RE_CLOCK_PORT = re.compile(r"^(CLK[AB]?|CLK[0-3]|WCK)$")


def _unescape(name):
    return _RE_UNESCAPE.sub(r"\1", name)


def _max_ns(triple):
    """The max of an SDF ``(min:typ:max)`` triple in ps, in ns (0 for an empty triple)."""
    parts = [p for p in triple.split(":") if p.strip()]
    return max(float(p) for p in parts) / 1000 if parts else 0.0


def _pin(text):
    cell, _, port = _unescape(text).rpartition("/")
    return cell, port


class Sdf:
    """The timing graph of an SDF file written by nextpnr (max delays, in ns)."""

    def __init__(self):
        self.cell_type = {}                  # cell -> type
        self.iopaths = []                    # (cell, from port, to port, delay)
        self.setup = {}                      # (cell, port) -> (setup, clock port)
        self.wires = []                      # ((cell, port), (cell, port), delay)
        self.unparsed = 0                    # lines of an entry kind this reader did not understand


def read_sdf(path):
    """Read the SDF nextpnr writes (one entry per line) into an :class:`Sdf`."""
    sdf, cell = Sdf(), None
    with open(path) as f:
        for line in f:
            s = line.lstrip()
            if s.startswith("(INTERCONNECT"):
                m = _RE_INTERCONNECT.match(line)
                if not m:
                    sdf.unparsed += 1
                    continue
                sdf.wires.append((_pin(m[1]), _pin(m[2]), max(_max_ns(m[3]), _max_ns(m[4]))))
            elif s.startswith("(IOPATH"):
                m = _RE_IOPATH.match(line)
                if not m or cell is None:
                    sdf.unparsed += 1
                    continue
                sdf.iopaths.append((cell, _unescape(m[1]), _unescape(m[2]), max(_max_ns(m[3]), _max_ns(m[4]))))
            elif s.startswith("(SETUPHOLD"):
                m = _RE_SETUPHOLD.match(line)
                if not m or cell is None:
                    sdf.unparsed += 1
                    continue
                # rise triple = setup, fall triple = hold (nextpnr's convention)
                sdf.setup[(cell, _unescape(m[1]))] = (_max_ns(m[4]), _unescape(m[3]))
            elif s.startswith("(CELLTYPE"):
                m = _RE_CELLTYPE.match(line)
                cell_type = m[1] if m else "?"
            elif s.startswith("(INSTANCE"):
                m = _RE_INSTANCE.match(line)
                cell = _unescape(m[1].strip()) if m and m[1].strip() else None
                if cell is not None:
                    sdf.cell_type[cell] = cell_type
    return sdf


_RE_STEM = re.compile(r"_(?:LUT4|CCU2C|TRELLIS_FF|TRELLIS_DPR16X4|TRELLIS_RAMW|MULT18X18D|ALU54B|PFUMX|L6MUX21|"
                      r"DP16KD|TRELLIS_IO|DCCA)_.*$")
_RE_NEXTPNR_SUFFIX = re.compile(r"\$[A-Z][A-Z0-9_]*$")


def stem(cell):
    """The signal a mapped cell is named after: yosys (``autoname``) names a cell ``<net>_<TYPE>_<port>...``
    after a net it drives or reads; nextpnr appends ``$CCU2_COMB0``-like suffixes to cells it splits
    and names cells it creates ``$nextpnr_...``."""
    name = _RE_NEXTPNR_SUFFIX.sub("", cell)
    return _RE_STEM.sub("", name) or name


def _short(step):
    kinds = "+".join(f"{n}x{k.replace('TRELLIS_', '')}" if n > 1 else k.replace("TRELLIS_", "")
                     for k, n in step["cells"].items())
    return f"{step['signal']} ({kinds})"


def module_of(name, modules, prefixes=()):
    """The module of a cell or net name: the longest of ``modules`` that prefixes it as ``module.``;
    ``prefixes`` maps other name prefixes to labels (checked first)."""
    for prefix, label in prefixes:
        if name.startswith(prefix):
            return label
    mods = modules if isinstance(modules, (set, frozenset)) else set(modules)
    end = len(name)
    while (end := name.rfind(".", 0, end)) > 0:  # the longest first: a set lookup per dot of the name
        if name[:end] in mods:
            return name[:end]
    return None


def analyse(sdf, period_ns, module, top_groups=12, path_groups=5, src_of=None):
    """Worst path to every endpoint, grouped by (start module, end module).

    ``module(cell name)`` gives a cell's module label, ``src_of(signal)`` (optional) the source line of a
    signal (a cell name's :func:`stem`). Returns a dict: ``worst`` (the worst path: delay,
    start, end and its cells), ``endpoints`` / ``failing`` counts (failing: slower than ``period_ns``),
    ``groups`` (the ``top_groups`` worst (start, end) module pairs: worst delay, Fmax it allows, how many
    endpoints fail, and for the ``path_groups`` worst groups the worst path cell by cell).
    """
    clock_ports = defaultdict(set)
    for (cell, _), (_, clk) in sdf.setup.items():
        clock_ports[cell].add(clk)

    ids, names = {}, []

    def pid(p):
        i = ids.get(p)
        if i is None:
            i = ids[p] = len(names)
            names.append(p)
        return i

    succ = defaultdict(list)                 # pin -> [(pin, delay)]
    indeg = defaultdict(int)
    arrival, pred = {}, {}
    for cell, a, b, d in sdf.iopaths:
        if a in clock_ports[cell] or _RE_CLOCK_PORT.match(a):     # clock to out: a startpoint
            q = pid((cell, b))
            if d > arrival.get(q, -1.0):
                arrival[q], pred[q] = d, None
        else:
            u, v = pid((cell, a)), pid((cell, b))
            succ[u].append((v, d))
            indeg[v] += 1
    for src, dst, d in sdf.wires:
        if dst[1] in clock_ports[dst[0]] or _RE_CLOCK_PORT.match(dst[1]):
            continue                         # the clock network: ideal clock
        u, v = pid(src), pid(dst)
        succ[u].append((v, d))
        indeg[v] += 1

    # longest arrival by a topological walk (Kahn); pins without a timed start stay without arrival
    ready = [i for i in range(len(names)) if indeg[i] == 0]
    visited = 0
    while ready:
        u = ready.pop()
        visited += 1
        au = arrival.get(u)
        for v, d in succ.get(u, ()):
            if au is not None and au + d > arrival.get(v, -1.0):
                arrival[v], pred[v] = au + d, u
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    looped = len(names) - visited

    def trace(i):
        path = [i]
        while pred.get(path[-1]) is not None:
            path.append(pred[path[-1]])
        return path[::-1]

    endpoints = []
    for pin, (setup, _) in sdf.setup.items():
        i = ids.get(pin)
        if i is None or i not in arrival:
            continue
        endpoints.append((arrival[i] + setup, i))
    endpoints.sort(reverse=True)

    groups = {}
    for delay, i in endpoints:
        start_pin = names[trace(i)[0]]
        key = (module(start_pin[0]) or "?", module(names[i][0]) or "?")
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"start": key[0], "end": key[1], "worst_ns": round(delay, 3),
                               "fmax_mhz": round(1000 / delay, 1) if delay > 0 else None,
                               "endpoints": 0, "failing": 0, "_worst": i}
        g["endpoints"] += 1
        g["failing"] += delay > period_ns

    def describe(i, delay):
        pins = trace(i)
        steps = []                           # consecutive cells named after the same signal: one step
        for p in pins:
            cell, _ = names[p]
            sig = stem(cell)
            kind = sdf.cell_type.get(cell, "?")
            if steps and steps[-1]["signal"] == sig:
                step = steps[-1]
                if cell != step["_last"]:
                    step["cells"][kind] = step["cells"].get(kind, 0) + 1
            else:
                step = {"signal": sig, "module": module(cell), "cells": {kind: 1}}
                src = src_of(sig) if src_of else None
                if src:
                    step["src"] = src
                steps.append(step)
            step["_last"], step["at_ns"] = cell, round(arrival.get(p, 0.0), 3)
        for step in steps:
            del step["_last"]
        levels = sum(n for st in steps for k, n in st["cells"].items() if k in ("TRELLIS_COMB", "LUT4"))
        routing = sum(arrival[b] - arrival[a] for a, b in zip(pins, pins[1:]) if names[a][0] != names[b][0])
        sources = []
        for st in steps:
            if st.get("src") and st["src"] not in sources:
                sources.append(st["src"])
        return {"delay_ns": round(delay, 3), "start": names[pins[0]][0][:200], "end": names[i][0][:200],
                "end_port": names[i][1], "comb_cells": levels, "routing_ns": round(routing, 3),
                "via": " > ".join(_short(st) for st in steps), "sources": sources, "steps": steps}

    ordered = sorted(groups.values(), key=lambda g: -g["worst_ns"])
    out_groups = []
    for n, g in enumerate(ordered[:top_groups]):
        i = g.pop("_worst")
        if n < path_groups:
            g["worst_path"] = describe(i, g["worst_ns"])
        out_groups.append(g)
    for g in ordered[top_groups:]:
        g.pop("_worst", None)
    return {
        "period_ns": period_ns,
        "endpoints": len(endpoints),
        "failing": sum(d > period_ns for d, _ in endpoints),
        "worst": describe(endpoints[0][1], endpoints[0][0]) if endpoints else None,
        "groups": out_groups,
        "group_count": len(groups),
        "pins_in_loops": looped,
        "sdf_unparsed_lines": sdf.unparsed,
    }
