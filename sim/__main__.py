"""``python -m sim COMMAND``: ``run`` (a PTO-AS program, sim/programs/run.py), ``asm`` (print the assembled
commands), ``fuzz`` (constrained-random PTO programs, sim/programs/fuzz.py)."""

import sys


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"run": "sim.programs.run", "asm": "sim.programs.asm", "fuzz": "sim.programs.fuzz"}
    if not argv or argv[0] not in commands:
        print("usage: python -m sim {run,asm,fuzz} ...  (python -m sim run --help)", file=sys.stderr)
        return 2
    import importlib
    return importlib.import_module(commands[argv[0]]).main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
