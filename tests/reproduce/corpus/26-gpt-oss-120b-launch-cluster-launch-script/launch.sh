# Use with explicit nodes
./launch-cluster.sh -n 198.51.100.1,198.51.100.2 --launch-script vllm-openai-gpt-oss-120b.sh
