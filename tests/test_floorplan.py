"""flow.floorplan: the UB block RAMs' fixed sites (no tool runs)."""

import json

from flow.floorplan import EBR_ROWS, EBR_SITES, floorplan_json, ub_bram_bels


def names(ports, slices):
    return [f"unit.ub.mem_{b}.{p}.{k}" for p in range(ports) for b in ("even", "odd") for k in range(slices)]


def test_default_shape_two_rows_centred_even_odd_side_by_side():
    bels, note = ub_bram_bels(names(2, 16) + ["unit.gemvengine.buf.mem.0"])
    assert len(bels) == 64 and len(set(bels.values())) == 64
    assert "port 0: 32 in row 46" in note and "port 1: 32 in row 70" in note
    xs = {}
    for name, bel in bels.items():
        x, y, ebr = bel.split("/")
        _, bank, port, k = name.rsplit(".", 3)          # unit.ub, mem_even, port, slice
        assert int(y[1:]) == EBR_ROWS[int(port)]
        xs[(port, bank, int(k))] = int(x[1:])
    for port in "01":
        # slice order left to right, even then odd of a slice next to each other
        seq = [xs[(port, b, k)] for k in range(16) for b in ("mem_even", "mem_odd")]
        assert seq == sorted(seq) and len(set(seq)) == 32
        # centred in the row: as many sites left free on each side
        left = [x for x, _ in EBR_SITES].index(seq[0])
        assert left == len(EBR_SITES) - 1 - [x for x, _ in EBR_SITES].index(seq[-1])
    # a slice's four block RAMs (two ports) share their columns
    assert all(xs[("0", b, k)] == xs[("1", b, k)] for k in range(16) for b in ("mem_even", "mem_odd"))


def test_too_many_for_a_row_or_too_many_ports_left_to_the_placer():
    bels, note = ub_bram_bels(names(2, 32))          # 64 per port: more than a row's 52
    assert bels == {} and "a row has 52" in note
    bels, note = ub_bram_bels(names(len(EBR_ROWS) + 1, 4))
    assert bels == {} and "left to the placer" in note
    assert ub_bram_bels(["unit.checker.x"]) == ({}, "no UB block RAM cells")


def test_one_port_without_copy_index():
    bels, note = ub_bram_bels([f"unit.ub.mem_{b}.{k}" for b in ("even", "odd") for k in range(4)])
    assert len(bels) == 8 and all("/Y46/" in b for b in bels.values()) and "port 0: 8 in row 46" in note


def test_floorplan_json_sets_bel_attributes(tmp_path):
    cells = {n: {"type": "DP16KD", "attributes": {}} for n in names(2, 4)}
    cells["unit.other"] = {"type": "DP16KD", "attributes": {}}
    cells["unit.lut"] = {"type": "LUT4", "attributes": {}}
    p = tmp_path / "top.json"
    p.write_text(json.dumps({"modules": {"top": {"cells": cells}}}))
    r = floorplan_json(str(p))
    assert r["placed"] == 16
    out = json.loads(p.read_text())["modules"]["top"]["cells"]
    assert out["unit.ub.mem_odd.1.3"]["attributes"]["BEL"].startswith("X") and "BEL" not in out["unit.other"]["attributes"]
    assert "/Y70/" in out["unit.ub.mem_even.1.0"]["attributes"]["BEL"]
