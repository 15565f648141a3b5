"""The garbage test bed: a tiny trained MoE model and FP4 dispatch bugs applied to it.

`fp4` implements the NVFP4 and MXFP4 checkpoint formats (E2M1 nibbles, block scales, packing);
`bugs` is the catalogue of dequantization-path bugs; `variants` writes a corrupted (or correctly
round-tripped) copy of the trained model as an ordinary float checkpoint that real vLLM serves.
The trained model itself lives in the repository (provision/garbage/model, docs/garbage.md).
Everything here needs numpy only, so tests build variants in seconds.
"""
