vllm serve RadixArk/Qwen3.8-Flash-Next-NVFP4 --served-model-name flashnext \
  --max-model-len 8192 --max-num-seqs 16 --max-num-batched-tokens 4096 \
  --gpu-memory-utilization 0.90 --no-enable-prefix-caching --enforce-eager
