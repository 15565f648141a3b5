#!/usr/bin/env bash
set -euo pipefail

# Launch LibertAIDAI/GLM-5.3-Flash-NVFP4 on the running Ray-clustered vLLM
# container on Node 1. Ray dispatches shard 2 to Node 2 over the RoCE data
# plane established by run_headnode_2.sh / run_workernode_2.sh.
#
# Does NOT docker run: the Ray cluster must already be up, brought up with
# glm/cluster-env.sh sourced on BOTH nodes.
#
# Memory:
#   weights        181 GiB    -> 90.5 GiB / node at TP=2
#   budget @ 0.85  0.85 x 121.63 GiB = 103.4 GiB / node
#   headroom       ~12.9 GiB / node for KV + activations + graphs
#
#   * GPU_MEM_UTIL 0.85 is a CEILING, not a starting point. 0.90 is documented
#     to OOM on this hardware.
#   * KV is fp8 with an explicit 6 GiB budget rather than "whatever is left".
#   * ENABLE_EAGER defaults ON.
#
# LICENCE: the DFlash2 drafter (incoai/GLM-5.3-Flash-DFlash2) is
# CC-BY-NC-ND-4.0 -- research / personal use only. Leave
# ENABLE_DFLASH2=0 for a licence-clean run.

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "${SCRIPT_DIR}/../cluster/lib.sh"
load_env "${SCRIPT_DIR}"
: "${VLLM_API_KEY:?VLLM_API_KEY not set (expected in glm/.env -- copy glm/.env.example)}"
: "${HF_TOKEN:?HF_TOKEN not set (expected in glm/.env -- copy glm/.env.example)}"

# --- Overridable knobs -------------------------------------------------------
MODEL_CKPT="${MODEL_CKPT:-LibertAIDAI/GLM-5.3-Flash-NVFP4}"
SERVED_NAME="${SERVED_NAME:-zai-org/glm-5.3-flash}"
MAX_MODEL_LEN="${MAX_MODEL_LEN:-262144}"
GPU_MEM_UTIL="${GPU_MEM_UTIL:-0.85}"
KV_CACHE_MEMORY="${KV_CACHE_MEMORY:-6442450944}"
BLOCK_SIZE="${BLOCK_SIZE:-2304}"
MAX_NUM_SEQS="${MAX_NUM_SEQS:-8}"
TP_SIZE="${TP_SIZE:-2}"
PORT="${PORT:-8000}"
ENABLE_EAGER="${ENABLE_EAGER:-1}"
ENABLE_DFLASH2="${ENABLE_DFLASH2:-0}"
DRAFT_CKPT="${DRAFT_CKPT:-incoai/GLM-5.3-Flash-DFlash2}"
NUM_SPEC_TOKENS="${NUM_SPEC_TOKENS:-7}"
# Recipes disagree: the checkpoint card says deepseek_r1, one 2-Spark recipe
# says glm45. A wrong parser does not error -- it silently mis-splits
# reasoning_content from content -- so this is probed at ladder rung 1.
REASONING_PARSER="${REASONING_PARSER:-deepseek_r1}"
# This vLLM build defaults distributed_executor_backend to "mp" (config/parallel.py
# :917) and does NOT infer "ray" from a live Ray cluster the way the NGC 26.05
# build behind the Nemotron path does. Without this flag, multiprocessing sees one
# local GPU and refuses world size 2 outright:
#   "World size (2) is larger than the number of available GPUs (1) in this node."
# Accepted values: ray | mp | uni | external_launcher.
DIST_BACKEND="${DIST_BACKEND:-ray}"
EXPECTED_IMAGE="${EXPECTED_IMAGE:-local/vllm-ray-glm53:sm121-v11-dflash2}"
EXPECTED_BASE_DIGEST="${EXPECTED_BASE_DIGEST:-$(cat "${SCRIPT_DIR}/BASE_DIGEST")}"

# Refuse to exceed the documented OOM ceiling, however the caller was invoked.
if ! mem_util_within_ceiling "${GPU_MEM_UTIL}" 0.85; then
  echo "ERROR: GPU_MEM_UTIL=${GPU_MEM_UTIL} is not an accepted value (must be a" >&2
  echo "decimal <= 0.85). 0.90 is documented to OOM on GB10 with this checkpoint." >&2
  exit 1
fi

VLLM_CONTAINER=$(find_ray_container)

# The cluster must be running the GLM image.
RUNNING_IMAGE=$(docker inspect --format '{{.Config.Image}}' "${VLLM_CONTAINER}")
if [[ "${RUNNING_IMAGE}" != "${EXPECTED_IMAGE}" ]]; then
  cat >&2 <<EOF
ERROR: container ${VLLM_CONTAINER} is running the wrong image.
  running:  ${RUNNING_IMAGE}
  expected: ${EXPECTED_IMAGE}

The Ray cluster was brought up on a different profile. Tear it down and bring
it back up with the glm profile on BOTH nodes:

  source glm/cluster-env.sh && make head   PROFILE=glm    # Node 1
  source glm/cluster-env.sh && make worker PROFILE=glm    # Node 2
EOF
  exit 1
fi

echo "Using container: ${VLLM_CONTAINER}  (${RUNNING_IMAGE})"
echo "  model:             ${MODEL_CKPT}"
echo "  TP:                ${TP_SIZE}"
echo "  executor backend:  ${DIST_BACKEND}"

# Same guard as the Nemotron launcher: if the forwarded vars are absent from the
# head container's env, the user did not source glm/cluster-env.sh before
# bring-up.
FORWARD_VARS=$(bash -c 'source '"${SCRIPT_DIR}"'/cluster-env.sh >/dev/null 2>&1; echo "${VLLM_FORWARD_VARS}"')
if [[ -z "${FORWARD_VARS// /}" ]]; then
  echo "ERROR: could not read VLLM_FORWARD_VARS from ${SCRIPT_DIR}/cluster-env.sh." >&2
  exit 1
fi
MISSING_VARS=$(docker exec "${VLLM_CONTAINER}" /bin/bash -c '
  set -u
  missing=""
  for V in '"${FORWARD_VARS}"'; do
    [[ -z "${!V:-}" ]] && missing="${missing} $V"
  done
  echo "${missing}"
' 2>/dev/null | xargs) || true
if [[ -n "${MISSING_VARS}" ]]; then
  cat >&2 <<EOF
ERROR: Required GLM env vars are not set inside the Ray container:
  ${MISSING_VARS}
EOF
  exit 1
fi

# Readiness: BOTH two active nodes and two GPUs.
echo -n "Waiting for Ray to report 2 nodes and 2 GPUs"
NODES=0
GPUS=0
for _ in $(seq 1 60); do
  # || true: a transient docker exec failure must not kill the poll silently.
  STATUS=$(docker exec "${VLLM_CONTAINER}" ray status 2>/dev/null || true)
  NODES=$(ray_node_count_from_status "${STATUS}")
  GPUS=$(ray_gpu_total_from_status "${STATUS}")
  if [[ "${NODES}" -ge 2 && "${GPUS}" -ge 2 ]]; then
    echo " -- ${NODES} nodes, ${GPUS} GPUs"
    break
  fi
  echo -n "."
  sleep 2
done
if [[ "${NODES}" -lt 2 || "${GPUS}" -lt 2 ]]; then
  echo
  echo "ERROR: Ray reports ${NODES} node(s) and ${GPUS} GPU(s); need 2 and 2." >&2
  exit 1
fi

EAGER_FLAG=""
[[ "${ENABLE_EAGER}" == "1" ]] && EAGER_FLAG="--enforce-eager"

# Method is "dflash" -- NOT "dflash2". The 2 lives in the drafter's architecture
# (DFlash2DraftModel), not in vLLM's method string.
SPEC_FLAG=""
if [[ "${ENABLE_DFLASH2}" == "1" ]]; then
  if [[ -n "${GLM_SPEC_CONFIG:-}" ]]; then
    SPEC_FLAG="${GLM_SPEC_CONFIG}"
  else
    SPEC_FLAG=$(printf '{"method":"dflash","model":"%s","num_speculative_tokens":%s}' \
                  "${DRAFT_CKPT}" "${NUM_SPEC_TOKENS}")
  fi
  echo "  speculative:       ${SPEC_FLAG}"
  echo "  NOTE: ${DRAFT_CKPT} is CC-BY-NC-ND-4.0 -- research use only."
fi

docker exec -it \
  -e VLLM_API_KEY="${VLLM_API_KEY}" \
  -e HF_TOKEN="${HF_TOKEN}" \
  -e MODEL_CKPT="${MODEL_CKPT}" \
  -e SERVED_NAME="${SERVED_NAME}" \
  -e MAX_MODEL_LEN="${MAX_MODEL_LEN}" \
  -e GPU_MEM_UTIL="${GPU_MEM_UTIL}" \
  -e KV_CACHE_MEMORY="${KV_CACHE_MEMORY}" \
  -e BLOCK_SIZE="${BLOCK_SIZE}" \
  -e MAX_NUM_SEQS="${MAX_NUM_SEQS}" \
  -e TP_SIZE="${TP_SIZE}" \
  -e DIST_BACKEND="${DIST_BACKEND}" \
  -e PORT="${PORT}" \
  -e EAGER_FLAG="${EAGER_FLAG}" \
  -e SPEC_FLAG="${SPEC_FLAG}" \
  -e REASONING_PARSER="${REASONING_PARSER}" \
  "${VLLM_CONTAINER}" /bin/bash -c '
    set -euo pipefail
    SPEC_ARGS=()
    [[ -n "${SPEC_FLAG}" ]] && SPEC_ARGS+=(--speculative-config "${SPEC_FLAG}")
    # shellcheck disable=SC2086
    exec vllm serve "${MODEL_CKPT}" \
      --served-model-name "${SERVED_NAME}" \
      --host 0.0.0.0 \
      --port "${PORT}" \
      --tensor-parallel-size "${TP_SIZE}" \
      --distributed-executor-backend "${DIST_BACKEND}" \
      --max-model-len "${MAX_MODEL_LEN}" \
      --gpu-memory-utilization "${GPU_MEM_UTIL}" \
      --kv-cache-dtype fp8 \
      --kv-cache-memory-bytes "${KV_CACHE_MEMORY}" \
      --block-size "${BLOCK_SIZE}" \
      --max-num-seqs "${MAX_NUM_SEQS}" \
      --enable-auto-tool-choice \
      --tool-call-parser glm47 \
      --reasoning-parser "${REASONING_PARSER}" \
      --skip-mm-profiling \
      ${EAGER_FLAG} \
      ${SPEC_ARGS[@]+"${SPEC_ARGS[@]}"}
  '
