"""Build configuration beyond pyproject.toml: the optional compiled scanner of `sparktriage logs`.

The extension (src/sparktriage/evidence/_fastscan.c) is optional: when no C compiler or Python
headers are available the install still succeeds and the pure-Python scanner is used
(docs/logs.md, "The compiled scanner"). -ffp-contract=off keeps its floating point identical to
Python's (no fused multiply-add).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sparktriage.evidence._fastscan",
            sources=["src/sparktriage/evidence/_fastscan.c"],
            extra_compile_args=["-O2", "-ffp-contract=off", "-fno-strict-aliasing"],
            optional=True,
        )
    ],
)
