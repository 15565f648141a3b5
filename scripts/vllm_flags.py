"""Print every `vllm serve` option as `--name bool|value` (input for reproduce's flag list).

Run with the vLLM venv: .venv-vllm/bin/python scripts/vllm_flags.py | sort -u
"""
import argparse

from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser

parser = make_arg_parser(FlexibleArgumentParser())
for action in parser._actions:
    if not action.option_strings:
        continue
    boolean = action.nargs == 0 or isinstance(action, argparse.BooleanOptionalAction)
    for option in action.option_strings:
        print(option, "bool" if boolean else "value")
