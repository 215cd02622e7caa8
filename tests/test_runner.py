"""``sim.runner.run``: two runs of one label (two fuzz streams started from one seed, say) share a run
directory, so they take turns in it: neither deletes the other's files while it runs."""

import threading
import time

import sim.runner as runner


class _SlowSimulator:
    """A stand-in for cocotb's runner: writes a marker, waits, and reports a pass only if its marker is still
    there (the other run's clean-up would have deleted it)."""

    def __init__(self):
        self.overlaps = 0
        self.active = 0
        self.guard = threading.Lock()

    def test(self, *, test_dir, results_xml, extra_env, **_):
        with self.guard:
            self.active += 1
            self.overlaps += self.active > 1
        marker = test_dir / f"marker_{extra_env['TILEVEC_TAG']}"
        marker.write_text("mine")
        time.sleep(0.3)
        ok = marker.exists()
        with open(results_xml, "w") as f:
            f.write('<testsuites><testsuite><testcase name="t" classname="c">'
                    + ("" if ok else '<failure message="the other run deleted my files"/>')
                    + "</testcase></testsuite></testsuites>")
        with self.guard:
            self.active -= 1
        return results_xml


def test_runs_of_one_label_take_turns(tmp_path, monkeypatch):
    fake = _SlowSimulator()
    monkeypatch.setattr(runner, "BUILD", tmp_path)
    monkeypatch.setattr(runner, "build", lambda *a, **k: (fake, tmp_path / "sim"))
    results = {}

    def one(tag):
        results[tag] = runner.run("test_pto", "pto_programs", "small", "verilator", label="same",
                                  params={"tag": tag})

    threads = [threading.Thread(target=one, args=(tag,)) for tag in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake.overlaps == 0
    assert all(r.passed for r in results.values()), {k: r.summary() for k, r in results.items()}
