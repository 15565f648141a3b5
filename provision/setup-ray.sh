#!/usr/bin/env bash
# Add Ray (provision/ray-lock.txt) and the test-bed Ray shim to the vLLM CPU venv.
#
# Usage: bash provision/setup-ray.sh [VENV_DIR]      (default: .venv-vllm at the repository root)
# Idempotent and additive: packages already in the venv are never upgraded or removed (pip
# --no-deps with exact pins; the step stops if a dry run would change anything installed).
# The shim (provision/rayshim/) does nothing unless SPARKTRIAGE_TESTBED_RAY_SHIM is set;
# docs/testbed.md, "Ray in the test bed".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
venv=${1:-${SPARKTRIAGE_VLLM_VENV:-$root/.venv-vllm}}
stamp="$venv/.sparktriage-ray-ready"
purelib=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
shim=sparktriage_testbed_rayshim

install_shim() {
  cmp -s "$here/rayshim/$shim.py" "$purelib/$shim.py" \
    || cp "$here/rayshim/$shim.py" "$purelib/$shim.py"
  [ "$(cat "$purelib/$shim.pth" 2>/dev/null)" = "import $shim" ] \
    || printf 'import %s\n' "$shim" > "$purelib/$shim.pth"
}

if [ -f "$stamp" ] && cmp -s "$here/ray-lock.txt" "$stamp" \
    && "$venv/bin/python" -c 'import ray' 2>/dev/null; then
  install_shim
  exit 0
fi

# a dry run first: anything but new packages (an upgrade or a downgrade) stops here
report=$(mktemp)
trap 'rm -f "$report"' EXIT
"$venv/bin/pip" install --dry-run --quiet --no-deps --disable-pip-version-check --ignore-installed \
    --report "$report" -r "$here/ray-lock.txt" >/dev/null
changes=$("$venv/bin/python" - "$report" "$purelib" <<'PY'
import json, sys
from importlib.metadata import PathDistribution, distributions
installed = {d.metadata["Name"].lower().replace("_", "-"): d.version
             for d in distributions(path=[sys.argv[2]])}
for item in json.load(open(sys.argv[1]))["install"]:
    name = item["metadata"]["name"].lower().replace("_", "-")
    version = item["metadata"]["version"]
    if name in installed and installed[name] != version:
        print(f"{name} {installed[name]} -> {version}")
PY
)
if [ -n "$changes" ]; then
  echo "testbed: installing Ray would change packages already in $venv: $changes" >&2
  exit 1
fi
echo "testbed: installing Ray 2.58.1 into $venv (78 MB download, about 240 MB installed)" >&2
"$venv/bin/pip" install --progress-bar off --disable-pip-version-check --no-deps \
    -r "$here/ray-lock.txt" 2>&1 \
  | { grep --line-buffered -E '^(Collecting|Installing|Successfully|ERROR)' || true; } \
  | sed -u 's/^/testbed: /' >&2
"$venv/bin/python" -c 'import ray; assert ray.__version__ == "2.58.1", ray.__version__'
install_shim
cp "$here/ray-lock.txt" "$stamp"
echo "testbed: ray 2.58.1 ready in $venv" >&2
