"""sparktriage: diagnose vLLM deployments of large FP4 MoE models on GB10 / DGX Spark clusters."""

__version__ = "0.1.0"
