"""Compose files: every service that runs vLLM becomes a node of the client's deployment.

Read with the project's safe YAML loader. Per service: `image`, `command` and `entrypoint`
(string or list), `environment` (map or list), `volumes` (short `HOST:CONTAINER[:MODE]` or long
form), `shm_size`, `ipc`, `network_mode`, GPU reservations (`deploy.resources.reservations.
devices`) or `runtime: nvidia`, and the container keys that docker run also has. Keys that
cannot be reproduced are unknown; services that do not run vLLM are noted.
"""

from __future__ import annotations

from pathlib import Path

from sparktriage.yamldoc import load_with_lines
from sparktriage.errors import InputError
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.docker import container_command
from sparktriage.reproduce.importers.serve import assemble, env_block
from sparktriage.reproduce.model import Imported
from sparktriage.reproduce.shell import split_words

NOTED = {"container_name": "the plan names containers itself",
         "restart": "the plan starts and stops the server itself (restart policy dropped)",
         "healthcheck": "sparktriage watches readiness itself (healthcheck dropped)",
         "depends_on": "start order comes from the plan", "stdin_open": "dropped", "tty": "dropped",
         "logging": "sparktriage records the output itself", "hostname": "dropped"}
KEEP = {"ulimits": "--ulimit", "devices": "--device", "cap_add": "--cap-add",
        "security_opt": "--security-opt", "user": "--user", "working_dir": "--workdir",
        "privileged": "--privileged", "group_add": "--group-add", "pid": "--pid",
        "tmpfs": "--tmpfs", "sysctls": "--sysctl", "init": "--init"}


def _words(value, ctx: Ctx, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return split_words(value, f"{ctx.source} ({what})")
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value]
    raise InputError(f"{ctx.source}: {what} must be a string or a list of strings")


def _environment(value, ctx: Ctx, service: str) -> dict[str, str]:
    if value is None:
        return {}
    pairs: dict[str, str] = {}
    if isinstance(value, dict):
        for name, item in value.items():
            if item is None:
                ctx.flag_unknown(f"{name}", f"service {service}: value taken from the client's "
                                 "shell; not known")
                continue
            pairs[str(name)] = str(item).lower() if isinstance(item, bool) else str(item)
    elif isinstance(value, list):
        for item in value:
            name, eq, val = str(item).partition("=")
            if not eq:
                ctx.flag_unknown(name, f"service {service}: value taken from the client's "
                                 "shell; not known")
                continue
            pairs[name] = val
    else:
        raise InputError(f"{ctx.source}: service {service}: environment must be a map or a list")
    return pairs


def _volume(item, ctx: Ctx, service: str) -> list[str]:
    if isinstance(item, str):
        return ["-v", item]
    if isinstance(item, dict):
        kind = item.get("type", "volume")
        parts = [f"type={kind}"]
        if item.get("source"):
            parts.append(f"source={item['source']}")
        if item.get("target"):
            parts.append(f"target={item['target']}")
        if item.get("read_only"):
            parts.append("readonly")
        for key in item:
            if key not in ("type", "source", "target", "read_only"):
                ctx.flag_unknown(f"volumes.{key}", f"service {service}: volume option not "
                                 "reproduced")
        return ["--mount", ",".join(parts)]
    raise InputError(f"{ctx.source}: service {service}: a volume must be a string or a mapping")


def _gpus(service: dict) -> bool:
    if service.get("runtime") == "nvidia" or service.get("gpus"):
        return True
    devices = (((service.get("deploy") or {}).get("resources") or {}).get("reservations")
               or {}).get("devices") or []
    return any("gpu" in (d.get("capabilities") or []) or d.get("driver") == "nvidia"
               for d in devices if isinstance(d, dict))


def import_compose(path: Path, ctx: Ctx) -> Imported:
    data, marks = load_with_lines(path)
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict) or not services:
        raise InputError(f"{ctx.source}: no services in the compose file")
    serves = []
    engine: dict = {}
    for name, service in services.items():
        if not isinstance(service, dict):
            raise InputError(f"{ctx.source}: service {name} is not a mapping")
        command = _words(service.get("command"), ctx, f"services.{name}.command")
        entry = _words(service.get("entrypoint"), ctx, f"services.{name}.entrypoint")
        image = service.get("image")
        text = " ".join(entry + command + [str(image or "")])
        if "vllm" not in text:
            ctx.note(f"service {name} does not run vLLM; not reproduced")
            continue
        if not image:
            raise InputError(f"{ctx.source}: service {name} has no image (build: is not "
                             "reproduced; give the built image's name)")
        eng: dict = {"image": str(image), "runtime": "docker", "container_args": []}
        for key, value in service.items():
            if key in ("image", "command", "entrypoint", "environment", "deploy", "runtime",
                       "gpus", "ipc", "network_mode", "volumes", "shm_size", "env_file"):
                continue
            if key in NOTED:
                ctx.note(f"service {name}: {key}: {NOTED[key]}")
            elif key in KEEP:
                flag = KEEP[key]
                if isinstance(value, bool):
                    if value:
                        eng["container_args"].append(flag)
                elif isinstance(value, dict):
                    for k, v in value.items():
                        eng["container_args"] += [flag, f"{k}={v}" if not isinstance(v, dict)
                                                  else f"{k}={v.get('soft')}:{v.get('hard')}"]
                elif isinstance(value, list):
                    for v in value:
                        eng["container_args"] += [flag, str(v)]
                else:
                    eng["container_args"] += [flag, str(value)]
                ctx.mapped.append(f"services.{name}.{key} -> engine.container_args")
            else:
                ctx.flag_unknown(f"services.{name}.{key}", "compose key not reproduced")
        for item in service.get("volumes") or []:
            eng["container_args"] += _volume(item, ctx, name)
        if service.get("volumes"):
            ctx.mapped.append(f"services.{name}.volumes -> engine.container_args")
        if service.get("shm_size") is not None:
            eng["container_args"] += ["--shm-size", str(service["shm_size"])]
            ctx.mapped.append(f"services.{name}.shm_size -> engine.container_args")
        for key, plan_value in (("ipc", "host"), ("network_mode", "host")):
            value = service.get(key)
            if value is not None and value != plan_value:
                ctx.flag_unknown(f"{key}: {value}", f"service {name}: the plan runs containers "
                                 f"with {plan_value} {key.split('_')[0]}")
        if service.get("env_file"):
            ctx.flag_unknown(f"env_file: {service['env_file']}", f"service {name}: env file not "
                             "read; give its content as an input (an env dump)")
        if not _gpus(service):
            ctx.note(f"service {name} reserves no GPU; the plan passes --gpus all when the lab "
                     "node has one")
        else:
            ctx.mapped.append(f"services.{name} GPU reservation -> the plan's --gpus all")
        serve = container_command(command, entry[0] if entry else None, eng, ctx, 1)
        serve.line = marks.get(("services", name, "command"), marks.get(("services", name)))
        if len(entry) > 1:
            ctx.flag_unknown(" ".join(entry), f"service {name}: entrypoint with arguments; "
                             "only its program is kept")
        env = env_block({**_environment(service.get("environment"), ctx, name),
                         **eng.pop("_env", {})}, ctx, f"services.{name}.environment")
        serves.append((serve, env))
        engine = engine or eng
    if not serves:
        raise InputError(f"{ctx.source}: no service runs vLLM")
    result = assemble(serves, ctx)
    deployment = dict(result.deployment)
    deployment["engine"] = {**deployment.get("engine", {}), **engine}
    return result.model_copy(update={"deployment": deployment})
