#!/usr/bin/env bash
# README command 2: set up (first run: about 3 minutes) and run the whole test suite, real vLLM
# included. Extra arguments go to pytest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/provision/setup.sh"
cd "$root"
exec .venv/bin/python -m pytest "$@"
