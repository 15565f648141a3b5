"""Read and write `.safetensors` files with numpy alone (bf16 read, float32 written).

Format: an 8-byte little-endian header length, a JSON header mapping each tensor name to its
dtype, shape and byte range, then the raw little-endian data. numpy has no bfloat16, so BF16
tensors are widened to float32 on read (exact: bf16 is the top half of a float32).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from sparktriage.errors import InputError

_DTYPES = {"F32": np.float32, "F16": np.float16, "U8": np.uint8, "I32": np.int32, "I64": np.int64}


def read(path: Path) -> dict[str, np.ndarray]:
    """All tensors of a safetensors file as numpy arrays (BF16 widened to float32)."""
    try:
        data = path.read_bytes()
        (length,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + length])
    except (OSError, struct.error, ValueError) as exc:
        raise InputError(f"{path}: not a readable safetensors file ({exc})") from exc
    base = 8 + length
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        raw = data[base + start:base + end]
        shape = tuple(info["shape"])
        if info["dtype"] == "BF16":
            half = np.frombuffer(raw, dtype="<u2").astype(np.uint32)
            tensors[name] = (half << 16).view(np.float32).reshape(shape)
        elif info["dtype"] in _DTYPES:
            tensors[name] = np.frombuffer(raw, dtype=_DTYPES[info["dtype"]]).reshape(shape).copy()
        else:
            raise InputError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
    return tensors


def write(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """Write float32 tensors (in name order) as a safetensors file."""
    header: dict = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name], dtype=np.float32)
        blob = array.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # keep the data 8-byte aligned
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)))
        fh.write(text)
        for blob in blobs:
            fh.write(blob)
