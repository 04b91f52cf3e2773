"""Self-test for emu.py: runs the AVX-512 functions of selftest.c in the emulator and checks
their results against values computed here. Usage: selftest.py ELF [ELF...]
(selftest.sh builds the ELFs and calls this)."""

import random
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from emu import CpuException, InstructionLimitExceeded, Machine  # noqa: E402

failures = 0


def check(ok, what):
    global failures
    print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    failures += not ok


def f32s(values):
    return struct.pack(f"<{len(values)}f", *values)


def bits(values):
    return list(struct.unpack(f"<{len(values)}I", f32s(values)))


def ulp_distance(a, b):  # a, b: float32 bit patterns (not NaN)
    def ordered(u):
        return u if u < 0x8000_0000 else 0x8000_0000 - u
    return abs(ordered(a) - ordered(b))


def f16_to_f32_bits(h):
    """Reference for VCVTPH2PS: exact conversion; NaNs keep their payload and are quieted."""
    sign, exp, man = h >> 15, (h >> 10) & 0x1F, h & 0x3FF
    if exp == 0x1F and man:
        return (sign << 31) | 0x7FC0_0000 | (man << 13)
    return struct.unpack("<I", struct.pack("<f", struct.unpack("<e", struct.pack("<H", h))[0]))[0]


def signed64(v):
    return v - (1 << 64) if v >> 63 else v


def expect_error(exc_type, fn, what):
    try:
        fn()
    except exc_type as e:
        check(True, f"{what}: raised {exc_type.__name__}")
        print(f"       {e}")
        return e
    check(False, f"{what}: expected {exc_type.__name__}, nothing raised")


def run(elf):
    print(f"== {elf}")
    m = Machine(elf)
    rng = random.Random(1234)

    # What the emulated CPU says about itself.
    out = m.alloc(bytes(16))

    def cpuid(leaf, sub=0):
        m.call("cpuid", [leaf, sub, out])
        return struct.unpack("<4I", m.read(out, 16))
    brand = b"".join(struct.pack("<4I", *cpuid(0x8000_0002 + i)) for i in range(3)).rstrip(b"\0").decode().strip()
    _, ebx7, ecx7, edx7 = cpuid(7)
    eax71 = cpuid(7, 1)[0]
    flags = {"avx512f": ebx7 >> 16, "avx512dq": ebx7 >> 17, "avx512ifma": ebx7 >> 21,
             "avx512cd": ebx7 >> 28, "avx512bw": ebx7 >> 30, "avx512vl": ebx7 >> 31,
             "avx512vbmi": ecx7 >> 1, "avx512vbmi2": ecx7 >> 6, "avx512vnni": ecx7 >> 11,
             "avx512bitalg": ecx7 >> 12, "avx512vpopcntdq": ecx7 >> 14,
             "avx512fp16": edx7 >> 23, "avx512bf16": eax71 >> 5}
    print(f"  emulated CPU: {brand!r}; CPUID.7 says: "
          + " ".join(name for name, bit in flags.items() if bit & 1))
    check(bool(flags["avx512f"] & 1), "CPUID reports AVX512F")

    # Argument registers and the return value.
    check(m.call("args6", [1, 2, 3, 4, 5, 6]) == 0x06_05_04_03_02_01, "args6: rdi rsi rdx rcx r8 r9 in order")
    check(m.call("args6", [-1, 0, 0, 0, 0, 0]) == (1 << 64) - 1, "args6: negative argument passed as two's complement")

    vals = [rng.randrange(-2**20, 2**20) for _ in range(1001)]  # the lane sums stay within int32
    got = signed64(m.call("sum_i32", [m.alloc(struct.pack("<1001i", *vals)), len(vals)]))
    check(got == sum(vals), f"sum_i32 (vpaddd zmm + reduction), n=1001: {got}")

    # saxpy16, exact: small integers and a=0.5 give exactly representable results.
    # x is placed so that it ends exactly at the end of a page followed by an unmapped page:
    # the masked tail load must not fault (AVX-512 fault suppression). y carries 16 extra
    # elements that the masked store must leave untouched.
    a = m.alloc(f32s([0.5]))
    for n in (0, 1, 5, 15, 16, 17, 31, 33, 100, 1000):
        xs = [float(i - 7) for i in range(n)]
        ys = [float(3 * i) for i in range(n)] + [-1.0] * 16
        x = m.alloc(f32s(xs), align=4)
        y = m.alloc(f32s(ys))
        m.call("saxpy16", [y, x, a, n])
        want = [0.5 * xs[i] + ys[i] for i in range(n)] + [-1.0] * 16
        got = list(struct.unpack(f"<{n + 16}f", m.read(y, 4 * (n + 16))))
        check(got == want, f"saxpy16 exact, n={n} ({m.instructions} instructions)")

    # saxpy16 on random floats: FMA rounds once, so compare with the float64 result
    # (the product is exact in float64) to within 1 ulp of float32.
    n = 1000
    xs = [rng.uniform(-1e3, 1e3) for _ in range(n)]
    ys = [rng.uniform(-1e3, 1e3) for _ in range(n)]
    av = rng.uniform(-4, 4)
    xs, ys, av = (list(struct.unpack(f"<{n}f", f32s(xs))), list(struct.unpack(f"<{n}f", f32s(ys))),
                  struct.unpack("<f", f32s([av]))[0])
    y = m.alloc(f32s(ys))
    m.call("saxpy16", [y, m.alloc(f32s(xs)), m.alloc(f32s([av])), n])
    want = bits([av * xs[i] + ys[i] for i in range(n)])
    got = list(struct.unpack(f"<{n}I", m.read(y, 4 * n)))
    worst = max(ulp_distance(g, w) for g, w in zip(got, want))
    check(worst <= 1, f"saxpy16 random, n={n}: max distance {worst} ulp")

    # f16 -> f32 (VCVTPH2PS zmm) over all 65536 half-precision bit patterns, plus a tail.
    for n in (65536, 65536 - 5):
        src = m.alloc(struct.pack(f"<{n}H", *range(n)))
        dst = m.alloc(bytes(4 * n))
        m.call("f16_to_f32", [dst, src, n])
        got = struct.unpack(f"<{n}I", m.read(dst, 4 * n))
        bad = [h for h in range(n) if got[h] != f16_to_f32_bits(h)]
        check(not bad, f"f16_to_f32, n={n}, every f16 bit pattern"
              + (f"; first mismatch {bad[0]:#06x}: {got[bad[0]]:#010x}" if bad else ""))

    # Speed: about half a million instructions.
    n = 1_000_000
    big_y, big_x = m.alloc(bytes(4 * n)), m.alloc(f32s([1.0] * n))
    t0 = time.perf_counter()
    m.call("saxpy16", [big_y, big_x, a, n])
    dt = time.perf_counter() - t0
    check(m.read(big_y, 4 * n) == f32s([0.5]) * n, f"saxpy16 n={n}: {m.instructions} instructions in {dt:.2f} s "
          f"({m.instructions / dt / 1e6:.2f} M instructions/s)")

    # Failures must be reported clearly, and the machine must stay usable afterwards.
    x = m.alloc(f32s([1.0] * 17), align=4)
    e = expect_error(CpuException, lambda: m.call("saxpy16_overread", [m.alloc(bytes(68)), x, a, 17]),
                     "unmasked load past the end of a buffer")
    check(e is not None and e.vector == 14 and e.cr2 == x + 68, "  ... it is a #PF on the guard page after x")
    e = expect_error(CpuException, lambda: m.call("trap"), "ud2")
    check(e is not None and e.vector == 6 and e.insn_bytes[:2] == b"\x0f\x0b", "  ... it is #UD at the ud2")
    if "calls_missing" in m.symbols:
        e = expect_error(CpuException, lambda: m.call("calls_missing"), "call to an undefined symbol")
        check(e is not None and "not_in_this_object" in str(e), "  ... the message names the symbol")
    expect_error(InstructionLimitExceeded, lambda: m.call("saxpy16", [big_y, big_x, a, n], max_instructions=1000),
                 "instruction limit")
    check(m.call("args6", [1, 1, 1, 1, 1, 1]) == 0x01_01_01_01_01_01, "machine still usable after errors")


for path in sys.argv[1:]:
    run(path)
print("self-test:", "PASSED" if not failures else f"{failures} FAILED")
sys.exit(1 if failures else 0)
