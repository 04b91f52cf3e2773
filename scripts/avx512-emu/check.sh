#!/usr/bin/env bash
# Checks the embedder's AVX-512 matrix tiles on any x86-64 machine: builds the
# excerpt-embed unit-test binary (the test profile, as `cargo nextest` does), then runs its
# `excerpt_avx512_self_check` inside the Bochs CPU emulator (check_kernel.py), which
# compares every AVX-512 build of the tile with its AVX2 twin bit for bit. Sets up the
# emulator's virtualenv first when it is missing (setup.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
venv="${AVX512_EMU_VENV:-target/avx512-emu}"
if ! "$venv/bin/python" -c "import sys; sys.path.insert(0, sys.argv[1]); import emu" "$here" 2>/dev/null; then
  "$here/setup.sh"
fi
binary=$(cargo test -p excerpt-embed --lib --no-run --locked --message-format=json 2>/dev/null |
  python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "excerpt_embed" \
            and m["profile"]["test"] and m.get("executable"):
        print(m["executable"])
')
if [ -z "$binary" ]; then
  echo "avx512-emu: could not find the excerpt-embed unit-test binary" >&2
  exit 1
fi
"$venv/bin/python" "$here/check_kernel.py" "$binary"
