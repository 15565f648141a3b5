"""Kubernetes manifests as reproduce inputs (importers/kubernetes.py, kube_pods.py, kube_docs.py):
multi-document files, $(VAR) expansion by Kubernetes' rules, env valueFrom as values to supply,
pods x GPUs as the client's nodes, LeaderWorkerSet and KubeRay groups, refusals that name the
shape, Helm refused naming `helm template`. Real reproduce core, nothing contacted."""

from __future__ import annotations

from pathlib import Path

import pytest
from reproduce_helpers import gb10_lab, planned, ranks_per_node, run

from sparktriage.config.deployment import load_deployment
from sparktriage.errors import InputError
from sparktriage.limits import YAML_MAX_DOCUMENTS, LimitError
from sparktriage.reproduce.read.detect import detect
from sparktriage.reproduce.importers.kube_docs import read_documents
from sparktriage.reproduce.importers.kube_pods import expand

LWS_NATIVE = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated}
data: {a: b}
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: qwen
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 4
    leaderTemplate:
      spec:
        containers:
          - name: vllm
            image: vllm/vllm-openai:v0.11.0
            env:
              - name: MODEL
                value: Qwen/Qwen3-30B-A3B
              - name: TP
                value: "4"
            command: ["vllm", "serve"]
            args: ["$(MODEL)", "--tensor-parallel-size", "$(TP)", "--nnodes", "$(LWS_GROUP_SIZE)",
                   "--node-rank", "$(LWS_WORKER_INDEX)", "--master-addr", "$(LWS_LEADER_ADDRESS)",
                   "--served-model-name", "$$(literal)"]
            resources: {limits: {nvidia.com/gpu: "1"}}
    workerTemplate:
      spec:
        containers:
          - name: vllm
            image: vllm/vllm-openai:v0.11.0
            env:
              - name: MODEL
                value: Qwen/Qwen3-30B-A3B
              - name: TP
                value: "4"
            command: ["vllm", "serve"]
            args: ["$(MODEL)", "--tensor-parallel-size", "$(TP)", "--nnodes", "$(LWS_GROUP_SIZE)",
                   "--node-rank", "$(LWS_WORKER_INDEX)", "--master-addr", "$(LWS_LEADER_ADDRESS)",
                   "--headless"]
            resources: {limits: {nvidia.com/gpu: "1"}}
"""

RAY_CLUSTER = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: vllm}
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: head
            image: vllm/vllm-openai:v0.11.0
            command: ["/bin/bash", "-c"]
            args:
              - |
                ray start --head --block &
                sleep 30
                vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 \\
                  --pipeline-parallel-size 2 --distributed-executor-backend ray
            env:
              - name: HF_TOKEN
                valueFrom: {secretKeyRef: {name: hf, key: token}}
              - name: POD_IP
                valueFrom: {fieldRef: {fieldPath: status.podIP}}
            resources: {limits: {nvidia.com/gpu: 1}}
  workerGroupSpecs:
    - groupName: gpu
      replicas: 3
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: worker
              image: vllm/vllm-openai:v0.11.0
              resources: {limits: {nvidia.com/gpu: 1}}
"""


def _write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def test_documents_keep_the_files_line_numbers_and_are_bounded() -> None:
    docs = read_documents("a: 1\n---\nkind: Pod\nspec:\n  x: 1\n...\n---\nb: 2\n", "m.yaml")
    assert [d.first for d in docs] == [1, 3, 8]
    assert docs[1].line("spec", "x") == 5 and docs[2].data == {"b": 2}
    with pytest.raises(InputError, match=r"^m.yaml:4: not valid YAML"):
        read_documents("a: 1\n---\nb: 2\nc: d: e\nf: 1\n", "m.yaml")
    with pytest.raises(LimitError, match="documents in one YAML input"):
        read_documents("---\na: 1\n" * (YAML_MAX_DOCUMENTS + 2), "m.yaml")


def test_dollar_paren_expansion_follows_kubernetes() -> None:
    env = {"A": "1", "B": "x"}
    assert expand("$(A)-$(B)-$(C)-$$(A)-$$", env) == "1-x-$(C)-$(A)-$"


def test_detect_kubernetes_and_refuse_helm(tmp_path: Path) -> None:
    assert detect(LWS_NATIVE) == "kubernetes"
    template = "{{- if .Values.vllm.enable }}\napiVersion: apps/v1\nkind: Deployment\n"
    with pytest.raises(InputError, match=r"line 1: a Helm chart template .*helm template"):
        detect(template)
    values = "replicaCount: 1\nimage:\n  repository: vllm/vllm-openai\n  tag: v1\n" \
             "resources: {}\nnodeSelector: {}\n"
    with pytest.raises(InputError, match=r"line 1: Helm values for a Helm chart .*helm template"):
        detect(values)
    # a docker format string in a shell script is not Helm
    assert detect("docker inspect -f '{{range .Mounts}}{{end}}' x\nvllm serve m\n") == "serve"


def test_leader_worker_set_native_multinode_ranks_from_the_worker_index(tmp_path: Path) -> None:
    result = run([_write(tmp_path, "lws.yaml", LWS_NATIVE)], tmp_path, gb10_lab(tmp_path, 4))
    dep = load_deployment(Path(result.out_dir) / "deployment.yaml")
    assert dep.model.path == "Qwen/Qwen3-30B-A3B"
    assert (dep.parallelism.tp, dep.engine.backend, dep.engine.image) == \
        (4, "mp", "vllm/vllm-openai:v0.11.0")
    assert [n.headless for n in result.client_nodes] == [False, True, True, True]
    plan = planned(result)
    argv = [list(proc.argv) for stage in plan.stages for _, proc in stage.processes
            if "--served-model-name" in proc.argv]
    assert argv and argv[0][argv[0].index("--served-model-name") + 1] == "$(literal)"  # `$$(`
    ranks = [proc.argv[proc.argv.index("--node-rank") + 1] for stage in plan.stages
             for _, proc in stage.processes if "--node-rank" in proc.argv]
    assert ranks == ["0", "1", "2", "3"]
    assert any("ConfigMap runs no pods" in n for n in result.notes)


def test_kuberay_cluster_head_serves_workers_are_ray_replicas(tmp_path: Path) -> None:
    result = run([_write(tmp_path, "ray.yaml", RAY_CLUSTER)], tmp_path, gb10_lab(tmp_path, 4))
    dep = load_deployment(Path(result.out_dir) / "deployment.yaml")
    assert (dep.parallelism.tp, dep.parallelism.pp, dep.engine.backend) == (2, 2, "ray")
    assert ranks_per_node(planned(result)) == {f"spark-0{i}": 1 for i in range(1, 5)}
    assert "HF_TOKEN" in result.placeholders
    assert any(u.text == "POD_IP valueFrom status.podIP" for u in result.unknown)
    assert any("KubeRay worker pod -> ray start --address" in m for m in result.mapped)


def test_refusal_names_the_shape_and_the_need(tmp_path: Path) -> None:
    manifest = RAY_CLUSTER.replace("--tensor-parallel-size 2", "--tensor-parallel-size 8")
    with pytest.raises(InputError) as caught:
        run([_write(tmp_path, "ray.yaml", manifest)], tmp_path, gb10_lab(tmp_path, 8))
    assert caught.value.one_line().endswith(
        "ray.yaml:14: a Kubernetes RayCluster running tp 8 x pp 2 = 16 GPUs (4 pod(s) x 1 "
        "GPU(s)); the lab has 8 GB10 nodes (one GPU each): it needs 16")


def test_two_workloads_are_two_servers_never_merged(tmp_path: Path) -> None:
    one = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: %d
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:latest
          args: ["--model", "m/%s", "--port", "%d",
                 "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"%s"}']
          resources: {limits: {nvidia.com/gpu: "1"}}
"""
    text = one % ("prefill", 1, "p", 8100, "kv_producer") + "---\n" + \
        one % ("decode", 2, "d", 8200, "kv_consumer")
    result = run([_write(tmp_path, "pd.yaml", text)], tmp_path, gb10_lab(tmp_path, 2))
    dep = load_deployment(Path(result.out_dir) / "deployment.yaml")
    assert (dep.model.path, dep.serve.port) == ("m/p", 8100)
    rows = [u for u in result.unknown if u.text.startswith("independent vLLM server")]
    assert [u.text for u in rows] == ["independent vLLM server: Deployment decode (port 8200, "
                                      "kv_consumer, KV connector NixlConnector)"]
    assert "a prefill/decode pair" in rows[0].note and rows[0].note.startswith("line 25: ")
    assert any(u.text == "Deployment decode replicas 2" for u in result.unknown)
    other = load_deployment(Path(result.out_dir) / "server-2" / "deployment.yaml")
    assert (other.model.path, other.serve.port, other.nodes) == ("m/d", 8200, ["spark-02"])


def test_rayservice_serve_application_is_refused_at_its_import_path(tmp_path: Path) -> None:
    text = """\
apiVersion: ray.io/v1
kind: RayService
metadata: {name: llm}
spec:
  serveConfigV2: |
    applications:
      - name: llm
        import_path: my.module:app
  rayClusterConfig:
    headGroupSpec:
      template: {spec: {containers: [{name: head, image: rayproject/ray:2.40.0}]}}
"""
    with pytest.raises(InputError, match=r"rs.yaml:8: a KubeRay RayService whose vLLM runs "
                                         r"inside a Ray Serve application \(import_path "
                                         r"my.module:app"):
        run([_write(tmp_path, "rs.yaml", text)], tmp_path, gb10_lab(tmp_path, 2))


def test_secret_values_are_never_written(tmp_path: Path) -> None:
    text = """\
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {token: "s3cr3t-value-not-shaped-like-a-token"}
---
apiVersion: v1
kind: Pod
metadata: {name: one}
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:latest
      command: ["sh", "-c", "vllm serve m/x --api-key s3cr3t-value-not-shaped-like-a-token"]
"""
    result = run([_write(tmp_path, "pod.yaml", text)], tmp_path, gb10_lab(tmp_path, 1))
    for path in Path(result.out_dir).rglob("*"):
        if path.is_file():
            assert "s3cr3t-value" not in path.read_text(), path.name


@pytest.mark.parametrize("bad, message", [
    ("command: vllm serve m", r"pod.yaml:8: command is not a list of strings"),
    ("args: [{a: 1}]", r"pod.yaml:8: args is not a list of strings"),
    ("command: [sh, -c, 'vllm serve m \"unclosed']", r"pod.yaml:8: the container's script "
                                                      r"cannot be split"),
])
def test_hostile_container_fields_are_one_line_errors(tmp_path: Path, bad: str,
                                                      message: str) -> None:
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n"
            "    - name: vllm\n      image: vllm/vllm-openai:latest\n      " + bad + "\n")
    with pytest.raises(InputError, match=message):
        run([_write(tmp_path, "pod.yaml", text)], tmp_path, gb10_lab(tmp_path, 1))


def test_kubectl_list_and_kserve_predictor(tmp_path: Path) -> None:
    text = """\
apiVersion: v1
kind: List
items:
  - apiVersion: serving.kserve.io/v1beta1
    kind: InferenceService
    metadata: {name: qwen}
    spec:
      predictor:
        minReplicas: 1
        containers:
          - name: kserve-container
            image: vllm/vllm-openai:v0.10.1
            command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]
            args: ["--model", "Qwen/Qwen3-8B", "--port", "8080"]
            resources: {limits: {nvidia.com/gpu: "1"}}
"""
    result = run([_write(tmp_path, "list.yaml", text)], tmp_path, gb10_lab(tmp_path, 1))
    dep = load_deployment(Path(result.out_dir) / "deployment.yaml")
    assert (dep.model.path, dep.serve.port, dep.engine.image) == \
        ("Qwen/Qwen3-8B", 8080, "vllm/vllm-openai:v0.10.1")
    assert "InferenceService qwen: 1 pod(s) x 1 GPU(s) -> client nodes (one per pod)" in \
        result.mapped


def test_a_custom_resource_is_refused_naming_it(tmp_path: Path) -> None:
    text = ("apiVersion: production-stack.vllm.ai/v1alpha1\nkind: VLLMRuntime\n"
            "metadata: {name: opt}\nspec:\n  model: {modelURL: facebook/opt-125m}\n")
    with pytest.raises(InputError, match=r"cr.yaml: a Kubernetes custom resource VLLMRuntime "
                                         r"\(line 1, production-stack.vllm.ai/v1alpha1\): its "
                                         r"operator makes the pods"):
        run([_write(tmp_path, "cr.yaml", text)], tmp_path, gb10_lab(tmp_path, 1))


def test_a_router_that_names_vllm_is_not_a_server(tmp_path: Path) -> None:
    router = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: router}
spec:
  template:
    spec:
      containers:
        - name: router
          image: lmcache/lmstack-router:latest
          args: ["--service-discovery", "k8s", "--k8s-label-selector", "model=vllm"]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: engine}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:latest
          command: ["vllm", "serve", "m/x", "--port", "8000"]
          resources: {limits: {nvidia.com/gpu: "1"}}
"""
    result = run([_write(tmp_path, "stack.yaml", router)], tmp_path, gb10_lab(tmp_path, 1))
    assert load_deployment(Path(result.out_dir) / "deployment.yaml").model.path == "m/x"
    assert any("Deployment router container router runs `--service-discovery" in n and
               "not a vLLM server" in n for n in result.notes)


def test_rayjob_entrypoint_runs_on_the_head(tmp_path: Path) -> None:
    text = """\
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: job}
spec:
  entrypoint: vllm serve m/job --tensor-parallel-size 4
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: head
              image: vllm/vllm-openai:v0.11.0
              resources: {limits: {nvidia.com/gpu: 1}}
    workerGroupSpecs:
      - groupName: gpu
        replicas: 3
        rayStartParams: {}
        template:
          spec:
            containers:
              - name: worker
                image: vllm/vllm-openai:v0.11.0
                resources: {limits: {nvidia.com/gpu: 1}}
"""
    result = run([_write(tmp_path, "job.yaml", text)], tmp_path, gb10_lab(tmp_path, 4))
    dep = load_deployment(Path(result.out_dir) / "deployment.yaml")
    assert (dep.model.path, dep.parallelism.tp, dep.engine.backend) == ("m/job", 4, "ray")
    assert "line 5: RayJob entrypoint -> the head's command" in result.mapped
    assert ranks_per_node(planned(result)) == {f"spark-0{i}": 1 for i in range(1, 5)}


def test_a_template_whose_api_version_is_templated_is_still_helm() -> None:
    text = 'apiVersion: {{ include "chart.apiVersion" . }}\nkind: Deployment\nmetadata:\n' \
           '  name: {{ .Release.Name }}-vllm\n'
    with pytest.raises(InputError, match=r"^line 1: a Helm chart template"):
        detect(text)
