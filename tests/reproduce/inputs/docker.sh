docker run -d --rm --gpus all --ipc host --network host --name vllm-gemma \
  -e HF_TOKEN=hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa654321 -e VLLM_API_KEY -e NCCL_CUMEM_ENABLE=0 \
  -v /data/models:/models:ro -v $HOME/.cache/huggingface:/root/.cache/huggingface \
  --shm-size 16g --ulimit memlock=-1 \
  vllm/vllm-openai:v0.21.1 /models/gemma4-26b-a4b-nvfp4 --served-model-name gemma \
  --max-num-seqs 8 --speculative-config.method mtp --speculative-config.num_speculative_tokens 2 \
  --gpu-memory-utilization 0.85
