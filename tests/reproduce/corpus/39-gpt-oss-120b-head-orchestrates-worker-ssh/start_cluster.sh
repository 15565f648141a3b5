#!/usr/bin/env bash
set -euo pipefail

# ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━
# vLLM Cluster Startup Script
# ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━
# Starts vLLM/Ray on head node and orchestrates worker nodes via SSH.
# Run from head node - it will handle workers automatically.
# ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Load configuration (config.local.env overrides config.env)
if [ -f "${SCRIPT_DIR}/config.local.env" ]; then
  source "${SCRIPT_DIR}/config.local.env"
elif [ -f "${SCRIPT_DIR}/config.env" ]; then
  source "${SCRIPT_DIR}/config.env"
fi

# Configuration (can be overridden by config.env or environment)
IMAGE="${VLLM_IMAGE:-${IMAGE:-nvcr.io/nvidia/vllm:26.04-py3}}"
NAME="${HEAD_CONTAINER_NAME:-${NAME:-ray-head}}"
HF_CACHE="${HF_CACHE:-/raid/hf-cache}"
HF_TOKEN="${HF_TOKEN:-}"
RAY_VERSION="${RAY_VERSION:-2.55.1}"
SKIP_MODEL_DOWNLOAD="${SKIP_MODEL_DOWNLOAD:-}"

# Worker node configuration (for orchestrated setup)
WORKER_HOST="${WORKER_HOST:-}"
WORKER_IB_IP="${WORKER_IB_IP:-${WORKER_IPS:-}}"  # Fallback to WORKER_IPS for backwards compat
WORKER_USER="${WORKER_USER:-$(whoami)}"
WORKER_HF_CACHE="${WORKER_HF_CACHE:-${HF_CACHE}}"

# Model configuration
MODEL="${MODEL:-meta-llama/Llama-3.1-8B-Instruct}"
TENSOR_PARALLEL="${TENSOR_PARALLEL:-2}"
MAX_MODEL_LEN="${MAX_MODEL_LEN:-131072}"
GPU_MEMORY_UTIL="${GPU_MEMORY_UTIL:-0.90}"
SWAP_SPACE="${SWAP_SPACE:-16}"
SHM_SIZE="${SHM_SIZE:-16g}"

# Auto-detect MoE models for expert parallelism
# Known MoE models: gpt-oss, mixtral, deepseek-moe, qwen-moe
if [ -z "${ENABLE_EXPERT_PARALLEL:-}" ]; then
  if echo "${MODEL}" | grep -qiE "(gpt-oss|mixtral|deepseek.*moe|qwen.*moe)"; then
    ENABLE_EXPERT_PARALLEL="true"
  else
    ENABLE_EXPERT_PARALLEL="false"
  fi
fi

TRUST_REMOTE_CODE="${TRUST_REMOTE_CODE:-false}"
# Model loading format (safetensors is recommended)
LOAD_FORMAT="${LOAD_FORMAT:-safetensors}"
EXTRA_ARGS="${EXTRA_ARGS:-}"

# Ports
VLLM_PORT="${VLLM_PORT:-8000}"
RAY_DASHBOARD_PORT="${RAY_DASHBOARD_PORT:-8265}"
RAY_PORT="${RAY_PORT:-6385}"

# Detect local GPU count
LOCAL_GPU_COUNT=$(nvidia-smi -L 2>/dev/null | wc -l || echo "0")
if [ "${LOCAL_GPU_COUNT}" -eq 0 ]; then
  # Fallback: try nvidia-smi query
  LOCAL_GPU_COUNT=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l || echo "1")
fi

# Determine if we're in single-node mode
# Single-node: no WORKER_HOST and TENSOR_PARALLEL fits on local GPUs
if [ -z "${WORKER_HOST}" ] && [ "${TENSOR_PARALLEL}" -le "${LOCAL_GPU_COUNT}" ]; then
  SINGLE_NODE_MODE=true
else
  SINGLE_NODE_MODE=false
fi

# Discover primary RoCE/IB interface using ibdev2netdev
discover_ib_interface() {
  if command -v ibdev2netdev >/dev/null 2>&1; then
    # Get the first active (Up) interface from ibdev2netdev
    local active_line
    active_line=$(ibdev2netdev 2>/dev/null | awk '/\(Up\)/ {print; exit}')

    if [ -n "$active_line" ]; then
      # Extract interface name (5th field, removing parentheses)
      echo "$active_line" | awk '{print $5}' | tr -d '()'
    fi
  fi
}

# Get all active IB/RoCE HCAs (comma-separated for NCCL_IB_HCA)
discover_all_ib_hcas() {
  if command -v ibdev2netdev >/dev/null 2>&1; then
    ibdev2netdev 2>/dev/null | grep "(Up)" | awk '{print $1}' | sort | tr '\n' ',' | sed 's/,$//'
  fi
}

# Get the first IPv4 address from an interface
get_interface_ip() {
  local iface="$1"
  if [ -n "$iface" ]; then
    ip -o addr show "$iface" 2>/dev/null | grep "inet " | awk '{print $4}' | cut -d'/' -f1 | head -1
  fi
}

if [ "${SINGLE_NODE_MODE}" = "true" ]; then
  # Single-node mode: InfiniBand not required
  PRIMARY_IB_IF=""
  if [ -z "${HEAD_IP:-}" ]; then
    HEAD_IP=$(ip -o addr show | grep "inet " | grep -v "127.0.0.1" | grep -v "172.17" | awk '{print $4}' | cut -d'/' -f1 | head -1)
    if [ -z "${HEAD_IP}" ]; then
      HEAD_IP="127.0.0.1"
    fi
  fi
  GLOO_IF="${GLOO_IF:-lo}"
  TP_IF="${TP_IF:-lo}"
  NCCL_IF="${NCCL_IF:-lo}"
  UCX_DEV="${UCX_DEV:-lo}"
  NCCL_IB_HCA=""
  OMPI_MCA_IF="lo"

else
  # Multi-node mode: InfiniBand required for performance

  # Auto-detect primary IB/RoCE interface
  PRIMARY_IB_IF=$(discover_ib_interface)

  # Auto-detect HEAD_IP from IB interface (or use override)
  if [ -z "${HEAD_IP:-}" ]; then
    if [ -n "${PRIMARY_IB_IF}" ]; then
      HEAD_IP=$(get_interface_ip "${PRIMARY_IB_IF}")
    fi
    # Final fallback if auto-detection fails
    if [ -z "${HEAD_IP:-}" ]; then
      echo "ERROR: Could not auto-detect HEAD_IP from InfiniBand/RoCE interface."
      exit 1
    fi
  fi

  # Auto-detect network interfaces from active IB/RoCE devices
  if [ -z "${GLOO_IF:-}" ] || [ -z "${TP_IF:-}" ] || [ -z "${NCCL_IF:-}" ] || [ -z "${UCX_DEV:-}" ]; then
    if [ -n "${PRIMARY_IB_IF}" ]; then
      # Use primary IB interface for all NCCL/GLOO/TP/UCX communication
      GLOO_IF="${GLOO_IF:-${PRIMARY_IB_IF}}"
      TP_IF="${TP_IF:-${PRIMARY_IB_IF}}"
      NCCL_IF="${NCCL_IF:-${PRIMARY_IB_IF}}"
      UCX_DEV="${UCX_DEV:-${PRIMARY_IB_IF}}"
    else
      echo "ERROR: No active InfiniBand/RoCE interface detected."
      exit 1
    fi
  fi

  # Auto-detect InfiniBand HCAs using ibdev2netdev (or use override)
  if [ -z "${NCCL_IB_HCA:-}" ]; then
    IB_DEVICES=$(discover_all_ib_hcas)
    if [ -n "${IB_DEVICES}" ]; then
      NCCL_IB_HCA="${IB_DEVICES}"
    else
      # Fallback: use all IB devices from sysfs
      IB_DEVICES=$(ls -1 /sys/class/infiniband/ 2>/dev/null | tr '\n' ',' | sed 's/,$//')
      NCCL_IB_HCA="${IB_DEVICES:-}"
    fi
  fi

  OMPI_MCA_IF="${NCCL_IF}"
fi

log() {
  echo "[$(date +'%Y-%m-%d %H:%M:%S')] $*"
}

error() {
  echo "[$(date +'%Y-%m-%d %H:%M:%S')] ERROR: $*" >&2
  exit 1
}

# Calculate total steps based on whether worker orchestration is enabled
if [ -n "${WORKER_HOST}" ]; then
  TOTAL_STEPS=12
else
  TOTAL_STEPS=9
fi

log "Step 1/${TOTAL_STEPS}: Pulling Docker image"
if ! docker pull "${IMAGE}"; then
  error "Failed to pull image ${IMAGE}"
fi

log "Step 2/${TOTAL_STEPS}: Cleaning old container"
if docker ps -a --format '{{.Names}}' | grep -qx "${NAME}"; then
  log "  Removing existing container: ${NAME}"
  docker rm -f "${NAME}" >/dev/null
fi

log "Step 3/${TOTAL_STEPS}: Starting head container"

# Build environment variable args for NCCL configuration
# These are passed into the container to configure GPU communication
ENV_ARGS=(
  -e VLLM_HOST_IP="${HEAD_IP}"
  # Debug settings (can be disabled for production by setting NCCL_DEBUG=WARN)
  -e NCCL_DEBUG="${NCCL_DEBUG:-INFO}"
  -e NCCL_DEBUG_SUBSYS="${NCCL_DEBUG_SUBSYS:-INIT,NET}"
  # NVIDIA/GPU settings
  -e NVIDIA_VISIBLE_DEVICES=all
  -e NVIDIA_DRIVER_CAPABILITIES=all
  # Ray settings
  -e RAY_memory_usage_threshold=0.998
  -e RAY_GCS_SERVER_PORT="${RAY_PORT}"
  # vLLM timeout settings (large models like 70B+ can take 20+ minutes to load)
  -e VLLM_RPC_TIMEOUT="${VLLM_RPC_TIMEOUT:-1800}"
  # HuggingFace cache
  -e HF_HOME=/root/.cache/huggingface
)

if [ "${SINGLE_NODE_MODE}" = "true" ]; then
  # Single-node mode: disable IB, use NVLink/PCIe
  ENV_ARGS+=(
    -e NCCL_IB_DISABLE=1
    -e NCCL_SOCKET_IFNAME="${NCCL_IF}"
  )
else
  # Multi-node mode: enable IB/RoCE for high-speed communication
  ENV_ARGS+=(
    # IB/RoCE interface settings for NCCL communication
    -e GLOO_SOCKET_IFNAME="${GLOO_IF}"
    -e TP_SOCKET_IFNAME="${TP_IF}"
    -e NCCL_SOCKET_IFNAME="${NCCL_IF}"
    -e UCX_NET_DEVICES="${UCX_DEV}"
    -e OMPI_MCA_btl_tcp_if_include="${OMPI_MCA_IF}"
    # NCCL InfiniBand settings
    -e NCCL_IB_DISABLE=0
    -e NCCL_IB_HCA="${NCCL_IB_HCA}"
    -e NCCL_NET_GDR_LEVEL=5
  )
fi

# Add HuggingFace token if provided
if [ -n "${HF_TOKEN}" ]; then
  ENV_ARGS+=(-e HF_TOKEN="${HF_TOKEN}")
fi

# Offline mode: prevent HF/Transformers from making network calls inside the container
if [ -n "${SKIP_MODEL_DOWNLOAD}" ]; then
  ENV_ARGS+=(
    -e HF_HUB_OFFLINE=1
    -e TRANSFORMERS_OFFLINE=1
  )
fi

# Build Docker run command
# HF cache is mounted to /root/.cache/huggingface
DOCKER_ARGS=(
  --restart unless-stopped
  --name "${NAME}"
  --gpus all
  --network host
  --shm-size="${SHM_SIZE}"
  --ulimit memlock=-1
  --ulimit stack=67108864
  --cap-add=SYS_NICE
  -v "${HF_CACHE}:/root/.cache/huggingface"
)

# Add InfiniBand device only in multi-node mode (and only if device exists)
if [ "${SINGLE_NODE_MODE}" != "true" ] && [ -d "/dev/infiniband" ]; then
  DOCKER_ARGS+=(--device=/dev/infiniband)
fi

# Run container as root (required for NVIDIA/vLLM)
docker run -d \
  "${DOCKER_ARGS[@]}" \
  "${ENV_ARGS[@]}" \
  "${IMAGE}" sleep infinity

if ! docker ps | grep -q "${NAME}"; then
  error "Container failed to start"
fi

log "  Container started successfully"

# Install Ray if missing (26.04 container does not ship Ray)
if ! docker exec "${NAME}" python3 -c "import ray" 2>/dev/null; then
  log "  Installing Ray ${RAY_VERSION} (not bundled in container)..."
  if ! docker exec "${NAME}" pip install --quiet "ray[default]==${RAY_VERSION}" 2>&1 | tail -3; then
    error "Failed to install Ray ${RAY_VERSION}"
  fi
fi

if [ -n "${WORKER_HOST}" ]; then
  log "Step 8/${TOTAL_STEPS}: Copying worker script to worker node"
  WORKER_SCRIPT="${SCRIPT_DIR}/start_worker_vllm.sh"

  # Copy the worker script to the worker's home directory
  if ! scp "${WORKER_SCRIPT}" "${WORKER_USER}@${WORKER_HOST}:~/start_worker_vllm.sh"; then
    error "Failed to copy worker script to ${WORKER_HOST}"
  fi
fi

# Step number depends on whether worker orchestration steps ran
if [ -n "${WORKER_HOST}" ]; then
  RAY_STEP=9
else
  RAY_STEP=7
fi
log "Step ${RAY_STEP}/${TOTAL_STEPS}: Starting Ray head"
docker exec "${NAME}" bash -lc "
  ray stop --force 2>/dev/null || true
  ray start --head \
    --node-ip-address=${HEAD_IP} \
    --port=${RAY_PORT} \
    --dashboard-host=0.0.0.0 \
    --dashboard-port=${RAY_DASHBOARD_PORT}
" >/dev/null

log "  Ray head started, waiting for readiness..."

if [ -n "${WORKER_HOST}" ]; then
  # Orchestrated mode: Start worker via SSH
  log "Step 10/${TOTAL_STEPS}: Starting worker node via SSH"

  # Build environment variables to pass to worker
  # Worker needs HEAD_IP, MODEL, HF_TOKEN, and HF_CACHE
  WORKER_ENV="HEAD_IP=${HEAD_IP} MODEL=${MODEL} HF_CACHE=${WORKER_HF_CACHE} RAY_VERSION=${RAY_VERSION} RAY_PORT=${RAY_PORT} SKIP_MODEL_DOWNLOAD=1"
  if [ -n "${HF_TOKEN}" ]; then
    WORKER_ENV="${WORKER_ENV} HF_TOKEN=${HF_TOKEN}"
  fi

  # Start the worker script via SSH (run in background)
  # Use ssh -f with nohup to properly detach the process
  # The sleep 1 at the end ensures SSH doesn't exit before nohup takes over
  ssh -f "${WORKER_USER}@${WORKER_HOST}" "nohup bash -c '${WORKER_ENV} bash ~/start_worker_vllm.sh > ~/worker_setup.log 2>&1' </dev/null >/dev/null 2>&1 &"

  # Give SSH a moment to start the remote process
  sleep 2
fi

# Step number depends on whether worker orchestration was used
if [ -n "${WORKER_HOST}" ]; then
  VLLM_STEP=11
else
  VLLM_STEP=8
fi
log "Step ${VLLM_STEP}/${TOTAL_STEPS}: Starting vLLM server"

# Kill any existing vLLM processes
docker exec "${NAME}" bash -lc "pkill -f 'vllm serve' 2>/dev/null || true" || true

# Build vLLM command arguments
VLLM_ARGS="--distributed-executor-backend ray"
VLLM_ARGS="${VLLM_ARGS} --host 0.0.0.0"
VLLM_ARGS="${VLLM_ARGS} --port ${VLLM_PORT}"
VLLM_ARGS="${VLLM_ARGS} --tensor-parallel-size ${TENSOR_PARALLEL}"
VLLM_ARGS="${VLLM_ARGS} --max-model-len ${MAX_MODEL_LEN}"
VLLM_ARGS="${VLLM_ARGS} --gpu-memory-utilization ${GPU_MEMORY_UTIL}"
VLLM_ARGS="${VLLM_ARGS} --swap-space ${SWAP_SPACE}"
VLLM_ARGS="${VLLM_ARGS} --download-dir /root/.cache/huggingface"
VLLM_ARGS="${VLLM_ARGS} --load-format ${LOAD_FORMAT}"

# Add optional flags
if [ "${ENABLE_EXPERT_PARALLEL}" = "true" ]; then
  VLLM_ARGS="${VLLM_ARGS} --enable-expert-parallel"
fi
if [ "${TRUST_REMOTE_CODE}" = "true" ]; then
  VLLM_ARGS="${VLLM_ARGS} --trust-remote-code"
fi
if [ -n "${EXTRA_ARGS}" ]; then
  VLLM_ARGS="${VLLM_ARGS} ${EXTRA_ARGS}"
fi

# Start vLLM in background using nohup
docker exec "${NAME}" bash -lc "
  export HF_HOME=/root/.cache/huggingface
  export RAY_ADDRESS=127.0.0.1:${RAY_PORT}
  export PYTHONUNBUFFERED=1
  export VLLM_LOGGING_LEVEL=INFO
  export VLLM_MXFP4_USE_MARLIN=1

  nohup vllm serve ${MODEL} ${VLLM_ARGS} > /var/log/vllm.log 2>&1 &

  sleep 1
" || true

log "  vLLM server process started"

# Wait for vLLM to become ready with detailed progress feedback
VLLM_READY=false
MAX_WAIT=1800  # 30 minutes max for very large models (70B+ can take 15-20+ min)
START_TIME=$(date +%s)

for i in $(seq 1 $MAX_WAIT); do
  if docker exec "${NAME}" bash -lc "curl -sf http://127.0.0.1:${VLLM_PORT}/health >/dev/null 2>&1"; then
    log "  ✅ MODEL LOADED SUCCESSFULLY!"
    VLLM_READY=true
    break
  fi
  sleep 1
done

echo "━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━"
echo "  Model:              ${MODEL}"
echo "  Tensor Parallelism: ${TENSOR_PARALLEL} GPUs"
echo "  Max Context:        ${MAX_MODEL_LEN} tokens"
echo "  GPU Memory:         ${GPU_MEMORY_UTIL} utilization"
