#!/bin/bash
# Client's launch script for two DGX Sparks (node 0 shown; node 1 identical with --node-rank 1 --headless)
set -euo pipefail
export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz123456
export VLLM_HOST_IP=10.10.0.1
export NCCL_SOCKET_IFNAME=enp1s0f0np0
export GLOO_SOCKET_IFNAME=enp1s0f0np0
export VLLM_USE_FLASHINFER_MOE_FP4=1
NCCL_DEBUG=WARN vllm serve /models/Kimi-K2.6-NVFP4 \
  --served-model-name kimi \
  -tp 2 --nnodes 2 --node-rank 0 --master-addr 10.10.0.1 --master-port 29501 \
  --enable-expert-parallel --trust-remote-code \
  --max_model_len 65536 --gpu-memory-utilization 0.9 --kv-cache-dtype fp8 \
  --speculative-config '{"method":"eagle3","model":"lightseekorg/kimi-k2.6-eagle3","num_speculative_tokens":3}' \
  --compilation-config.cudagraph_mode FULL_DECODE_ONLY \
  --enable-prefix-caching --api-key sk-proj-SECRETsecretSECRET1234 \
  --frobnicate-kv 3 \
  --port 8000 2>&1 | tee serve.log
