"""Every key of a compose service accounted for: container arguments, the plan's own settings,
notes, or an `unknowns` row with its line (docs/reproduce.md, compose).

`runtime: nvidia`, `gpus:` and `deploy.resources.reservations.devices` are the plan's
`--gpus all`; `ipc: host` and `network_mode: host` are what the plan runs (other values are
unknown rows); `shm_size`, `ulimits`, `user`, volumes, devices, capabilities and the like go
to `engine.container_args` as the `docker run` options they are; `deploy.replicas` counts Ray
worker nodes; `deploy.resources.limits` become `--memory`/`--cpus`.
"""

from __future__ import annotations

import os
from pathlib import Path

from sparktriage.reproduce.importers.common import Ctx

# handled by the importer itself
OWN = {"image", "command", "entrypoint", "environment", "env_file", "extends", "profiles"}
NOTED = {"container_name": "the plan names containers itself",
         "restart": "the plan starts and stops the server itself (restart policy dropped)",
         "healthcheck": "sparktriage watches readiness itself (healthcheck dropped)",
         "depends_on": "start order comes from the plan", "stdin_open": "dropped", "tty": "dropped",
         "logging": "sparktriage records the output itself", "hostname": "dropped",
         "expose": "the plan runs with the host network (expose dropped)",
         "stop_grace_period": "the deployment's timeouts.teardown_grace_s decides it",
         "pull_policy": "the image is used as named", "build": "the named image is used"}
KEEP = {"ulimits": "--ulimit", "devices": "--device", "cap_add": "--cap-add",
        "cap_drop": "--cap-drop", "security_opt": "--security-opt", "user": "--user",
        "working_dir": "--workdir", "privileged": "--privileged", "group_add": "--group-add",
        "pid": "--pid", "tmpfs": "--tmpfs", "sysctls": "--sysctl", "init": "--init",
        "labels": "--label", "platform": "--platform", "mem_limit": "--memory",
        "memswap_limit": "--memory-swap", "cpus": "--cpus", "cpuset": "--cpuset-cpus",
        "extra_hosts": "--add-host", "dns": "--dns", "read_only": "--read-only",
        "stop_signal": "--stop-signal", "oom_score_adj": "--oom-score-adj",
        "shm_size": "--shm-size", "uts": "--uts", "userns_mode": "--userns",
        "cgroupns_mode": "--cgroupns", "runtime": "--runtime"}
PLAN = {"ipc": "host", "network_mode": "host"}
PLAN_FLAG = {"ipc": "--ipc", "network_mode": "--network"}


def _where(marks: dict, *path) -> str:
    line = marks.get(path) or marks.get(path[:2])
    return f"line {line}"


def _container_args(flag: str, value) -> list[str]:
    if isinstance(value, bool):
        return [flag] if value else []
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            if isinstance(v, dict):
                out += [flag, f"{k}={v.get('soft')}:{v.get('hard')}"]
            else:
                out += [flag, f"{k}={v}" if flag != "--add-host" else f"{k}:{v}"]
        return out
    if isinstance(value, list):
        return [a for v in value for a in (flag, str(v))]
    return [flag, str(value)]


def gpu_reserved(service: dict) -> bool:
    if service.get("runtime") == "nvidia" or service.get("gpus"):
        return True
    devices = (((service.get("deploy") or {}).get("resources") or {}).get("reservations")
               or {}).get("devices") or []
    return any("gpu" in (d.get("capabilities") or []) or d.get("driver") == "nvidia"
               for d in devices if isinstance(d, dict))


def service_keys(name: str, service: dict, marks: dict, eng: dict, ctx: Ctx,
                 base: Path | None = None) -> int:
    """Account for every key of one service; return its replicas (1 unless deploy says).
    `base`: the compose file's folder, against which compose resolves relative host paths."""
    args = eng["container_args"]
    replicas = 1
    for key, value in service.items():
        where = _where(marks, "services", name, key)
        if key in OWN:
            continue
        if key == "runtime" and value == "nvidia":
            ctx.mapped.append(f"services.{name}.runtime: nvidia -> the plan's --gpus all")
        elif key == "gpus":
            ctx.mapped.append(f"services.{name}.gpus -> the plan's --gpus all")
        elif key in PLAN:
            if value == PLAN[key]:
                ctx.mapped.append(f"services.{name}.{key}: {value} -> the plan's "
                                  f"{PLAN_FLAG[key]} host")
            else:
                ctx.flag_unknown(f"{key}: {value}", f"{where}: service {name}: the plan runs "
                                 f"containers with {PLAN[key]} {key.split('_')[0]}")
        elif key == "volumes":
            for item in value or []:
                args += _volume(item, ctx, name, where, base)
            ctx.mapped.append(f"services.{name}.volumes -> engine.container_args")
        elif key == "deploy":
            replicas = _deploy(name, value, marks, args, ctx, eng)
        elif key in NOTED:
            ctx.note(f"{where}: service {name}: {key}: {NOTED[key]}")
        elif key in KEEP:
            args += _container_args(KEEP[key], value)
            ctx.check_variables(str(value), f"{where}: service {name}: {key}")
            ctx.mapped.append(f"services.{name}.{key} -> engine.container_args {KEEP[key]}")
        elif key in ("ports", "networks"):
            ctx.flag_unknown(f"{key}: {value}", f"{where}: service {name}: the plan runs with "
                             "the host network; not reproduced")
        else:
            ctx.flag_unknown(f"services.{name}.{key}", f"{where}: compose key not reproduced")
    if not gpu_reserved(service):
        ctx.note(f"service {name} reserves no GPU; the plan passes --gpus all when the lab "
                 "node has one")
    return replicas


def _deploy(name: str, deploy, marks: dict, args: list[str], ctx: Ctx,
            eng: dict | None = None) -> int:
    where = _where(marks, "services", name, "deploy")
    if not isinstance(deploy, dict):
        ctx.flag_unknown(f"deploy: {deploy}", f"{where}: service {name}: not a mapping")
        return 1
    replicas = 1
    for key, value in deploy.items():
        if key == "replicas" and isinstance(value, int) and value >= 0:
            replicas = value
            ctx.mapped.append(f"services.{name}.deploy.replicas {value} -> {value} node(s)")
        elif key == "resources" and isinstance(value, dict):
            for part, body in value.items():
                if part == "reservations" and isinstance(body, dict):
                    for item, spec in body.items():
                        if item == "devices":
                            _devices(name, spec, where, ctx, eng if eng is not None else {})
                        else:
                            ctx.flag_unknown(f"deploy.resources.reservations.{item}: {spec}",
                                             f"{where}: service {name}: reservation not "
                                             "reproduced (docker run has no reservations)")
                elif part == "limits" and isinstance(body, dict):
                    for item, spec in body.items():
                        flag = {"memory": "--memory", "cpus": "--cpus", "pids": "--pids-limit"}
                        if item in flag:
                            args += [flag[item], str(spec)]
                            ctx.mapped.append(f"services.{name}.deploy.resources.limits.{item} "
                                              f"-> engine.container_args {flag[item]}")
                        else:
                            ctx.flag_unknown(f"deploy.resources.limits.{item}: {spec}",
                                             f"{where}: service {name}: limit not reproduced")
                else:
                    ctx.flag_unknown(f"deploy.resources.{part}", f"{where}: service {name}: "
                                     "not reproduced")
        elif key in ("restart_policy", "update_config", "rollback_config", "mode"):
            ctx.note(f"{where}: service {name}: deploy.{key}: the plan starts each node once")
        else:
            ctx.flag_unknown(f"deploy.{key}: {value}", f"{where}: service {name}: not "
                             "reproduced (swarm placement)")
    return replicas


def _devices(name: str, devices, where: str, ctx: Ctx, eng: dict) -> None:
    """GPU reservations: the plan's --gpus all; a pinned list goes to `eng["_gpu_pin"]`, which
    the compose importer makes the container's NVIDIA_VISIBLE_DEVICES."""
    for device in devices if isinstance(devices, list) else [devices]:
        if not isinstance(device, dict):
            ctx.flag_unknown(f"devices: {device}", f"{where}: service {name}: not a mapping")
            continue
        gpu = "gpu" in (device.get("capabilities") or []) or device.get("driver") == "nvidia"
        if not gpu:
            ctx.flag_unknown(f"deploy.resources.reservations.devices: {device}", f"{where}: "
                             f"service {name}: a device reservation that is not a GPU")
            continue
        count, ids = device.get("count"), device.get("device_ids")
        pinned = _pinned(count, ids)
        if pinned is not None:
            # what the NVIDIA runtime makes of the reservation: the container's device list,
            # mapped onto each lab node's own GPUs like any NVIDIA_VISIBLE_DEVICES
            eng["_gpu_pin"] = pinned
            ctx.mapped.append(f"services.{name}.deploy.resources.reservations.devices (GPU "
                              f"count={count} device_ids={ids}) -> env.NVIDIA_VISIBLE_DEVICES="
                              f"{pinned} (mapped onto each lab node's GPUs) and the plan's "
                              "--gpus all")
        elif ids or count not in (None, "all", -1, 1):
            ctx.flag_unknown(f"GPU reservation count={count} device_ids={ids}", f"{where}: "
                             f"service {name}: the plan passes --gpus all (each lab node's "
                             "GPUs; a GB10 node has one)")
        else:
            ctx.mapped.append(f"services.{name}.deploy.resources.reservations.devices (GPU) -> "
                              "the plan's --gpus all")


def _pinned(count, ids) -> str | None:
    """The device list a compose GPU reservation pins: its `device_ids`, or the first `count`
    GPUs (a count above 1); None when it pins none (all, one, or a shape not read)."""
    if isinstance(ids, list) and ids and all(isinstance(i, (str, int)) for i in ids):
        return ",".join(str(i) for i in ids)
    if isinstance(count, int) and not isinstance(count, bool) and 1 < count <= 64:
        return ",".join(str(i) for i in range(count))
    return None


def _volume(item, ctx: Ctx, service: str, where: str, base: Path | None) -> list[str]:
    if isinstance(item, str):
        ctx.check_variables(item, f"{where}: service {service}: volume")
        host, colon, rest = item.partition(":")
        if base is not None and colon and (host in (".", "..") or host.startswith(("./", "../"))):
            resolved = os.path.normpath(base / host)
            ctx.note(f"{where}: service {service}: volume {host} is {resolved} (compose resolves "
                     "it against the compose file's folder on the client)")
            item = f"{resolved}:{rest}"
        elif colon and (host == "~" or host.startswith("~/")):
            item = f"{_home(host, ctx, where, service)}:{rest}"
        return ["-v", item]
    if isinstance(item, dict):
        kind = item.get("type", "volume")
        parts = [f"type={kind}"]
        if item.get("source"):
            source = str(item["source"])
            if base is not None and (source in (".", "..") or source.startswith(("./", "../"))):
                source = os.path.normpath(base / source)
            elif source == "~" or source.startswith("~/"):
                source = _home(source, ctx, where, service)
            parts.append(f"source={source}")
        if item.get("target"):
            parts.append(f"target={item['target']}")
        if item.get("read_only"):
            parts.append("readonly")
        for key in item:
            if key not in ("type", "source", "target", "read_only"):
                ctx.flag_unknown(f"volumes.{key}", f"{where}: service {service}: volume option "
                                 "not reproduced")
        return ["--mount", ",".join(parts)]
    ctx.flag_unknown(f"volumes: {item}", f"{where}: service {service}: not a volume")
    return []


def _home(path: str, ctx: Ctx, where: str, service: str) -> str:
    """`~/x` as compose reads it: the client's home folder, not known here (a placeholder; the
    plan passes argv to docker without a shell, which would not expand `~`)."""
    stand = ctx.secrets.declare("HOME", f"{where}: service {service}: ~ in a volume")
    ctx.flag_unknown(path, f"{where}: service {service}: ~ is the client's home folder (compose "
                     f"expands it); written as {stand}")
    return stand + path[1:]
