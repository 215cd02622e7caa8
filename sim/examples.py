"""The PTO-AS examples (``examples/``) on the RTL, each against the golden model and its own numpy reference.

``python -m sim.examples [--sim icarus|verilator] [-k NAME] [-j N]``: for every ``examples/NAME.pto`` with its
input generator ``NAME.py``, generate the inputs, run the program with :func:`sim.programs.run.run_program`
(the RTL and the golden side by side, every command's status and the whole UB compared) and compare each
output with ``NAME.py``'s ``reference``, written from the seed. Examples the RTL cannot run are run on the
golden model alone and reported as such: an instruction without an engine (TGEMV*, UNSUPPORTED today), or a
program whose configuration is no preset (the literal NKI example needs a 2 MiB UB). Prints one line per
example; exits non-zero if any fails. ``make sim`` runs it after the regression. ``-j``: examples run in
parallel (each is one simulator run; the lines still come in name order).
"""

import argparse
import concurrent.futures
import os
import importlib.util
import pathlib
import sys

import numpy as np

from rtl.config import PRESETS

from pto import parse_file
from sim.programs.run import run_program

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

__all__ = ["EXAMPLES", "example_module", "run_example", "main"]


def example_module(name):
    """The example's generator module (``inputs(seed)``, ``reference(inputs)``)."""
    spec = importlib.util.spec_from_file_location(f"pto_example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(EXAMPLES))
    return mod


def _rtl_reason(program):
    """Why the RTL cannot run ``program`` (None if it can)."""
    from rtl.config import preset
    from rtl.top import supported_opcodes
    config = getattr(program, "config", None) or "small"
    name = config.split(",")[0]
    if name not in PRESETS or "," in config:
        return f"configuration {config!r} is not a preset"
    have = supported_opcodes(preset(name))
    missing = sorted({ins.opcode.name for ins in program.instrs if ins.opcode not in have})
    return f"no engine for {', '.join(missing)} yet" if missing else None


def run_example(name, sim="icarus"):
    """``(ok, where, detail)`` for one example: where = the simulator or ``golden only``."""
    mod = example_module(name)
    x = mod.inputs()
    path = EXAMPLES / f"{name}.pto"
    reason = _rtl_reason(parse_file(path)) if sim != "none" else "requested"
    rep = run_program(path, x, sim="none" if reason else sim, label=f"example-{name}" if not reason else None)
    problems = list(rep.problems)
    ref = mod.reference(x)
    for k, v in ref.items():
        got = rep.outputs.get(k)
        if got is None or got.shape != np.shape(v) or got.tobytes() != np.asarray(v, got.dtype).tobytes():
            problems.append(f"output {k} differs from the example's numpy reference")
    where = f"golden only ({reason})" if reason else \
        f"{sim}, {len(rep.rows)} instructions, total {rep.total_cycles} cycles (sum of instruction cycles {rep.sum_cycles})"
    return not problems and rep.ok, where, "; ".join(problems)


def main(argv=None):
    p = argparse.ArgumentParser(description="Run the PTO-AS examples on the RTL against the golden model.")
    p.add_argument("--sim", default="icarus", choices=["icarus", "verilator", "none"])
    p.add_argument("-k", default="", help="only examples whose name contains this")
    p.add_argument("-j", type=int, default=os.cpu_count() or 1, help="parallel simulator runs")
    a = p.parse_args(argv)
    names = sorted(q.stem for q in EXAMPLES.glob("*.pto") if a.k in q.stem)
    failed = 0
    print(f"{'example':<28} {'result':<6} where")
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, a.j)) as pool:
        for name, (ok, where, detail) in zip(names, pool.map(run_example, names, [a.sim] * len(names))):
            failed += not ok
            print(f"{name:<28} {'PASS' if ok else 'FAIL':<6} {where}" + (f"\n    {detail}" if detail else ""),
                  flush=True)
    print(f"\n{len(names) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
