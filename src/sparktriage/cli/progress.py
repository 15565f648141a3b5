"""Progress lines on stderr for the protocol, launches, the probe and whole sessions.

Each function takes a progress event (name and details, as the core's observers emit them) and
prints one line for the events it knows; the session renderer dispatches to the others.
"""

from __future__ import annotations

from sparktriage.cli import console


def bench_progress(event: str, details: dict) -> None:
    if event == "server":
        version = details["version"] or "unknown version"
        console.info(f"server {details['base_url']} ({version}), model {details['model']}")
    elif event == "capabilities":
        sources = ", ".join(details["sources"]) or "none"
        console.info(f"{details['workload']}: token sources {sources}")
        for note in details["notes"]:
            console.warn(note)
    elif event == "request":
        tag = "warm-up" if details["warmup"] else "request"
        rate = details["decode_tok_s"]
        rate_text = f"{rate:8.1f} tok/s" if rate is not None else "       - tok/s"
        line = (f"{details['workload']:>8} {tag} {details['index'] + 1:>3}/{details['total']}: "
                f"{details['status']:<10} {details['output_tokens']:>5} tok {rate_text}")
        if details["status"] != "ok":
            line += f"  ({details['reason']})"
        console.info(line)


def launch_progress(event: str, details: dict) -> None:
    if event == "launch":
        console.info(f"launch {details['label']} ({details['index']}/{details['count']})")
    elif event == "agents":
        console.info(f"agents running on {', '.join(details['nodes'])}")
    elif event == "stage":
        console.info(f"stage {details['name']}")
    elif event == "process":
        console.info(f"[{details['node']}] started {details['name']} (pid {details['pid']})")
    elif event == "marker":
        console.info(f"[{details['node']}] {details['marker']}")
    elif event == "ready":
        # not the startup time (logs/startup_time.py: from the log, in the summary): the
        # supervisor's wait from spawn to the first answered readiness check
        console.info(f"answering at {details['endpoint']} ({details['after_s']:.1f} s after "
                     "the processes were started)")
    elif event == "failure":
        console.warn(details["reason"])


def probe_progress(event: str, details: dict) -> None:
    if event == "server":
        console.info(f"server {details['base_url']} ({details['version'] or 'unknown version'}), "
                     f"model {details['model']}")
    elif event == "capabilities":
        for line in details["limitations"]:
            console.warn(line)
    elif event == "phase":
        console.info(f"probe: {details['name']} phase, {details['requests']} requests")


def session_progress(event: str, details: dict) -> None:
    if event == "sweep-launch":
        depth = details["depth"]
        console.info(f"launch {details['label']}: "
                     + ("no speculative decoding" if not depth else f"ngram speculation, depth {depth}"))
    elif event == "step":
        console.info(f"step {details['name']}" + (f" ({details['launch']})" if details["launch"] else ""))
    elif event == "step-failed":
        console.warn(f"step {details['name']} failed: {details['reason']}")
    elif event == "warning":
        console.warn(details["text"])
    elif event.startswith("probe-"):
        probe_progress(event[len("probe-"):], details)
    elif event in ("sweep-launch-done", "sweep-decision", "sweep-resume"):
        return
    elif event == "report":
        console.info(f"report {details['dir']} (signature verified: {details['verified']})")
    elif event in ("server", "capabilities", "request"):
        bench_progress(event, details)
    else:
        launch_progress(event, details)


def sweep_progress(event: str, details: dict) -> None:
    """Progress of `sparktriage sweep` (stderr)."""
    if event == "sweep-launch":
        console.info(f"launch {details['label']} ({details['index']}/{details['max']} at most): "
                     f"depth {details['depth']}, {details['why']}")
    elif event == "sweep-launch-done":
        rate = details.get("delivered_tok_s")
        console.info(f"{details['label']} depth {details['depth']}: {details['status']}"
                     + (f", {rate:.2f} tok/s" if rate is not None else "")
                     + (f" ({details['reason']})" if details.get("reason") else ""))
    elif event == "sweep-resume":
        console.info(f"resuming: {details['finished']} finished launch(es) kept"
                     + (f", interrupted {', '.join(details['interrupted'])} not reused"
                        if details["interrupted"] else ""))
    elif event == "warning":
        console.warn(details["text"])
    elif event in ("server", "capabilities", "request"):
        bench_progress(event, details)
    elif event == "sweep-decision" or event.startswith("probe-"):
        return
    else:
        launch_progress(event, details)


def protocol_lines(bench: dict | None) -> list[str]:
    """The protocol's headline per workload (a session summary's `bench`) as plain lines."""
    if not bench:
        return []
    lines = []
    for name, w in bench["workloads"].items():
        rate = w["decode_tok_s"]
        line = f"delivered {name}: "
        if rate["mean"] is not None:
            ci = ("" if rate["ci95_low"] is None
                  else f" (95% CI {rate['ci95_low']:.1f}-{rate['ci95_high']:.1f})")
            line += f"{rate['mean']:.1f} tok/s decode{ci}, n={rate['n']}; "
        elif (w.get("delivered_tokens") or [0, 0])[1] <= 1:
            line += "no decode rate (no answer carried more than one token); "
        else:
            line += "no decode rate (responses arrived in one burst); "
        got = w.get("delivered_tokens")
        if got:
            line += (f"{got[0]} tokens delivered per answer; " if got[0] == got[1]
                     else f"{got[0]} to {got[1]} tokens delivered per answer; ")
        if w["e2e_tok_s"] is not None:
            line += f"{w['e2e_tok_s']:.1f} tok/s end to end; "
        lines.append(line + f"{w['failed']} failed")
    verdict = bench.get("reconcile_verdict")
    if verdict in ("not_measured", "insufficient_data"):
        lines.append("delivered vs logged (/metrics and the log): not measured "
                     "(no usable /metrics scrape and no log)")
    elif verdict:
        lines.append(f"delivered vs logged (/metrics and the log): {verdict.replace('_', ' ')}")
    return lines
