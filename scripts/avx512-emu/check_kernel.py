"""Runs Excerpt's AVX-512 kernels inside the emulator and checks them against their
AVX2 twins: calls `excerpt_avx512_self_check` (crates/embed/src/local/sgemm/wide.rs) in a
binary built from this repository, which computes the same small products through every
AVX-512 build of the matrix tile and its AVX2 twin, and the same softmax and layer-norm
rows through both, and returns how many output values differ in their bits.

    check_kernel.py BINARY [BINARY ...]

Exit status 0 when every binary's self-check returns 0.
"""

import os
import sys
import time

from emu import Machine

SYMBOL = "excerpt_avx512_self_check"


def check(path):
    machine = Machine(path)
    if SYMBOL not in machine.symbols:
        print(f"{path}: no symbol {SYMBOL} (stripped, or built without the embedder?)")
        return False
    start = time.perf_counter()
    differing = machine.call(SYMBOL, max_instructions=200_000_000)
    seconds = time.perf_counter() - start
    verdict = "ok" if differing == 0 else "FAILED"
    path = os.path.relpath(path)
    print(
        f"{verdict}: {path}: {differing} values differ between the AVX-512 builds (matrix "
        f"tiles, softmax and layer-norm rows) and their AVX2 twins ({machine.instructions:,} instructions emulated in {seconds:.1f} s)"
    )
    return differing == 0


def main(paths):
    if not paths:
        print(__doc__.strip())
        return 2
    results = [check(p) for p in paths]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
