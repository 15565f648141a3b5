"""Build configuration beyond pyproject.toml: the optional compiled scanner of `sparktriage logs`.

The extension (src/fastscan/*.c) is optional: when no C compiler or Python
headers are available the install still succeeds and the pure-Python scanner is used
(docs/logs.md, "The compiled scanner"). -ffp-contract=off keeps its floating point identical to
Python's (no fused multiply-add).

SPARKTRIAGE_PURE_WHEEL=1 leaves the extension out altogether: the wheel is then `py3-none-any`
and installs unchanged on Linux x86_64 and aarch64 and on macOS (README, "Install the tool
alone").
"""

import os

from setuptools import Extension, setup

PURE = os.environ.get("SPARKTRIAGE_PURE_WHEEL") == "1"

setup(
    ext_modules=[] if PURE else [
        Extension(
            "sparktriage.logs._fastscan",
            sources=[f"src/fastscan/{name}.c"
                     for name in ("module", "search", "gate", "hotline", "fold", "state")],
            depends=["src/fastscan/fastscan.h"],
            extra_compile_args=["-O2", "-ffp-contract=off", "-fno-strict-aliasing",
                                "-fvisibility=hidden"],
            optional=True,
        )
    ],
)
