#!/usr/bin/env bash
# README command 2: set up (first run: about 3 minutes) and run the whole test suite, real vLLM
# included, on two pytest-xdist workers, a module (or a declared set of modules) at a time
# (tests/workergroups.py). SPARKTRIAGE_TEST_WORKERS=N: N workers; 0: one process.
# Extra arguments go to pytest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/provision/setup.sh"
cd "$root"
workers=${SPARKTRIAGE_TEST_WORKERS:-2}
if [[ ! $workers =~ ^[0-9]+$ ]]; then
    echo "test.sh: SPARKTRIAGE_TEST_WORKERS must be a whole number (got '$workers')" >&2
    exit 2
fi
if [[ $workers == 0 ]]; then
    exec .venv/bin/python -m pytest "$@"
fi
exec .venv/bin/python -m pytest -n "$workers" --dist loadscope "$@"
