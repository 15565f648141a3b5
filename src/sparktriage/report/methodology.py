"""The methodology and verification text of a report, stated in words (pyperf's honesty).

A reader who never saw sparktriage must be able to tell from the report alone what was
measured, how each number is defined, what its interval means, how the report was cleaned of
secrets and how to check that nobody changed it since it was signed.
"""

from __future__ import annotations

from sparktriage.logs.startup_time import DEFINITION as STARTUP_DEFINITION
from sparktriage.report.inputs import RunInputs
from sparktriage.report.results import WINDOW_S
from sparktriage.signing.sshsig import NAMESPACE
from sparktriage.report.values import as_list, integer, num, text


def _protocol_text(inputs: RunInputs) -> str:
    shapes = set()
    for label in inputs.launches:
        for w in as_list((inputs.launch_doc(label, "launch.json") or {}).get("workloads")):
            if isinstance(w, dict):
                shapes.add((text(w.get("name")) or "?", text(w.get("api")) or "completions",
                            integer(w.get("requests")), integer(w.get("warmup")),
                            integer(w.get("max_tokens")), num(w.get("temperature")),
                            bool(w.get("ignore_eos"))))
    if not shapes:
        return ("The launch documents do not record the workloads; the protocol defaults are one "
                "prompt per workload (code, prose), 15 measured requests each after one warm-up "
                "request, 256 output tokens, temperature 0, one request at a time.")
    parts = []
    for name, api, requests, warmup, max_tokens, temperature, ignore_eos in sorted(shapes, key=str):
        parts.append(f"workload {name}: {requests} measured requests after {warmup} warm-up "
                     f"request(s) on the {api} API, {max_tokens} output tokens each, temperature "
                     f"{temperature:g}" if temperature is not None else f"workload {name}")
        if ignore_eos:
            parts[-1] += ", end-of-sequence ignored so that every request yields the asked length"
    return ("Each launch is measured with a single stream (one request at a time). "
            + "; ".join(parts) + ". Warm-up requests are recorded with the rest but excluded "
            "from every summary; failed and incomplete requests are kept in their own bucket with "
            "their reason and never averaged in.")


def paragraphs(inputs: RunInputs, sections: dict, anonymized: bool) -> list[dict]:
    """[{title, text}] describing how every number in the report was obtained."""
    roof = sections["roofline"]
    out = [
        {"title": "Protocol", "text": _protocol_text(inputs)},
        {"title": "Delivered tokens",
         "text": "Tokens are counted at the client from the stream itself, never from the number "
                 "of chunks: per-chunk token ids when the server sends them, else per-chunk "
                 "logprob entries, else deltas of the cumulative usage, cross-checked against the "
                 "final usage; disagreements are reported. One chunk can carry several tokens "
                 "(speculative decoding)."},
        {"title": "Definitions",
         "text": "Time to first token (TTFT) is the time from sending a request to the arrival of "
                 "the first chunk that carries a token. The decode rate is the number of tokens "
                 "delivered after that first chunk divided by the time from its arrival to the "
                 "arrival of the last token-carrying chunk; it is the headline delivered tok/s. The "
                 "end-to-end rate is all tokens divided by the time from sending to the last "
                 "token's arrival."},
        {"title": "Statistics",
         "text": "Within one launch, a figure is the mean over its measured requests with a 95% "
                 "Student t-interval (mean ± t(0.975, n−1)·s/√n); median and MAD are shown beside "
                 "it. Across launches the launch is the unit of replication: the figure is the mean "
                 "of the launch means with a t-interval over launches, and the within- and "
                 "between-launch variances are reported. Launches are pooled only when model, "
                 "server version, request shape and speculative depth agree. A configuration is "
                 "flagged unstable when its launch means spread more than twice what the "
                 "within-launch noise predicts. Comparisons use Welch's t-test and say \"not "
                 "significant\" at the 5% level when they are not."},
        {"title": "Startup time",
         "text": "Startup time has one definition everywhere (report, launch, session, logs, "
                 f"selfcheck): {STARTUP_DEFINITION}. Its origin is the server's own first log "
                 "line, the only origin a log alone has; the launch's wait from spawning the "
                 "processes to the first answered readiness check is longer (interpreter imports "
                 "before the first line, the poll interval) and is not called startup time. The "
                 "summary shows the median over launches and lists every launch's value."},
        {"title": "Delivered vs logged",
         "text": "The log's peak is the maximum, over its ~10 s stats windows, of the tokens all "
                 "requests generated per second of window; the delivered figure is the mean, over "
                 "one workload's measured requests, of each request's decode rate, and names its "
                 "workload. The two differ for reasons the reconciliation derives from its counts, "
                 "each sentence citing them: concurrent requests summed in one window, chunks "
                 "carrying several tokens, windows half outside the requests, idle windows hidden "
                 "at INFO (the next window's start is then estimated), tokens a window counts that "
                 "arrived in the next one. Speculative accepted tokens are counted by the log, "
                 "/metrics and the client alike. When /metrics rose by exactly the tokens "
                 "delivered, the exact counter is believed over the log's windowed, rounded rate. "
                 "With nothing on the server's side the comparison is \"not measured\"."},
        {"title": "Server-side throughput",
         "text": "vLLM logs an aggregate generation throughput every ~10 s over all requests; idle "
                 "windows are hidden at INFO level, so the log's mean over the windows it shows "
                 "overstates a bursty load, and its peak is not what one client receives. The report "
                 f"shows the log's mean and peak next to the delivered rate, and plots tokens "
                 f"delivered per {WINDOW_S:g} s window (from the recorded chunk arrival times) "
                 "against the log's windows."},
    ]
    if roof["status"] == "present":
        out.append({"title": "Roofline",
                    "text": "Single-stream decode is bound by memory bandwidth: each token needs every "
                            "node to stream its share of the active weights. The ceiling is 1 / "
                            "(active parameter bytes per token per node ÷ memory bandwidth + the "
                            "interconnect's latency floor per token), from the hardware and model "
                            "profiles the deployment names (see the Roofline section). With "
                            "speculative decoding a verify step of k + 1 tokens reads the dense "
                            "weights once and the union of the routed experts its tokens pick, so the "
                            "ceiling at depth k is the mean acceptance length over that step's time, "
                            "not the plain ceiling times the acceptance length."})
    if sections["sweep"]["status"] == "present":
        out.append({"title": "Speculative-depth sweep",
                    "text": "Each depth was launched one or more times; the delivered rate of a depth "
                            "is the mean over its launches with a t-interval over launches. The chosen "
                            "depth is compared with depth 0 and with the runner-up by Welch's t-test "
                            "on launch means. While it holds, a depth model decides: the tokens per "
                            "step of every depth from vLLM's acceptance counts, and a step cost "
                            "fitted to every launch's step time, so that all launches inform every "
                            "depth; it is checked against the launches and rejected (the launches "
                            "then decide depth by depth) when they disagree with it."})
    out.append({"title": "Redaction",
                "text": "Before anything was derived, rendered, copied or signed, every document was "
                        "scrubbed of secrets (API keys and tokens of known shapes, bearer credentials, "
                        "passwords in URLs, private key blocks, values of --api-key-like flags and of "
                        "secret-looking variables), each replaced by a stable REDACTED-<kind>-<n> "
                        "stand-in. "
                        + ("Host names, domains, IP addresses and user names were also replaced by "
                           "stable stand-ins (host-N, 192.0.2.N, user-N); the map back to the "
                           "originals stays with the consultant and is not part of this report."
                           if anonymized else
                           "Host names, IP addresses and user names were not anonymized.")})
    out.append({"title": "Reproducibility",
                "text": "The data/ folder of this report holds, redacted, every file the report was "
                        "built from; `sparktriage report data --out OTHER_DIR` rebuilds the same "
                        "sections, numbers and plots from it. Two builds from the same run directory "
                        "are byte-identical except for the generated_at time (and, through it, the "
                        "digests of the three report files in MANIFEST and the signature); setting "
                        "SOURCE_DATE_EPOCH pins that too."})
    return out


def verification(signing) -> dict:
    """How a recipient verifies the report with stock tools only."""
    commands = ["sha256sum -c MANIFEST    # every file is as listed (integrity only)"]
    if signing is None:
        return {"signed": False, "commands": commands,
                "text": "This report is not signed: MANIFEST shows whether files changed after it "
                        "was written, but nothing shows who wrote it."}
    # The allowed-signers file goes OUTSIDE the report folder: a file added there is, rightly,
    # reported by `sparktriage verify` as "ADDED: allowed_signers".
    commands += [
        "SIGNERS=$(mktemp)    # a file outside the report folder",
        f"echo '{signing.allowed_signers_line}' > \"$SIGNERS\"",
        "awk '{print $3\" \"$4}' \"$SIGNERS\" | ssh-keygen -l -f -    "
        "# must print the fingerprint the signer gave you",
        f"ssh-keygen -Y verify -f \"$SIGNERS\" -I {signing.identity} -n {NAMESPACE} "
        "-s MANIFEST.sig < MANIFEST",
        "sparktriage verify . --allowed-signers \"$SIGNERS\"    # the same, and names added files",
    ]
    return {"signed": True, "identity": signing.identity, "public_key": signing.public_key,
            "fingerprint": signing.fingerprint, "namespace": NAMESPACE,
            "allowed_signers_line": signing.allowed_signers_line, "commands": commands,
            "text": f"MANIFEST lists the SHA-256 of every file in this folder and MANIFEST.sig is "
                    f"an OpenSSH signature of it (ssh-keygen -Y sign, namespace {NAMESPACE}). In "
                    f"the report folder, run the commands below in one shell (OpenSSH 8.1 or newer; "
                    f"they write nothing into the folder). Check the "
                    f"key fingerprint {signing.fingerprint} with the signer over another channel "
                    f"first: a line copied from this report proves only that the files match the "
                    f"key inside the signature, not who holds that key."}
