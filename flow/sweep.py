"""How area and Fmax grow with ``ub_word_bytes`` (16, 32, 64) and ``ub_read_ports`` (1, 2, 3).

``python -m flow.synth --sweep [--base small] [--reuse]`` (``make synth-sweep``): two one-dimensional
sweeps around the base preset (the other field keeps the base's value; ``axi_data_bits`` follows
``ub_word_bytes``), each point a full synthesis (``flow.synth.run_all``: all points elaborated first, from
one source tree). Writes ``sweep.json``, ``sweep.md`` (tables) and ``sweep.png`` (plot) to the output
directory. A point that fails (elaboration, or a tool: e.g. a design too big for the device) is recorded
with its error and the sweep goes on; the exit code is then 1.
"""

import json
import os

from flow.synth import FMAX_BAR_MHZ, config_from
from flow.tools import parse_stat

__all__ = ["sweep_points", "write_sweep", "SWEEPS"]

#: LUT4 sites of the LFE5U-85F (nextpnr's TRELLIS_COMB capacity, which LUT4s and carry halves share).
ECP5_85_LUTS = 83640
#: field -> values swept (in run order: the largest design, 64-byte words, comes last).
SWEEPS = {"ub_read_ports": (1, 2, 3), "ub_word_bytes": (16, 32, 64)}


def _row(field, value, r):
    c = r["cells"]
    groups = r["paths"]["groups"]
    worst = f"{groups[0]['start']} -> {groups[0]['end']}" if groups else ""
    return {"field": field, "value": value, "tag": r["tag"], "LUT4": c["LUT4"], "CCU2C": c["CCU2C"],
            "FF": c["TRELLIS_FF"], "unit_FF": r["unit_ffs"], "DP16KD": c["DP16KD"],
            "MULT18X18D": c["MULT18X18D"], "fmax_mhz": r["fmax_mhz"], "worst_group": worst,
            "seconds": r["seconds"]["total"], "config_fields": r["config_fields"],
            "git": r["git"].get("commit"), "rtl_changes_not_committed": r["git"].get("rtl_changes_not_committed")}


def _table(rows, field, base):
    out = [f"### {field} (base `{base}`; the other field at the base's value)", "",
           f"| {field} | LUT4 | CCU2C | FF (unit) | DP16KD | MULT18X18D | Fmax (MHz) | worst group | s |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["field"] != field:
            continue
        if "error" in r:
            why = r["error"].splitlines()[0].split(" (log: ")[0]
            if "LUT4" in r:                            # yosys finished: its counts, then why nextpnr did not
                out.append(f"| {r['value']} | {r['LUT4']} | {r['CCU2C']} | {r['FF']} | {r['DP16KD']} | "
                           f"{r['MULT18X18D']} | failed | {why} | |")
            else:
                out.append(f"| {r['value']} | failed: {why} |||||||")
            continue
        out.append(f"| {r['value']} | {r['LUT4']} | {r['CCU2C']} | {r['FF']} ({r['unit_FF']}) | {r['DP16KD']} | "
                   f"{r['MULT18X18D']} | {r['fmax_mhz']:.1f} | {r['worst_group']} | {r['seconds']} |")
    return out


def _plot(rows, base, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, len(SWEEPS), figsize=(5 * len(SWEEPS), 7), sharex="col")
    for col, field in enumerate(SWEEPS):
        pts = [r for r in rows if r["field"] == field and "LUT4" in r]      # yosys-only points have area
        xs = [r["value"] for r in pts]
        timed = [r for r in pts if r.get("fmax_mhz")]
        area = axes[0][col]
        area.plot(xs, [r["LUT4"] for r in pts], "o-", label="LUT4")
        area.plot(xs, [r["FF"] for r in pts], "s-", label="FF")
        if max(r["LUT4"] for r in pts) > ECP5_85_LUTS / 2:
            area.axhline(ECP5_85_LUTS, color="tab:blue", linestyle=":", linewidth=1)
            area.annotate("ECP5-85: 83,640 LUT4", (xs[0], ECP5_85_LUTS), va="bottom", fontsize=8)
        area.set_ylabel("cells")
        area.set_ylim(bottom=0)
        area.set_title(f"{field} (base {base})")
        area.grid(True, alpha=0.3)
        brams = area.twinx()
        brams.plot(xs, [r["DP16KD"] for r in pts], "^--", color="tab:green", label="DP16KD")
        brams.set_ylabel("DP16KD")
        brams.set_ylim(bottom=0)
        lines = area.get_legend_handles_labels()
        more = brams.get_legend_handles_labels()
        area.legend(lines[0] + more[0], lines[1] + more[1], loc="center left")
        fmax = axes[1][col]
        fmax.plot([r["value"] for r in timed], [r["fmax_mhz"] for r in timed], "o-", color="tab:red")
        for r in pts:
            if not r.get("fmax_mhz"):
                fmax.annotate("did not place\n(see table)", (r["value"], 5), ha="center", fontsize=8)
        fmax.axhline(FMAX_BAR_MHZ, color="gray", linestyle=":", label=f"{FMAX_BAR_MHZ:.0f} MHz bar")
        fmax.set_ylim(bottom=0)
        fmax.set_xlabel(field)
        fmax.set_ylabel("Fmax (MHz)")
        fmax.set_xticks(SWEEPS[field])
        fmax.grid(True, alpha=0.3)
        fmax.legend(loc="upper right")
    if "ub_word_bytes" in SWEEPS:
        for ax in axes[:, list(SWEEPS).index("ub_word_bytes")]:
            ax.set_xscale("log", base=2)
            ax.set_xticks(SWEEPS["ub_word_bytes"], [str(v) for v in SWEEPS["ub_word_bytes"]])
    fig.suptitle("tilevec on ECP5-85 (speed 8, nextpnr router2): area and Fmax")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def sweep_points(base):
    """``(field, value, sets)`` of every point of both sweeps around preset ``base``."""
    base_cfg, _ = config_from(base)
    return [(field, value, [] if getattr(base_cfg, field) == value else [f"{field}={value}"])
            for field, values in SWEEPS.items() for value in values]


def write_sweep(base, seed, out_root, points, tags, results, errors):
    """sweep.json/.md/.png from the results of ``points`` (``tags``: their tags); 0 if every point worked."""
    rows = []
    for (field, value, _), tag in zip(points, tags):
        if tag in results:
            rows.append(_row(field, value, results[tag]))
        else:
            row = {"field": field, "value": value, "tag": tag, "error": errors.get(tag, "?")}
            stat = os.path.join(out_root, tag, "stat.txt")
            if os.path.exists(stat) and os.path.getmtime(stat) >= os.path.getmtime(os.path.join(out_root, tag, "top.il")):
                with open(stat) as f:
                    c = parse_stat(f.read())
                row.update(LUT4=c["LUT4"], CCU2C=c["CCU2C"], FF=c["TRELLIS_FF"], DP16KD=c["DP16KD"],
                           MULT18X18D=c["MULT18X18D"], yosys_only=True)
            rows.append(row)
    with open(os.path.join(out_root, "sweep.json"), "w") as f:
        json.dump({"base": base, "seed": seed, "sweeps": {k: list(v) for k, v in SWEEPS.items()}, "rows": rows},
                  f, indent=1)
    md = [f"## UB sweep on `{base}` (ECP5-85 speed 8, router2, seed {seed})", ""]
    for field in SWEEPS:
        md += _table(rows, field, base) + [""]
    commits = sorted({(r.get("git"), tuple(r.get("rtl_changes_not_committed") or ())) for r in rows if "git" in r})
    md.append("FF (unit): flip-flops without the shift-chain wrapper's. Worst group: start -> end module of "
              "the slowest path. s: seconds for the whole point (elaboration, yosys, nextpnr, paths).")
    md.append("")
    md.append("Source tree: " + "; ".join(f"git {c}" + (f" + uncommitted {', '.join(d)}" if d else "")
                                          for c, d in commits))
    with open(os.path.join(out_root, "sweep.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    _plot(rows, base, os.path.join(out_root, "sweep.png"))
    print("\n".join(md))
    print(f"wrote {out_root}/sweep.json, sweep.md, sweep.png")
    return 1 if any("error" in r for r in rows) else 0
