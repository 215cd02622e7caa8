"""Run an assembled PTO program on the golden model and / or the RTL; the ``python -m sim run`` command.

``python -m sim run PROGRAM.pto --data inputs.npz [--sim icarus|verilator|none] [--config NAME] [--waves]
[--out outputs.npz]``: assembles, binds the inputs, runs the program on the golden model (``--sim none``)
or on the RTL through one cocotb run of ``cocotb_tests/test_pto.py`` (which shadows every command with the
golden and compares the whole UB after each one), prints one row per instruction (line, op, shape, type,
status, cycles), writes the outputs, and exits non-zero on a mismatch, an error status (other than one an
``expect`` attribute asks for) or an error in the program or its inputs.
"""

import argparse
import json
import pathlib
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np

from rtl.config import PRESETS

from .errors import AsmError, InputError
from .image import decode_output, output_extent

__all__ = ["Row", "Report", "run_golden", "run_rtl", "run_program", "run_images", "format_table", "main", "load_inputs"]


@dataclass
class Row:
    line: object
    op: str
    shape: str
    dtype: str
    expect: str
    status: str = "-"
    cycles: object = "-"
    golden: str = "-"
    undefined: int = 0

    @property
    def ok(self):
        return self.status == self.expect and (self.golden in ("-", self.status))


@dataclass
class Report:
    """What a run gave: ``rows`` (one per instruction), ``outputs`` {name: array}, ``problems`` (why it failed),
    ``sim`` (``none`` or the simulator), ``log`` (the simulator log, RTL runs)."""
    rows: list
    outputs: dict
    problems: list = field(default_factory=list)
    sim: str = "none"
    log: str = ""
    waves: str = ""         #: the FST of an RTL run with ``waves`` (its GTKWave save file beside it)

    @property
    def ok(self):
        return not self.problems


def _supported(config):
    from rtl.top import engines_for
    return [op for engine in engines_for(config) for op in engine.opcodes]


def run_golden(image, config, supported=None):
    """(statuses, undefined byte counts, outputs) of the image on ``golden.Machine``."""
    from golden.machine import Machine
    m = Machine(config, supported=supported)
    m.ub[:] = np.frombuffer(image.ub, np.uint8)
    for addr, data in image.gm:
        m.gm.write(addr, data)
    statuses, undefined = [], []
    for cmd in image.commands:
        statuses.append(m.execute(cmd, on_undefined="mask"))
        undefined.append(0 if m.last_undefined is None else int(m.last_undefined.sum()))
    outputs = {}
    for o in image.outputs:
        addr, n = output_extent(o)
        raw = bytes(m.ub[addr:addr + n]) if o["space"] == "ub" else m.gm.read(addr, n)
        outputs[o["name"]] = decode_output(o, raw)
    return statuses, undefined, outputs


def run_rtl(image, config_name, sim="icarus", waves=False, label=None, workdir=None):
    """One cocotb run of ``cocotb_tests/test_pto.py`` on ``image``; returns (results dict, RunResult)."""
    from sim.runner import BUILD, run
    if config_name not in PRESETS:
        raise ValueError(f"the RTL is built for preset configurations only ({', '.join(PRESETS)}), not "
                         f"{config_name!r}; use --sim none for other configurations")
    label = label or "pto"
    workdir = pathlib.Path(workdir) if workdir else pathlib.Path(tempfile.mkdtemp(prefix=f"{label}-", dir=_tmp(BUILD)))
    image.save(workdir / "image")
    results_file = workdir / "results.json"
    if results_file.exists():
        results_file.unlink()
    result = run("test_pto", "pto_program", config_name, sim, waves=waves, label=label,
                 params={"program": str(workdir / "image"), "results": str(results_file)})
    results = json.loads(results_file.read_text()) if results_file.exists() else None
    return results, result


def _tmp(build):
    d = build / "pto"
    d.mkdir(parents=True, exist_ok=True)
    return d


def load_inputs(path):
    """{name: array} from an ``.npz`` file."""
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def run_program(program, inputs, *, sim="none", config=None, waves=False, label=None):
    """Assemble ``program`` (a Program, PTO-AS text file path, or an Assembly), bind ``inputs`` and run it.
    Raises AsmError / InputError for the program or its inputs; returns a :class:`Report`."""
    from .parser import parse_file
    from .assembly import Assembly
    if isinstance(program, (str, pathlib.Path)):
        program = parse_file(program)
    asm = program if isinstance(program, Assembly) else program.assemble(config)
    spec = asm.spec or "small"
    image = asm.bind(inputs)
    rows = _rows(image)
    if sim == "none":
        statuses, undefined, outputs = run_golden(image, asm.config)
        for r, s, u in zip(rows, statuses, undefined):
            r.status, r.undefined = s.name, u
        rep = Report(rows, outputs, sim="none")
    else:
        config_name = spec
        golden = run_golden(image, asm.config, _supported(asm.config))
        results, result = run_rtl(image, config_name, sim, waves, label=label or f"pto_{_stem(asm.program)}")
        rep = _rtl_report(image, rows, golden, results, result, sim)
        if waves and result.waves_file.exists():
            rep.waves = str(result.waves_file)
            try:
                from sim.waves import write_gtkw
                write_gtkw(result.waves_file)
            except RuntimeError as e:       # no fst2vcd: the FST is still there, just no save file
                print(f"note: {e}", file=sys.stderr)
        if not result.passed and not rep.problems:
            rep.problems.append(f"the cocotb run failed: {result.summary()} (log: {result.log_file})")
    _expect_problems(rep)
    return rep


def run_images(images, config, config_name, sim="verilator", label="pto_batch", workdir=None):
    """Several bound images (``Assembly.bind``) in one simulator run (``cocotb_tests/test_pto.py``
    ``pto_programs``: one after the other on the same unit, each shadowed by the golden as in
    :func:`run_program`), so the per-run start-up is paid once. Returns (reports, RunResult): a
    :class:`Report` per image the run reached (it stops after the first that failed)."""
    from sim.runner import BUILD, run
    if config_name not in PRESETS:
        raise ValueError(f"the RTL is built for preset configurations only ({', '.join(PRESETS)}), not "
                         f"{config_name!r}")
    workdir = pathlib.Path(workdir) if workdir else pathlib.Path(tempfile.mkdtemp(prefix=f"{label}-", dir=_tmp(BUILD)))
    dirs = [str(image.save(workdir / f"image{k}")) for k, image in enumerate(images)]
    listing, results_file = workdir / "programs.txt", workdir / "results.json"
    listing.write_text("\n".join(dirs) + "\n")
    if results_file.exists():
        results_file.unlink()
    result = run("test_pto", "pto_programs", config_name, sim, label=label,
                 params={"programs": str(listing), "results": str(results_file)})
    all_results = json.loads(results_file.read_text()) if results_file.exists() else []
    reports = []
    for k, image in enumerate(images):
        results = all_results[k] if k < len(all_results) else None
        if results is None and any(not r.ok for r in reports):
            break
        golden = run_golden(image, config, _supported(config))
        rep = _rtl_report(image, _rows(image), golden, results, result, sim)
        _expect_problems(rep)
        reports.append(rep)
        if not rep.ok:
            break
    if not result.passed and reports and all(r.ok for r in reports):
        reports[-1].problems.append(f"the cocotb run failed: {result.summary()} (log: {result.log_file})")
    return reports, result


def _rows(image):
    return [Row(i["line"] if i["line"] else "-", i["op"], i["shape"], i["dtype"], i["expect"]) for i in image.info]


def _rtl_report(image, rows, golden, results, result, sim):
    """The Report of an RTL run of ``image``: ``golden`` = :func:`run_golden`'s answer, ``results`` what the
    testbench wrote for it (None: nothing), ``result`` the RunResult."""
    statuses, undefined, golden_out = golden
    rep = Report(rows, {}, sim=sim, log=str(result.log_file))
    for r, s in zip(rows, statuses):
        r.golden = s.name
    if results is None:
        rep.problems.append(f"the simulation left no results (see {result.log_file})")
        return rep
    for r, c in zip(rows, results["commands"]):
        r.status, r.cycles, r.undefined = c["status"], c["cycles"], c["undefined"]
    if results["error"]:
        rep.problems.append(results["error"] + f" (log: {result.log_file})")
    outs = {o["name"]: o for o in image.outputs}
    for name, hx in results["outputs"].items():
        rep.outputs[name] = decode_output(outs[name], bytes.fromhex(hx))
    if not any(r.undefined for r in rows):
        for name, arr in rep.outputs.items():
            if arr.tobytes() != golden_out[name].tobytes():
                rep.problems.append(f"output '{name}': RTL and golden differ")
    return rep


def _expect_problems(rep):
    for r in rep.rows:
        if r.status != "-" and r.status != r.expect:
            rep.problems.append(f"line {r.line}: {r.op} answered {r.status}"
                                + (f" (expected {r.expect})" if r.expect != "OK" else "")
                                + (": this configuration has no engine for it" if r.status == "UNSUPPORTED" else ""))


def _stem(program):
    return pathlib.Path(program.file).stem if program.file and not program.file.startswith("<") else program.name


def format_table(rows, sim="none"):
    head = ["line", "op", "shape (valid/static)", "type", "status", "cycles"]
    if sim != "none":
        head.append("golden")
    if any(r.undefined for r in rows):
        head.append("undefined bytes")
    data = []
    for r in rows:
        status = r.status + ("" if r.expect == "OK" else f" (expect {r.expect})")
        row = [str(r.line), r.op, r.shape, r.dtype, status, str(r.cycles)]
        if sim != "none":
            row.append(r.golden)
        if "undefined bytes" in head:
            row.append(str(r.undefined))
        data.append(row)
    widths = [max(len(x) for x in col) for col in zip(head, *data)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), "  ".join("-" * w for w in widths)] + [fmt.format(*d) for d in data]
    return "\n".join(lines)


def npz_safe(arrays):
    """The arrays with bfloat16 / fp8 ones (ml_dtypes, which .npz files cannot describe) as unsigned integers
    of the same bits; the runner's inputs accept those bits for bf16 / fp8 arguments."""
    out = {}
    for k, v in arrays.items():
        v = np.asarray(v)
        if type(v.dtype).__module__.startswith("ml_dtypes") or v.dtype.type.__module__.startswith("ml_dtypes"):
            v = v.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[v.dtype.itemsize])
        out[k] = v
    return out


def save_outputs(path, outputs):
    np.savez(path, **npz_safe(outputs))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m sim run", description="Run a PTO-AS program on the RTL and / or "
                                "the golden model.")
    p.add_argument("program", help="a .pto file")
    p.add_argument("--data", help="inputs .npz (one array per function argument, by name)")
    p.add_argument("--sim", default="icarus", choices=["icarus", "verilator", "none"],
                   help="simulator, or none: the golden model alone")
    p.add_argument("--config", help="configuration preset (default: the program's config attribute, else small); "
                   "with --sim none also NAME,field=value,...")
    p.add_argument("--waves", action="store_true", help="write an FST of the RTL run and its GTKWave save file")
    p.add_argument("--out", help="write the outputs to this .npz")
    a = p.parse_args(argv)
    try:
        inputs = load_inputs(a.data) if a.data else {}
        rep = run_program(a.program, inputs, sim=a.sim, config=a.config, waves=a.waves)
    except (AsmError, InputError) as e:
        print(f"{'error: ' if isinstance(e, InputError) else ''}{e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_table(rep.rows, rep.sim))
    if a.out:
        save_outputs(a.out, rep.outputs)
        print(f"outputs: {', '.join(f'{k} {v.shape} {v.dtype}' for k, v in rep.outputs.items())} -> {a.out}")
    if rep.log:
        print(f"simulator log: {rep.log}")
    if rep.waves:
        gtkw = pathlib.Path(rep.waves).with_suffix(".gtkw")
        print(f"waves: {rep.waves}" + (f" (GTKWave save file {gtkw}: gtkwave {rep.waves} {gtkw})" if gtkw.exists() else ""))
    for prob in rep.problems:
        print(f"FAIL: {prob}", file=sys.stderr)
    print("PASS" if rep.ok else "FAIL")
    return 0 if rep.ok else 1
