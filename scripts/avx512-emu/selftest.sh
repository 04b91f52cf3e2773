#!/usr/bin/env bash
# Builds selftest.c twice, as a shared object and as a fixed-address static executable
# (no libc in either), and runs selftest.py on both inside the emulator.
# Needs setup.sh to have run; honours AVX512_EMU_VENV like setup.sh does.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
venv="${AVX512_EMU_VENV:-target/avx512-emu}"
if [ ! -x "$venv/bin/python" ]; then
  echo "no virtualenv at $venv: run scripts/avx512-emu/setup.sh first" >&2
  exit 1
fi
out="$venv/selftest"
mkdir -p "$out"
flags=(-O2 -mavx512f -mfma -fno-stack-protector -nostdlib)
"${CC:-gcc}" "${flags[@]}" -fPIC -shared -o "$out/selftest.so" "$here/selftest.c"
# -e only silences the missing _start warning: emu.py never uses the entry point.
"${CC:-gcc}" "${flags[@]}" -DNO_EXTERN -static -no-pie -Wl,-e,saxpy16 -o "$out/selftest-static" "$here/selftest.c"
"$venv/bin/python" "$here/selftest.py" "$out/selftest.so" "$out/selftest-static"
