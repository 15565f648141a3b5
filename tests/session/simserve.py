"""`vllm serve` for the session tests until the simulator's own `sparktriage.sim.vllm` lands:
takes vLLM's command line (`serve MODEL --port P --host H [--served-model-name N] ...`),
prints vLLM-0.32-style startup lines, then becomes (exec) the project's simulator,
`python -m sparktriage simulate`, serving the OpenAI API and /health on that port. Knobs from
the environment: SIMSERVE_RATE (tok/s, default 400), SIMSERVE_START_S (seconds of "loading",
default 0.5)."""

import os
import sys
import time


def option(argv, name, default=None):
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def main(argv):
    assert argv and argv[0] == "serve", argv
    model = argv[1]
    port = option(argv, "--port", "8000")
    host = option(argv, "--host", "127.0.0.1")
    name = option(argv, "--served-model-name", model)
    start_s = float(os.environ.get("SIMSERVE_START_S", "0.5"))
    say = lambda text: print(f"(APIServer pid={os.getpid()}) INFO 12-01 10:00:00 [api_server.py:1] {text}", flush=True)
    say(f"vLLM API server version 0.32.0")
    say(f"non-default args: {{'model': '{model}', 'port': {port}}}")
    time.sleep(start_s / 2)
    say("Loading weights took %.2f seconds" % (start_s / 2))
    time.sleep(start_s / 2)
    say(f"Starting vLLM API server 0 on http://{host}:{port}")
    os.execv(sys.executable, [sys.executable, "-m", "sparktriage", "simulate", "--port", port,
                              "--host", host, "--model", name,
                              "--rate", os.environ.get("SIMSERVE_RATE", "400")])


if __name__ == "__main__":
    main(sys.argv[1:])
