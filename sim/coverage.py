"""Merge the functional coverage of every cocotb run and report it (issue #14).

``python -m sim.coverage [--dir build/run] [--out build/coverage]`` finds every run's ``coverage.yml``
(written by ``cocotb_tests.coverage`` at the end of each simulation) under ``--dir``, merges them with
cocotb-coverage's ``merge_coverage`` into ``<out>/merged.yml``, writes ``<out>/report.txt`` (per item:
bins hit, goal bins, percent; then the HOLES, and the illegal combinations that were sampled, which are
not part of the goal) and ``<out>/coverage.png`` (one bar per item), and prints the totals. The goal is
every bin the ISA makes legal (``cocotb_tests.coverage.goal_bins``).
"""

import argparse
import ast
import pathlib
import sys

from sim.runner import BUILD

__all__ = ["find_files", "merge", "load", "summarize", "report", "plot", "main"]

FILE_NAME = "coverage.yml"

#: Report order of the groups (``cocotb_tests.coverage.GOAL_GROUPS``; ``illegal`` last).
_ORDER = ("opcode_dtype", "status", "mgather", "trowexpand", "tpart", "gemv", "float_classes", "illegal")


def find_files(directory):
    """Every run's coverage file under ``directory``, sorted."""
    return sorted(pathlib.Path(directory).rglob(FILE_NAME))


def merge(files, out):
    """Merge cocotb-coverage YAML ``files`` into ``out`` (hits add up); returns ``out``."""
    from cocotb_coverage.coverage import merge_coverage
    files = [str(f) for f in files]
    if not files:
        raise ValueError("no coverage files to merge")
    out = pathlib.Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    merge_coverage(lambda *a: None, str(out), *files)
    return out


def load(path):
    """``{full item name: {bin: hits}}`` of the coverpoints and crosses of a cocotb-coverage YAML file
    (cross bins, stored as ``str(tuple)``, become ``"a x b x c"``)."""
    import yaml
    with open(path) as f:
        db = yaml.safe_load(f) or {}
    items = {}
    for name, attrs in db.items():
        if "bins:_hits" not in attrs:
            continue
        bins = {}
        for b, hits in attrs["bins:_hits"].items():
            if isinstance(b, str) and b.startswith("("):
                try:
                    b = " x ".join(str(x) for x in ast.literal_eval(b))
                except (ValueError, SyntaxError):
                    pass
            bins[str(b)] = int(hits)
        items[name] = bins
    return items


def summarize(items):
    """Rows ``(root, item, hit bins, goal bins, percent, holes, hits)`` of the goal items and the list
    of illegal items, from :func:`load`'s dict. An item is in the goal unless its group is ``illegal``."""
    goal, illegal = [], []
    def order(name):
        group = name.split(".")[1]
        return (_ORDER.index(group) if group in _ORDER else len(_ORDER), name)
    for name, bins in sorted(items.items(), key=lambda kv: order(kv[0])):
        root, item = name.split(".", 1)
        hit = sum(1 for h in bins.values() if h > 0)
        row = (root, item, hit, len(bins), 100.0 * hit / len(bins) if bins else 100.0,
               [b for b, h in bins.items() if h == 0], bins)
        (illegal if item.startswith("illegal.") else goal).append(row)
    return goal, illegal


def totals(goal):
    hit = sum(r[2] for r in goal)
    size = sum(r[3] for r in goal)
    return hit, size, 100.0 * hit / size if size else 100.0


def report(items, n_files=0, source=""):
    """The text report."""
    goal, illegal = summarize(items)
    hit, size, pct = totals(goal)
    lines = [f"Functional coverage: {n_files} run(s) merged{f' from {source}' if source else ''}",
             f"goal: every bin the ISA makes legal (opcode x type from rtl.isa.instructions, per profile)", "",
             f"TOTAL  {hit} of {size} goal bins hit  ({pct:.1f}%)", ""]
    width = max([len(f"{r[0]}.{r[1]}") for r in goal] + [10])
    lines.append(f"{'item':<{width}}  {'hit':>5}  {'goal':>5}  {'percent':>7}  samples (hit bins; goal = bins)")
    for root, item, h, g, p, _, bins in goal:
        lines.append(f"{root + '.' + item:<{width}}  {h:>5}  {g:>5}  {p:>6.1f}%  {sum(bins.values())}")
    lines += ["", "HOLES (goal bins never hit)"]
    for root, item, h, g, p, holes, _ in goal:
        if holes:
            lines.append(f"  {root}.{item} ({len(holes)}): " + ", ".join(holes))
    if all(not r[5] for r in goal):
        lines.append("  none")
    lines += ["", "ILLEGAL COMBINATIONS SAMPLED (not in the goal; each answered an error status)"]
    for root, item, h, g, p, holes, bins in illegal:
        seen = [f"{b} ({n})" for b, n in bins.items() if n]
        lines.append(f"  {root}.{item}: {h} of {g} sampled" + (": " + ", ".join(seen) if seen else ""))
    return "\n".join(lines) + "\n"


def plot(items, path):
    """A horizontal bar per goal item (percent of its bins hit, hits/goal as the label) into ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    goal, _ = summarize(items)
    hit, size, pct = totals(goal)
    labels = [f"{r[0]}.{r[1]}" for r in goal]
    values = [r[4] for r in goal]
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(goal) + 1.5))
    colors = ["tab:green" if v >= 100 else "tab:orange" if v >= 50 else "tab:red" for v in values]
    y = range(len(goal))
    ax.barh(y, values, color=colors)
    ax.set_yticks(list(y), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 115)
    ax.set_xlabel("bins hit (%)")
    for i, r in enumerate(goal):
        ax.text(min(r[4], 100) + 1, i, f"{r[2]}/{r[3]}", va="center", fontsize=7)
    ax.set_title(f"Functional coverage: {hit}/{size} goal bins ({pct:.1f}%)")
    fig.tight_layout()
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description="Merge every run's functional coverage and report it.")
    p.add_argument("--dir", default=str(BUILD / "run"), help="where the runs are (searched recursively)")
    p.add_argument("--out", default=str(BUILD / "coverage"), help="report directory")
    args = p.parse_args(argv)
    files = find_files(args.dir)
    if not files:
        print(f"no {FILE_NAME} under {args.dir}: run the regression first (make coverage)", file=sys.stderr)
        return 1
    out = pathlib.Path(args.out)
    merged = merge(files, out / "merged.yml")
    items = load(merged)
    text = report(items, len(files), args.dir)
    (out / "report.txt").write_text(text)
    plot(items, out / "coverage.png")
    goal, illegal = summarize(items)
    hit, size, pct = totals(goal)
    holes = sum(len(r[5]) for r in goal)
    print(f"functional coverage: {len(files)} runs, {hit} of {size} goal bins hit ({pct:.1f}%), {holes} holes")
    for root, item, h, g, pc, _, _ in goal:
        print(f"  {root}.{item:<40} {h:>4}/{g:<4} {pc:6.1f}%")
    print(f"report: {out / 'report.txt'}  plot: {out / 'coverage.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
