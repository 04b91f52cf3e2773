#!/usr/bin/env bash
# Builds and installs the Python package (crates/python) into a fresh virtualenv with the
# one `pip install` the README documents, then runs its pytest suite against a real
# index, the real model and the real langchain-core and llama-index-core from PyPI.
#
# The wheel is built with cargo's dev profile (dependencies optimised, as in every test
# build) so it reuses what `cargo nextest` already compiled; users get a release build.
# Set EXCERPT_PY_PROFILE=release to build the wheel the way a user's install does.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${EXCERPT_PY_VENV:-target/python-venv}"
profile="${EXCERPT_PY_PROFILE:-dev}"
# The frameworks at the versions this suite last passed with; pip resolves the rest.
frameworks=(pytest==9.2.0 langchain-core==1.8.3 llama-index-core==0.14.25)

t0=$(date +%s)
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
py="$(cd "$venv" && pwd)/bin/python"
"$py" -m pip install --quiet --disable-pip-version-check "${frameworks[@]}"
t1=$(date +%s)
echo "python: virtualenv with pytest, langchain-core, llama-index-core in $((t1 - t0)) s"

# The documented install, with the cargo profile passed through to maturin.
MATURIN_PEP517_ARGS="--profile $profile" \
  "$py" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps ./crates/python
t2=$(date +%s)
echo "python: package built ($profile profile) and installed in $((t2 - t1)) s"

# Run from outside the source tree so `import excerpt` is the installed package. The
# PDF tests run PDFs through this checkout's binary too (its caged worker), when built.
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$(pwd)/$target" ;; esac
bin="$target/debug/excerpt"
if [ -z "${EXCERPT_BIN:-}" ] && [ -x "$bin" ]; then
  export EXCERPT_BIN="$bin"
fi
(cd crates/python/tests && "$py" -m pytest -q -p no:cacheprovider "$@")
echo "python: tests ran in $(( $(date +%s) - t2 )) s"
