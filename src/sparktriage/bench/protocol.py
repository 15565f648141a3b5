"""Run the delivered-token protocol against one server launch and store every raw record.

Per workload: negotiate the request shape (its probe records go to `negotiation.jsonl`), then
warm-up requests followed by measured ones, one at a time (single stream). Each raw record is appended to the launch's `requests.jsonl`
the moment it completes; the summary is then derived from that file, never from memory, so a
crash loses at most the request in flight and `bench.json` can always be rebuilt (`rebuild()`,
`sparktriage bench --rebuild RUN_DIR`). When a later workload fails to start (its negotiation
is refused), `bench.json` is still written from what was measured before the error is raised.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sparktriage.bench.client import ClientSettings, make_stream_client, stream_request
from sparktriage.bench.endpoint import Capabilities, Server, choose_model, discover, negotiate
from sparktriage.bench.http1 import Client
from sparktriage.bench.records import derive
from sparktriage.bench.summary import build_bench_document
from sparktriage.bench.workload import Workload
from sparktriage.documents.bench import BenchDocument, LaunchDocument
from sparktriage.errors import InputError
from sparktriage.progress import Observer, quiet
from sparktriage.store.documents import RecordWriter, read_document, read_records
from sparktriage.store.rundir import SCHEMA_VERSION, LaunchDir, RunDir
from sparktriage.store.typed import parse

NEGOTIATION = "negotiation.jsonl"  # the negotiation probes' raw records, beside requests.jsonl


@dataclass(frozen=True)
class ProtocolPlan:
    """What the protocol will do: where, which model, which workloads (declared before running)."""

    settings: ClientSettings
    model: str | None
    workloads: tuple[Workload, ...]


async def _measure(plan: ProtocolPlan, launch: LaunchDir, observe: Observer, client: Client) -> None:
    server = await discover(client, plan.settings)
    model = choose_model(server, plan.model)
    observe("server", {"base_url": server.base_url, "model": model, "version": server.version})
    launch.write("launch.json", _launch_document(server, model, plan), LaunchDocument)
    capabilities: dict[str, dict] = {}
    try:
        with launch.request_writer() as writer, RecordWriter(launch.path / NEGOTIATION) as probes:
            for workload in plan.workloads:
                caps = await negotiate(client, plan.settings, workload, model, probes.append)
                capabilities[workload.name] = caps.as_dict()
                launch.write("capabilities.json", capabilities)
                observe("capabilities", {"workload": workload.name, **caps.as_dict()})
                await _run_workload(plan, workload, model, caps, client, writer, observe)
    except BaseException:
        rebuild(launch)  # keep what was measured summarized, then report the failure
        raise


async def _run_workload(plan: ProtocolPlan, workload: Workload, model: str, caps: Capabilities,
                        client: Client, writer, observe: Observer) -> None:
    total = workload.warmup + workload.requests
    for index in range(total):
        warmup = index < workload.warmup
        record = await stream_request(
            client, plan.settings, workload.path, caps.body(workload, model),
            workload=workload.name, index=index, warmup=warmup,
        )
        writer.append(record)
        observe("request", {"workload": workload.name, "index": index, "total": total,
                            "warmup": warmup, "warmups": workload.warmup, **derive(record).as_dict()})


async def _run(plan: ProtocolPlan, launch: LaunchDir, observe: Observer) -> dict:
    client = make_stream_client(plan.settings)
    try:
        await _measure(plan, launch, observe, client)
    finally:
        await client.aclose()
    return rebuild(launch)


def run_protocol(plan: ProtocolPlan, launch: LaunchDir, observe: Observer = quiet) -> dict:
    """Run the protocol, write launch.json, requests.jsonl and bench.json; return bench.json."""
    return asyncio.run(_run(plan, launch, observe))


def rebuild(launch: LaunchDir) -> dict:
    """Derive bench.json from the launch's raw records on disk, write it and return it."""
    meta_path = launch.path / "launch.json"
    if not meta_path.exists():
        raise InputError(f"{launch.path}: no launch.json, nothing was measured here")
    meta = read_document(meta_path)
    parse(LaunchDocument, meta, str(meta_path))  # a one-line error naming the field, exit 2
    caps_path = launch.path / "capabilities.json"
    caps = read_document(caps_path) if caps_path.exists() else {}
    caps.pop("schema_version", None)
    records = list(read_records(launch.requests_path)) if launch.requests_path.exists() else []
    document = build_bench_document(meta, records, caps)
    launch.write("bench.json", document, BenchDocument)
    return {"schema_version": SCHEMA_VERSION, **document}


def rebuild_run(run: RunDir) -> list[dict]:
    """Rebuild bench.json of every launch of a run directory that measured something."""
    documents = [rebuild(launch) for launch in run.launches() if (launch.path / "launch.json").exists()]
    if not documents:
        raise InputError(f"{run.path}: no launch with raw request records to rebuild")
    return documents


def _launch_document(server: Server, model: str, plan: ProtocolPlan) -> dict:
    return {
        "kind": "launch",
        "label": None,
        "endpoint": server.base_url,
        "model": model,
        "models_listed": list(server.models),
        "server_version": server.version,
        "max_model_len": server.max_model_len,
        "workloads": [w.model_dump(mode="json") for w in plan.workloads],
        "client": {
            "stall_timeout_s": plan.settings.stall_timeout_s,
            "request_timeout_s": plan.settings.request_timeout_s,
            "api_key": "set" if plan.settings.api_key else None,
        },
    }
