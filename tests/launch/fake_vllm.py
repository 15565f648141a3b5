"""A light stand-in for `vllm serve` (stdlib only), used beside the real server in launch tests.

Called as `python3 fake_vllm.py serve MODEL [vllm serve options...]`. It prints vLLM-like
startup lines, starts a child process (so teardown has a tree to kill), waits FAKE_READY_S
seconds, then listens on --port and answers GET /health with 200 (the real server also refuses
connections until ready). Headless nodes (`--headless`) never listen. Behaviour knobs, from
the environment: FAKE_READY_S (delay, default 1), FAKE_EXIT_AFTER_S + FAKE_EXIT_CODE (die on
its own), FAKE_IGNORE_TERM=1 (ignore SIGTERM: teardown must escalate to SIGKILL),
FAKE_SETSID_CHILD=1 (the child leaves the process group: teardown must still find it),
FAKE_NEVER_READY=1 (never listen: the startup deadline must fire). It writes its argv and
environment to FAKE_RECORD_DIR/<pid>.json when set.
"""

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time


def option(argv, name, default=None):
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = b"" if self.path == "/health" else b'{"object":"list","data":[]}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        pass


def main():
    argv = sys.argv[1:]
    record = os.environ.get("FAKE_RECORD_DIR")
    if record:
        with open(os.path.join(record, f"{os.getpid()}.json"), "w") as fh:
            json.dump({"argv": sys.argv, "env": dict(os.environ)}, fh)
    if os.environ.get("FAKE_IGNORE_TERM") == "1":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    name = "APIServer" if "--headless" not in argv else "Headless"
    pid = os.getpid()

    def log(msg, stream=sys.stdout):
        stream.write(f"({name} pid={pid}) INFO 11-29 12:00:00 [fake.py:1] {msg}\n")
        stream.flush()

    log("vLLM server version 0.0.0-fake, serving model " + (argv[1] if len(argv) > 1 else "?"))
    log("non-default args: " + json.dumps(argv))
    child = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.2)"],
                             start_new_session=os.environ.get("FAKE_SETSID_CHILD") == "1")
    log(f"started worker pid={child.pid}")
    log("world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:29501 "
        "backend=gloo")
    log("Starting to load model fake...")
    exit_after = os.environ.get("FAKE_EXIT_AFTER_S")
    if exit_after:
        def die():
            time.sleep(float(exit_after))
            log("simulated crash", sys.stderr)
            child.kill()
            os._exit(int(os.environ.get("FAKE_EXIT_CODE", "17")))
        threading.Thread(target=die, daemon=True).start()
    time.sleep(float(os.environ.get("FAKE_READY_S", "1")))
    log("Loading weights took 0.50 seconds")
    if "--headless" in argv or os.environ.get("FAKE_NEVER_READY") == "1":
        while True:
            time.sleep(1)
    server = http.server.ThreadingHTTPServer((option(argv, "--host", "127.0.0.1"),
                                              int(option(argv, "--port", "8000"))), Health)
    log("Starting vLLM server on http://127.0.0.1:" + option(argv, "--port", "8000"))
    sys.stderr.write("INFO:     Application startup complete.\n")
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
