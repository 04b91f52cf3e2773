"""Runs Excerpt's AVX-512 kernels inside the emulator and checks them against their
AVX2 twins: calls `excerpt_avx512_self_check` (crates/embed/src/local/sgemm/wide.rs) in a
binary built from this repository, which computes the same small products through every
AVX-512 build of the matrix tile and its AVX2 twin, and the same softmax and layer-norm
rows through both, and returns how many output values differ in their bits; then
`excerpt_int16_avx512_self_check(0)` (crates/embed/src/local/sgemm/quant.rs), the same for
the AVX-512BW tile of the queries' integer products against the AVX2 tile. (Its VNNI
build is checked on CPUs that have VNNI only: the emulated CPU lacks it.)

    check_kernel.py BINARY [BINARY ...]

Exit status 0 when every binary's self-check returns 0.
"""

import os
import sys
import time

from emu import Machine

# Each self-check: its symbol, its arguments, and what it compares.
CHECKS = [
    ("excerpt_avx512_self_check", (),
     "the AVX-512 builds (matrix tiles, softmax and layer-norm rows) and their AVX2 twins"),
    ("excerpt_int16_avx512_self_check", (0,),
     "the AVX-512BW integer tile and the AVX2 one"),
]


def check(path):
    machine = Machine(path)
    ok = True
    for symbol, args, what in CHECKS:
        if symbol not in machine.symbols:
            print(f"{path}: no symbol {symbol} (stripped, or built without the embedder?)")
            ok = False
            continue
        start = time.perf_counter()
        differing = machine.call(symbol, args, max_instructions=200_000_000)
        seconds = time.perf_counter() - start
        verdict = "ok" if differing == 0 else "FAILED"
        print(
            f"{verdict}: {os.path.relpath(path)}: {differing} values differ between {what} "
            f"({machine.instructions:,} instructions emulated in {seconds:.1f} s)"
        )
        ok = ok and differing == 0
    return ok


def main(paths):
    if not paths:
        print(__doc__.strip())
        return 2
    results = [check(p) for p in paths]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
