#!/usr/bin/env bash
set -euo pipefail

# Launch nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4 on the running Ray-
# clustered vLLM container on Node 1. Ray dispatches shard 2 to Node 2 over the
# ~800 GbE data plane established by run_headnode_2.sh / run_workernode_2.sh.
#
# Reference: https://huggingface.co/nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4
#            https://build.nvidia.com/spark/vllm

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "${SCRIPT_DIR}/../cluster/lib.sh"
load_env "${SCRIPT_DIR}"
: "${VLLM_API_KEY:?VLLM_API_KEY not set (expected in nemotron/.env)}"
: "${HF_TOKEN:?HF_TOKEN not set (expected in nemotron/.env)}"

# --- Overridable knobs (env-driven) ---
MODEL_CKPT="${MODEL_CKPT:-nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4}"
SERVED_NAME="${SERVED_NAME:-nvidia/nemotron-3-super}"
MAX_MODEL_LEN="${MAX_MODEL_LEN:-262144}"
GPU_MEM_UTIL="${GPU_MEM_UTIL:-0.75}"
TP_SIZE="${TP_SIZE:-2}"
PP_SIZE="${PP_SIZE:-1}"
PORT="${PORT:-8000}"

VLLM_CONTAINER=$(find_ray_container)
echo "Using container: ${VLLM_CONTAINER}"
echo "  model:           ${MODEL_CKPT}"
echo "  TP / PP:         ${TP_SIZE} / ${PP_SIZE}"
echo "  max-model-len:   ${MAX_MODEL_LEN}"
echo "  gpu-mem-util:    ${GPU_MEM_UTIL}"
echo "  MTP spec decode: ${ENABLE_MTP:-0}"
echo "  enforce-eager:   ${ENABLE_EAGER:-0}"
echo "  port:            ${PORT}"

# Optional MTP speculative decoding (off by default; HF DGX Spark example
# uses {"method":"mtp","num_speculative_tokens":3,"moe_backend":"triton"}).
# Note: spec decoding across TP=2 over the inter-node link adds latency; verify
# end-to-end throughput before keeping it on.
SPEC_FLAG=""
if [[ "${ENABLE_MTP:-0}" == "1" ]]; then
  SPEC_FLAG='--speculative_config {"method":"mtp","num_speculative_tokens":3,"moe_backend":"triton"}'
fi

# Optional eager mode (disables CUDA graphs; trades speed for stability if
# graph capture spikes memory on first inference).
EAGER_FLAG=""
if [[ "${ENABLE_EAGER:-0}" == "1" ]]; then
  EAGER_FLAG="--enforce-eager"
fi

# Sanity-check that the head Ray container actually has the NVFP4 vars in its
# env. If missing, the user forgot to source nemotron/cluster-env.sh before
# bringing the cluster up -- rank 1 on the worker won't see them either, and
# the run will fail at the first FP4 matmul or allreduce. Exit early with a
# clear message rather than letting it crash inside vLLM.
MISSING_VARS=$(docker exec "${VLLM_CONTAINER}" /bin/bash -c '
  set -u
  missing=""
  for V in VLLM_NVFP4_GEMM_BACKEND VLLM_FLASHINFER_ALLREDUCE_BACKEND VLLM_USE_FLASHINFER_MOE_FP4 VLLM_ALLOW_LONG_MAX_MODEL_LEN; do
    [[ -z "${!V:-}" ]] && missing="${missing} $V"
  done
  echo "${missing}"
' | xargs)
if [[ -n "${MISSING_VARS}" ]]; then
  cat >&2 <<EOF
ERROR: Required NVFP4 env vars are not set inside the Ray container:
  ${MISSING_VARS}

These must be present at container START time on BOTH nodes; they cannot be
added now via docker exec because Ray-spawned rank-1 workers on the worker
node would still be missing them. Tear the cluster down and bring it back up
after sourcing nemotron/cluster-env.sh on each node:

  source nemotron/cluster-env.sh
  cd cluster/head && bash run_headnode_2.sh        # on Node 1
  source nemotron/cluster-env.sh
  cd cluster/worker && bash run_workernode_2.sh    # on Node 2
EOF
  exit 1
fi

docker exec -it \
  -e VLLM_API_KEY="${VLLM_API_KEY}" \
  -e HF_TOKEN="${HF_TOKEN}" \
  -e MODEL_CKPT="${MODEL_CKPT}" \
  -e SERVED_NAME="${SERVED_NAME}" \
  -e MAX_MODEL_LEN="${MAX_MODEL_LEN}" \
  -e GPU_MEM_UTIL="${GPU_MEM_UTIL}" \
  -e TP_SIZE="${TP_SIZE}" \
  -e PP_SIZE="${PP_SIZE}" \
  -e PORT="${PORT}" \
  -e SPEC_FLAG="${SPEC_FLAG}" \
  -e EAGER_FLAG="${EAGER_FLAG}" \
  "${VLLM_CONTAINER}" /bin/bash -c '
    set -euo pipefail

    # Fetch reasoning parser plugin inside the container (cached in HF cache so
    # it survives container restarts as long as ~/.cache/huggingface is mounted,
    # which it is per run_cluster.sh).
    PARSER=/root/.cache/huggingface/super_v3_reasoning_parser.py
    if [[ ! -f "${PARSER}" ]]; then
      echo "Fetching reasoning parser plugin..."
      curl -fsSL \
        -o "${PARSER}" \
        "https://huggingface.co/${MODEL_CKPT}/raw/main/super_v3_reasoning_parser.py"
    fi

    # shellcheck disable=SC2086
    exec vllm serve "${MODEL_CKPT}" \
      --served-model-name "${SERVED_NAME}" \
      --host 0.0.0.0 \
      --port "${PORT}" \
      --tensor-parallel-size "${TP_SIZE}" \
      --pipeline-parallel-size "${PP_SIZE}" \
      --data-parallel-size 1 \
      --quantization fp4 \
      --moe-backend marlin \
      --dtype auto \
      --kv-cache-dtype fp8 \
      --mamba-ssm-cache-dtype "${MAMBA_SSM_DTYPE:-auto}" \
      --max-model-len "${MAX_MODEL_LEN}" \
      --gpu-memory-utilization "${GPU_MEM_UTIL}" \
      --max-cudagraph-capture-size 128 \
      --enable-chunked-prefill \
      --async-scheduling \
      --swap-space 0 \
      --trust-remote-code \
      --reasoning-parser-plugin "${PARSER}" \
      --reasoning-parser super_v3 \
      --enable-auto-tool-choice \
      --tool-call-parser qwen3_coder \
      ${EAGER_FLAG} \
      ${SPEC_FLAG}
  '
