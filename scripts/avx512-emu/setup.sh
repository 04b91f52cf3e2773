#!/usr/bin/env bash
# Creates the Python environment emu.py runs in: a virtualenv with bochscpu-python 0.4.0
# and, if this system's glibc is too old for the wheel's native module, a small shim
# (glibc238_shim.c) that emu.py loads before importing it. Safe to run again.
#
#   AVX512_EMU_VENV    virtualenv directory (default: target/avx512-emu, relative to the repo root)
#   AVX512_EMU_PYTHON  interpreter to create it with (default: python3; the wheel needs >= 3.11)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
venv="${AVX512_EMU_VENV:-target/avx512-emu}"

if [ ! -x "$venv/bin/python" ]; then
  "${AVX512_EMU_PYTHON:-python3}" -m venv "$venv"
fi
py="$venv/bin/python"
"$py" -m pip install --quiet --disable-pip-version-check bochscpu-python==0.4.0

shim="$venv/lib/avx512-emu-shim.so"
rm -f "$shim"
if "$py" -c 'import bochscpu' 2>/dev/null; then
  echo "avx512-emu: bochscpu loads as is; no glibc shim needed"
else
  "${CC:-cc}" -O2 -shared -fPIC -o "$shim" "$here/glibc238_shim.c"
  echo "avx512-emu: built $shim (glibc older than 2.38)"
fi
# emu.py loads the shim itself; importing it proves the environment works.
"$py" -c "import sys; sys.path.insert(0, sys.argv[1]); import emu" "$here"
echo "avx512-emu: ready: $venv/bin/python (run scripts/avx512-emu/selftest.sh)"
