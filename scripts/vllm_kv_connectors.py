"""Print the KV connector names vLLM's connector factory registers (reproduce's connector list).

Run with the vLLM venv: .venv-vllm/bin/python scripts/vllm_kv_connectors.py
  > src/sparktriage/reproduce/data/vllm_kv_connectors.txt
Reads the factory module's source (every `KVConnectorFactory.register_connector("NAME", ...)`
call) without importing the connectors themselves.
"""
import ast
import importlib.util

import vllm

MODULE = "vllm.distributed.kv_transfer.kv_connector.factory"

spec = importlib.util.find_spec(MODULE)
tree = ast.parse(open(spec.origin, encoding="utf-8").read())
names = sorted({node.args[0].value for node in ast.walk(tree)
                if isinstance(node, ast.Call) and getattr(node.func, "attr", "") ==
                "register_connector" and node.args and isinstance(node.args[0], ast.Constant)})
print(f"# KV connectors vLLM {vllm.__version__} registers ({MODULE}); regenerate with "
      ".venv-vllm/bin/python scripts/vllm_kv_connectors.py")
for name in names:
    print(name)
