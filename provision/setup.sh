#!/usr/bin/env bash
# Set up everything sparktriage's demo and tests need on a fresh machine (idempotent):
#   - Debian packages the tests use as real parts (OpenSSH server, poppler's PDF tools)
#   - .venv: sparktriage itself with its test dependencies, and its compiled log scanner
#     (a C extension built by pip; needs a C compiler and the Python headers)
#   - .venv-vllm: the real vLLM CPU build (provision/setup-vllm.sh)
#   - Ray in .venv-vllm, and the test-bed Ray shim (provision/setup-ray.sh)
#   - .testbed/models: the bundled tiny models (src/sparktriage/testbed/recipes/make_tiny_model.py)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python=${PYTHON:-python3.11}

# The real vLLM's environment installs beside the rest (it needs only $python): on two cores the
# two pip installs overlap, about a minute off a fresh set-up.
# It runs in its own process group, stopped with everything it started if this script fails first.
PYTHON="$python" setsid bash provision/setup-vllm.sh 2> >(grep --line-buffered -v "is ignored" >&2) &
vllm_setup=$!
trap 'kill -- -"$vllm_setup" 2>/dev/null || true' EXIT

need=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v pdftotext >/dev/null 2>&1 || need+=(poppler-utils)
command -v ssh-keygen >/dev/null 2>&1 && command -v ssh-agent >/dev/null 2>&1 || need+=(openssh-client)
# stall reproductions (tests/stalls/test_reproductions.py): ext4 loop volumes
command -v mkfs.ext4 >/dev/null 2>&1 || [ -x /usr/sbin/mkfs.ext4 ] || need+=(e2fsprogs)
command -v losetup >/dev/null 2>&1 || [ -x /usr/sbin/losetup ] || need+=(mount)
[ -f /usr/share/dict/words ] || need+=(wamerican)  # word list for the probe's dictionary check
command -v tmux >/dev/null 2>&1 || need+=(tmux)  # the session's live view, recorded (tests/session)
command -v chromium >/dev/null 2>&1 || need+=(chromium)  # the HTML report read by a real headless browser (tests/report)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${need[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; }
  else
    echo "setup: please install ${need[*]} (tests that need them will fail)" >&2
  fi
fi

# The compiled log scanner (src/fastscan/*.c) needs a compiler and headers;
# without them the install still works and `sparktriage logs` uses its pure-Python scanner.
headers=$("$python" -c 'import os, sysconfig; print(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null || true)
cneed=()
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || cneed+=(gcc)
[ -n "$headers" ] && [ -f "$headers" ] || cneed+=("$(basename "$python")-dev")
if [ ${#cneed[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing ${cneed[*]} (for the compiled log scanner)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${cneed[@]}" >/dev/null 2>&1 \
    || echo "setup: could not install ${cneed[*]}; sparktriage logs will use its pure-Python scanner" >&2
fi

if [ ! -x .venv/bin/sparktriage ] || [ pyproject.toml -nt .venv/.sparktriage-installed ] \
    || [ setup.py -nt .venv/.sparktriage-installed ] \
    || [ -n "$(find src/fastscan -newer .venv/.sparktriage-installed 2>/dev/null)" ]; then
  echo "setup: installing sparktriage into .venv" >&2
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -e '.[test]' 2>&1 | grep --line-buffered -v "is ignored" >&2 || true
  .venv/bin/sparktriage --version >/dev/null
  .venv/bin/python -c 'from sparktriage.logs import compiled; assert compiled.scanner()' 2>/dev/null \
    || echo "setup: the compiled log scanner was not built; sparktriage logs uses the pure-Python one" >&2
  touch .venv/.sparktriage-installed
fi

wait "$vllm_setup" || { echo "setup: the vLLM test bed did not install (its lines above)" >&2; exit 1; }
trap - EXIT
bash provision/setup-ray.sh 2> >(grep --line-buffered -v "is ignored" >&2)  # Ray + the test-bed shim (docs/testbed.md)

for kind in main draft; do
  name=tiny-llama; flag=
  [ "$kind" = draft ] && { name=tiny-draft; flag=--draft; }
  if [ ! -f ".testbed/models/$name/config.json" ]; then
    .venv-vllm/bin/python src/sparktriage/testbed/recipes/make_tiny_model.py ".testbed/models/$name" $flag >&2
  fi
done
# the demo's model (trained here, committed) where an installed package finds it
if [ ! -f .testbed/models/tiny-moe/model.safetensors ]; then
  mkdir -p .testbed/models/tiny-moe && cp provision/garbage/model/* .testbed/models/tiny-moe/
fi
echo "setup: ready" >&2
