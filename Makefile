# Tile vector unit: build, simulate, test, benchmark.
#   make sim    the cocotb regression on Icarus against the golden model (waves under build/run/)
#   make test   the whole pytest suite (what .ci/run runs)
# Both bootstrap a fresh Debian/Ubuntu machine: .venv with the package and its dev extras, and Icarus
# Verilog / GTKWave through apt-get when missing.

PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
CONFIG  ?= default
SIM     ?= icarus
SIMCONFIG ?= small
TEST    ?=
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all bootstrap tools sim test test-slow test-fp-exhaustive synth-fp synth synth-check synth-sweep bench verilog lint waves clean help

all: test

help:
	@sed -n '2,6p' Makefile
	@echo "  make verilog [CONFIG=small] [SET=\"ub_bytes=131072 ...\"]  export Verilog to build/vector_unit_<config>.v"
	@echo "  make sim SIM=verilator        the regression on Verilator"
	@echo "  make waves TEST=<name>        open GTKWave on a test's waves with its save file"
	@echo "  make bench                    cycle counts against the hardware bound, every engine (build/bench/)"
	@echo "  make coverage [K=pattern]     regression + merged functional coverage (build/coverage/)"
	@echo "  make fuzz-long                10,000 random PTO-AS instructions on Verilator"
	@echo "  make lint                     Verilator --lint-only on the exported Verilog"
	@echo "  make test-slow                the long sweeps (pytest -m slow), incl. the 2^32 fp16/bf16 pairs"
	@echo "  make test-fp-exhaustive       only the exhaustive fp16/bf16 add/mul sweeps (~25 min on 2 cores)"
	@echo "  make synth-fp                 ECP5 synthesis table of the fp32 adder/multiplier (docs/fp.md)"
	@echo "  make synth CONFIG=small       ECP5-85 cells, Fmax, worst paths of the unit (build/synth/<config>.json)"
	@echo "  make synth-check              fail when small or default is below 100 MHz, ecp5_concurrent below 80,"
	@echo "                                each at its worst seed measured (~45 min)"
	@echo "  make synth-sweep [BASE=small] area/Fmax vs ub_word_bytes and ub_read_ports (build/synth/sweep.*)"
	@echo "  make clean"

# ---- bootstrap -------------------------------------------------------------------------------------
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { \
	  echo "error: cannot create a virtual environment: install python3-venv (apt-get install python3-venv)"; exit 1; }
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	@touch $@

# Icarus for simulation, GTKWave for waves (and fst2vcd for the save files), lz4 for Verilator FST.
tools:
	@missing=""; \
	command -v iverilog >/dev/null || missing="$$missing iverilog"; \
	command -v fst2vcd  >/dev/null || missing="$$missing gtkwave"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else \
	    echo "error: need$$missing; install them with apt-get as root (no root, no sudo here)"; exit 1; fi; \
	  if ! command -v apt-get >/dev/null; then \
	    echo "error: need$$missing and there is no apt-get: install Icarus Verilog 11+ and GTKWave yourself"; exit 1; fi; \
	  echo "installing$$missing with apt-get ..."; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq$$missing liblz4-dev >/dev/null \
	    || { echo "error: apt-get install$$missing failed"; exit 1; }; \
	fi

bootstrap: $(STAMP) tools

# ---- main jobs -------------------------------------------------------------------------------------
sim: bootstrap
	$(BIN)/python -m sim.regress --sim $(SIM) --config $(SIMCONFIG) -j $(JOBS)
	$(BIN)/python -m sim.examples --sim $(SIM) -j $(JOBS)

# Functional coverage (README "Coverage"): the regression without waves (K=<pattern>: only those tests), then
# every run's coverage.yml merged into build/coverage/report.txt and coverage.png; fails when a test failed.
K ?=
.PHONY: coverage
coverage: bootstrap
	@$(BIN)/python -m sim.regress --no-waves --sim $(SIM) --config $(SIMCONFIG) -j $(JOBS) $(if $(K),-k $(K)); \
	status=$$?; $(BIN)/python -m sim.coverage --dir build/run/$(SIM)-$(SIMCONFIG) || exit 1; exit $$status

# --dist worksteal: a worker that runs out of tests takes half of the other's pending ones, so a few long
# items (Verilator builds, the exhaustive sweeps of test-slow) do not pile up on one core.
test: bootstrap
	$(BIN)/python -m pytest -n $(JOBS) --dist worksteal -q

test-slow: bootstrap
	$(BIN)/python -m pytest -n $(JOBS) --dist worksteal -q -m slow

test-fp-exhaustive: bootstrap
	$(BIN)/python -m pytest -m slow tests/fp/test_exhaustive.py -s

synth-fp: bootstrap
	$(BIN)/python -m pip install -q -e ".[synth]"
	$(BIN)/python -m flow.fp

# Whole-unit synthesis (docs/synthesis.md). SYNTHFLAGS passes more options, e.g. "--seed 2 --set ub_read_ports=1".
SYNTHFLAGS ?=
BASE    ?= small

synth: bootstrap
	$(BIN)/python -m pip install -q -e ".[synth]"
	$(BIN)/python -m flow.synth --config $(CONFIG) $(SYNTHFLAGS)

# the placement seeds of synth-check: each configuration's worst of the seeds measured
# (docs/synthesis.md, "Measured" and "The concurrent unit's clock"); every configuration runs, against its
# own clock (flow.synth.clock_mhz: 100 MHz, ecp5_concurrent 80), and the check fails if any fails
CHECK_SEED_SMALL ?= 1
CHECK_SEED_DEFAULT ?= 1
CHECK_SEED_ECP5_CONCURRENT ?= 6
synth-check: bootstrap
	$(BIN)/python -m pip install -q -e ".[synth]"
	s=0; \
	$(BIN)/python -m flow.synth --check --seed $(CHECK_SEED_SMALL) --config small $(SYNTHFLAGS) || s=1; \
	$(BIN)/python -m flow.synth --check --seed $(CHECK_SEED_DEFAULT) --config default $(SYNTHFLAGS) || s=1; \
	$(BIN)/python -m flow.synth --check --seed $(CHECK_SEED_ECP5_CONCURRENT) --config ecp5_concurrent \
	    $(SYNTHFLAGS) || s=1; \
	exit $$s

synth-sweep: bootstrap
	$(BIN)/python -m pip install -q -e ".[synth]"
	$(BIN)/python -m flow.synth --sweep --base $(BASE) $(SYNTHFLAGS)

bench: bootstrap
	$(BIN)/python -m sim.bench

verilog: bootstrap
	$(BIN)/python -m flow.export --config $(CONFIG) $(foreach s,$(SET),--set $(s))

lint: bootstrap
	$(BIN)/python -m flow.lint --config $(CONFIG)

waves:
	@test -n "$(TEST)" || { echo "usage: make waves TEST=<test name> [SIM=icarus] [SIMCONFIG=small]"; exit 1; }
	@dir=build/run/$(SIM)-$(SIMCONFIG)/$(TEST); \
	test -f $$dir/$(TEST).fst || { echo "no waves for $(TEST) in $$dir: run make sim first"; exit 1; }; \
	gtkwave $$dir/$(TEST).fst $$dir/$(TEST).gtkw

clean:
	rm -rf build sim_build results.xml .pytest_cache

# ---- long random stream ----------------------------------------------------------------------------
# make fuzz-long: random PTO programs on Verilator (small) until >= 10,000 instructions have run, every one
# shadowed by the golden model and the whole UB compared after it; prints instructions, mismatches and wall
# time, fails on any mismatch (failing programs: build/pto/fuzz/fuzz_<seed>.pto + .npz, python -m sim run replays).
FUZZ_INSTRUCTIONS ?= 10000
FUZZ_SEED ?= 0
# FUZZFLAGS=--dense: programs whose results, inputs and GM regions overlap earlier instructions' (every
# dependency between pipes; docs/pto-as.md, "Dependencies"); --back-to-back: each program streamed without a
# pause, compared at its end, and the share of instructions that overlapped another pipe reported;
# --faults: GM windows that answer AXI errors mid-program (docs/pto-as.md, "--faults"); --balanced: each
# instruction's pipe drawn first, every pipe as often as the others (more instructions beside another pipe's)
FUZZFLAGS ?=
# FUZZ_CONFIG=small_concurrent: the unit whose pipes run at once (with FUZZFLAGS="--dense --back-to-back --faults
# --balanced")
FUZZ_CONFIG ?= small
.PHONY: fuzz-long
fuzz-long: bootstrap
	$(BIN)/python -m sim fuzz --sim verilator --config $(FUZZ_CONFIG) --instructions $(FUZZ_INSTRUCTIONS) --seed $(FUZZ_SEED) --instrs 8 --batch 1000 $(FUZZFLAGS)
