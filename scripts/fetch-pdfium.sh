#!/usr/bin/env bash
# Fetches PDFium (libpdfium.so, Chrome's PDF engine) into the cache
# ($EXCERPT_HOME/pdfium/libpdfium.so, EXCERPT_HOME defaulting to ~/.cache/excerpt), where
# `excerpt ingest` looks for it when EXCERPT_PDFIUM is not set. The library ships inside
# the PyPI wheel pypdfium2 (pypdfium2_raw/libpdfium.so); pip only downloads the wheel
# (no install, no dependencies), pinned by version and SHA-256 (--require-hashes), and
# the unpacked library must match its own SHA-256 below, else nothing is installed.
# Does nothing when the library is already there with that hash. Linux x86_64 only.
set -euo pipefail
home="${EXCERPT_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/excerpt}"
dest="$home/pdfium"
version="5.15.2"
wheel="pypdfium2-$version-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
wheel_sha="dc31aea5b0fb9fefc9b537a65f4113980b2c40798445736a7e6565bc85161e37"
lib_sha="c76dc0f7839644bfa7c3e3107a6068df714e339c861bb7d4519907b821d427f9"

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "fetch-pdfium: only Linux x86_64 is pinned here; set EXCERPT_PDFIUM to a libpdfium for your platform" >&2
  exit 1
fi
command -v sha256sum >/dev/null || { echo "fetch-pdfium: sha256sum is needed" >&2; exit 1; }
verify() { printf '%s  %s\n' "$lib_sha" "$1" | sha256sum --check --quiet --strict; }

if [ -f "$dest/libpdfium.so" ]; then
  if verify "$dest/libpdfium.so" >/dev/null 2>&1; then
    exit 0
  fi
  echo "fetch-pdfium: $dest/libpdfium.so does not match the pinned SHA-256; fetching again" >&2
fi
command -v python3 >/dev/null || { echo "fetch-pdfium: python3 is needed (to run pip)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch-pdfium: downloading pypdfium2 $version from PyPI into $dest" >&2
printf 'pypdfium2==%s --hash=sha256:%s\n' "$version" "$wheel_sha" >"$tmp/requirements.txt"
python3 -m pip download --quiet --no-deps --disable-pip-version-check --require-hashes \
  --only-binary=:all: --platform manylinux_2_17_x86_64 \
  -r "$tmp/requirements.txt" -d "$tmp/wheel"
python3 - "$tmp/wheel/$wheel" "$tmp/libpdfium.so" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("pypdfium2_raw/libpdfium.so") as src, \
        open(sys.argv[2], "wb") as out:
    shutil.copyfileobj(src, out)
PY
if ! verify "$tmp/libpdfium.so"; then
  echo "fetch-pdfium: SHA-256 mismatch in the unpacked libpdfium.so; nothing installed" >&2
  exit 1
fi
mkdir -p "$dest"
mv "$tmp/libpdfium.so" "$dest/libpdfium.so.partial"
mv "$dest/libpdfium.so.partial" "$dest/libpdfium.so"
echo "fetch-pdfium: done (hashes verified)" >&2
