#!/usr/bin/env bash
# README command 1: set up (first run: about 3 minutes) and run the main job on the embedded
# default: a whole session (launch, stall watch, protocol, probe, speculative sweep, signed
# report) on a local CPU vLLM serving the bundled tiny MoE model (docs/demo.md).
# Extra arguments go to `sparktriage demo`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/provision/setup.sh"
cd "$root"
exec .venv/bin/sparktriage demo "$@"
