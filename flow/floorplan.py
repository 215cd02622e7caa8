"""Floorplan of the UB's block RAMs for the ECP5-85 flow (:mod:`flow.synth`, step "Floorplan").

The UB is the unit's one large memory: in `default` 64 DP16KD (two read ports, each a copy of the even and
the odd bank, each bank 16 block RAMs of one 16-bit slice of the word), and every engine reads it and the
transfer engine writes it. Left to nextpnr's placer, where these block RAMs land decides the whole
placement, and it varies a lot with the seed: `default` seed 1 put 52 of the 64 in one row across the
whole die (X 4-120), the placement had 426k-449k of wire against 398k-406k at seeds 2 and 3, and router2
did not converge (docs/synthesis.md, "Floorplan"). The floorplan fixes them before placement, as an FPGA
designer would: each read port's block RAMs in one block-RAM row, centred, slice ``k``'s even and odd
bank side by side in slice order (so a byte lane of the word has its four block RAMs, two ports x two
banks, in one column band), port 0 in row 46, port 1 in row 70 (the two middle rows), port 2 in row 22.

It is done by a ``BEL`` attribute on each cell in yosys's JSON, which nextpnr honours as a fixed placement.
A configuration whose port needs more block RAMs than a row has (52; e.g. ``ub_word_bytes=64``) or more
ports than the rows listed is left to the placer, and the result says so.
"""

import json
import re

__all__ = ["EBR_SITES", "EBR_ROWS", "UB_BRAM", "ub_bram_bels", "floorplan_json"]

#: The LFE5U-85's block RAM (EBR) sites along one row, left to right: (X, BEL suffix), as nextpnr-ecp5
#: names them (``X{x}/Y{row}/EBR{i}``): 13 groups of four sites two columns apart, 52 in all.
_GROUPS = ([4, 6, 8, 10], [13, 15, 17, 19], [22, 24, 26, 28], [31, 33, 35, 37], [40, 42, 44, 46],
           [49, 51, 53, 55], [58, 60, 62, 64], [69, 71, 73, 75], [78, 80, 82, 84], [87, 89, 91, 93],
           [96, 98, 100, 102], [105, 107, 109, 111], [114, 116, 118, 120])
EBR_SITES = tuple((x, f"EBR{i}") for g in _GROUPS for i, x in enumerate(g))
#: Block RAM rows (Y) in the order the UB's read ports take them.
EBR_ROWS = (46, 70, 22)
#: The UB's block RAM cells after yosys: ``unit.ub.mem_<bank>.<copy>.<slice>`` (yosys maps each bank
#: once per read port, as copies 0, 1, ...; the copy index is taken as the port) or, with no copies,
#: ``unit.ub.mem_<bank>.<slice>``.
UB_BRAM = re.compile(r"^unit\.ub\.mem_(even|odd)\.(?:(\d+)\.)?(\d+)$")


def ub_bram_bels(cell_names):
    """``({cell: BEL}, note)`` for the UB's block RAM cells among ``cell_names`` (other names are
    ignored). The mapping is empty, and ``note`` says why, when the floorplan does not fit."""
    ports = {}
    for name in cell_names:
        m = UB_BRAM.match(name)
        if m:
            bank, port, k = m.group(1), int(m.group(2) or 0), int(m.group(3))
            ports.setdefault(port, []).append((k, bank == "odd", name))
    if not ports:
        return {}, "no UB block RAM cells"
    if max(ports) >= len(EBR_ROWS):
        return {}, f"{max(ports) + 1} read ports, block RAM rows for {len(EBR_ROWS)}: left to the placer"
    bels = {}
    for port, cells in sorted(ports.items()):
        n = len(cells)
        if n > len(EBR_SITES):
            return {}, (f"read port {port} has {n} block RAMs, a row has {len(EBR_SITES)}: left to the "
                        f"placer")
        first = (len(EBR_SITES) - n) // 2
        for (k, odd, name), (x, ebr) in zip(sorted(cells), EBR_SITES[first:first + n]):
            bels[name] = f"X{x}/Y{EBR_ROWS[port]}/{ebr}"
    rows = ", ".join(f"port {p}: {len(c)} in row {EBR_ROWS[p]}" for p, c in sorted(ports.items()))
    return bels, f"UB block RAMs fixed ({rows})"


def floorplan_json(path):
    """Add the floorplan's ``BEL`` attributes to the top module of yosys's JSON at ``path`` (in place);
    returns ``{"placed": n, "note": ...}``."""
    with open(path) as f:
        design = json.load(f)
    cells = design["modules"]["top"]["cells"]
    bels, note = ub_bram_bels(n for n, c in cells.items() if c["type"] == "DP16KD")
    for name, bel in bels.items():
        cells[name]["attributes"]["BEL"] = bel
    if bels:
        with open(path, "w") as f:
            json.dump(design, f)
    return {"placed": len(bels), "note": note}
