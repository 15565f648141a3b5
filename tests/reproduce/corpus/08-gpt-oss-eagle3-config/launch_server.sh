# Launch the vLLM server
vllm serve openai/gpt-oss-120b \
  --config GPT-OSS_EAGLE3_Blackwell.yaml \
  --tensor-parallel-size 1 &
