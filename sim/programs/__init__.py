"""PTO-AS programs on the unit: ``python -m sim run`` (:mod:`.run`: a program on the golden model and the
RTL, bit for bit), ``asm`` (:mod:`.asm`: the assembled commands), ``fuzz`` (:mod:`.fuzz`: constrained-random
programs); :mod:`.cli` turns a user's mistakes into one message and exit code 2. The assembler itself is
the package ``pto``."""
