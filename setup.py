"""Build configuration beyond pyproject.toml: the optional compiled scanner of `sparktriage logs`.

The extension (src/fastscan/*.c) is optional: when no C compiler or Python
headers are available the install still succeeds and the pure-Python scanner is used
(docs/logs.md, "The compiled scanner"). -ffp-contract=off keeps its floating point identical to
Python's (no fused multiply-add).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
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
