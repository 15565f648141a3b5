"""`docker run` / `podman run` options as the docker importer treats them, in one table with no
imports: which are kept as container arguments, which the plan sets or drops, and so which take
no value (the wrappers' table, meaning/wrappers.py, reads a run's options with it too).
"""

from __future__ import annotations

# options with a value that are kept as container arguments
KEEP_VALUE = {"-v", "--volume", "--mount", "--shm-size", "--ulimit", "--device", "--runtime",
              "--cap-add", "--security-opt", "--user", "-u", "--workdir", "-w", "--group-add",
              "--memory", "-m", "--cpus", "--cpuset-cpus", "--pid", "--uts", "--tmpfs",
              "--device-cgroup-rule", "--label", "-l", "--add-host", "--dns", "--hostname", "-h",
              "--pull", "--platform", "--stop-signal", "--stop-timeout", "--oom-score-adj",
              "--memory-swap", "--cgroupns", "--userns", "--sysctl", "--log-driver", "--log-opt"}
KEEP_BOOL = {"--privileged", "--init", "--read-only", "--oom-kill-disable"}
PLAN_BOOL = {"--rm": "the plan always runs containers with --rm",
             "-d": "the plan runs the container in the foreground (detach dropped)",
             "--detach": "the plan runs the container in the foreground (detach dropped)",
             "-i": "interactive flag dropped", "-t": "tty flag dropped", "-it": "tty flags dropped",
             "-ti": "tty flags dropped", "--interactive": "interactive flag dropped",
             "--tty": "tty flag dropped"}
ENV_OPTS = {"-e", "--env"}
# options the plan sets itself: option -> (the plan's option, its value, what is said otherwise)
PLAN_SETS = {"--network": ("--network", "host", "the plan runs containers with --network host"),
             "--net": ("--network", "host", "the plan runs containers with --network host"),
             "--ipc": ("--ipc", "host", "the plan runs containers with --ipc host"),
             "--gpus": ("--gpus", "all", "the plan passes --gpus all when the lab node has a GPU")}
