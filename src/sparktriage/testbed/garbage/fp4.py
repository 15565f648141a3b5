"""NVFP4 and MXFP4 as real checkpoints store them, and the pieces a dequantizer reads.

E2M1 codes (sign bit 3, two exponent bits with bias 1, one mantissa bit) hold the values
0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives; two codes share a byte along the input (K)
axis, element 2i in the low nibble. NVFP4 (ModelOpt layout): blocks of 16 along K, one FP8 E4M3
scale per block (`weight_scale`, [N, K/16]) and one FP32 per-tensor scale (`weight_scale_2` =
amax / (6 * 448)); value = e2m1 * e4m3 * global. MXFP4 (OCP MX): blocks of 32, one E8M0 scale
per block (unsigned exponent, bias 127); value = e2m1 * 2**(e - 127). The 128x4 scale swizzle
is the layout CUTLASS-style kernels read (docs/garbage.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)
E2M1_TABLE = np.concatenate([E2M1_VALUES, -E2M1_VALUES])  # code -> value (code 8 is -0)
E4M3_MAX = 448.0
NVFP4_BLOCK, MXFP4_BLOCK = 16, 32


# ---- element codes ------------------------------------------------------------------------
def e2m1_encode(x: np.ndarray) -> np.ndarray:
    """Round to the nearest E2M1 value (ties to the even mantissa) and return 4-bit codes."""
    mag = np.minimum(np.abs(x), 6.0)
    # Midpoints between neighbouring values; a tie goes to the code with mantissa 0 (even).
    bounds = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], dtype=np.float32)
    lower = np.searchsorted(bounds, mag, side="left")
    tie = np.isin(mag, bounds)
    code = np.where(tie & (lower % 2 == 1), lower + 1, lower).astype(np.uint8)
    sign = np.where(np.signbit(x) & (code > 0), 8, 0).astype(np.uint8)
    return (code | sign).astype(np.uint8)


def e2m1_decode(codes: np.ndarray) -> np.ndarray:
    return E2M1_TABLE[codes & 0x0F]


def pack_nibbles(codes: np.ndarray) -> np.ndarray:
    """[..., K] codes -> [..., K/2] bytes, element 2i in the low nibble."""
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


def unpack_nibbles(packed: np.ndarray, low_first: bool = True) -> np.ndarray:
    low, high = packed & 0x0F, packed >> 4
    first, second = (low, high) if low_first else (high, low)
    return np.stack([first, second], axis=-1).reshape(*packed.shape[:-1], packed.shape[-1] * 2)


# ---- scale formats --------------------------------------------------------------------------
def _e4m3_table() -> np.ndarray:
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exp, man = (codes >> 3) & 0x0F, codes & 0x07
    normal = (1 + man / 8.0) * np.power(2.0, exp - 7)
    sub = (man / 8.0) * 2.0 ** -6
    vals = sign * np.where(exp == 0, sub, normal)
    vals[(codes & 0x7F) == 0x7F] = np.nan  # E4M3FN: no infinity, S.1111.111 is NaN
    return vals.astype(np.float32)


def _e5m2_table() -> np.ndarray:
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exp, man = (codes >> 2) & 0x1F, codes & 0x03
    normal = (1 + man / 4.0) * np.power(2.0, exp - 15)
    sub = (man / 4.0) * 2.0 ** -14
    vals = sign * np.where(exp == 0, sub, normal)
    vals[(exp == 31) & (man == 0)] = np.inf * sign[(exp == 31) & (man == 0)]
    vals[(exp == 31) & (man != 0)] = np.nan
    return vals.astype(np.float32)


E4M3_TABLE = _e4m3_table()
E5M2_TABLE = _e5m2_table()
_E4M3_POS = E4M3_TABLE[:0x7F]  # codes 0..126, increasing


def e4m3_encode(x: np.ndarray) -> np.ndarray:
    """Positive float32 -> E4M3FN byte, round to nearest (ties to even code), saturating."""
    x = np.clip(np.asarray(x, dtype=np.float32), 0.0, E4M3_MAX)
    hi = np.clip(np.searchsorted(_E4M3_POS, x, side="left"), 1, len(_E4M3_POS) - 1)
    lo = hi - 1
    d_lo, d_hi = x - _E4M3_POS[lo], _E4M3_POS[hi] - x
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    return np.where(pick_hi, hi, lo).astype(np.uint8)


def e4m3_decode(b: np.ndarray) -> np.ndarray:
    return E4M3_TABLE[b]


def e5m2_decode(b: np.ndarray) -> np.ndarray:
    return E5M2_TABLE[b]


def ue8m0_decode(b: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        out = np.ldexp(np.float32(1.0), b.astype(np.int32) - 127).astype(np.float32)
    return np.where(b == 0xFF, np.float32(np.nan), out)


# ---- whole tensors ------------------------------------------------------------------------
@dataclass(frozen=True)
class FP4Tensor:
    """One quantized weight [N, K] as a checkpoint stores it."""

    fmt: str  # "nvfp4" or "mxfp4"
    packed: np.ndarray  # uint8 [N, K/2]
    scales: np.ndarray  # uint8 [N, K/block]: E4M3 (nvfp4) or E8M0 (mxfp4)
    global_scale: float  # nvfp4 weight_scale_2; 1.0 for mxfp4
    shape: tuple[int, int]

    @property
    def block(self) -> int:
        return NVFP4_BLOCK if self.fmt == "nvfp4" else MXFP4_BLOCK


def quantize_nvfp4(w: np.ndarray) -> FP4Tensor:
    n, k = w.shape
    w = w.astype(np.float32)
    amax = float(np.abs(w).max()) or 1.0
    global_scale = amax / (6.0 * E4M3_MAX)
    blocks = w.reshape(n, k // NVFP4_BLOCK, NVFP4_BLOCK)
    block_amax = np.abs(blocks).max(-1)
    scale_codes = e4m3_encode(block_amax / (6.0 * global_scale))
    scale_codes = np.where(scale_codes == 0, e4m3_encode(np.float32(1.0)), scale_codes).astype(np.uint8)
    denom = (e4m3_decode(scale_codes) * global_scale)[..., None]
    codes = e2m1_encode(blocks / denom).reshape(n, k)
    return FP4Tensor("nvfp4", pack_nibbles(codes), scale_codes, np.float32(global_scale).item(), (n, k))


def quantize_mxfp4(w: np.ndarray) -> FP4Tensor:
    n, k = w.shape
    blocks = w.astype(np.float32).reshape(n, k // MXFP4_BLOCK, MXFP4_BLOCK)
    amax = np.abs(blocks).max(-1)
    with np.errstate(divide="ignore"):
        exp = np.ceil(np.log2(np.where(amax > 0, amax / 6.0, 2.0 ** -127)))
    exp = np.clip(exp, -127, 127)
    codes = e2m1_encode(blocks / np.ldexp(1.0, exp.astype(np.int32))[..., None]).reshape(n, k)
    return FP4Tensor("mxfp4", pack_nibbles(codes), (exp + 127).astype(np.uint8), 1.0, (n, k))


def quantize(w: np.ndarray, fmt: str) -> FP4Tensor:
    if fmt == "nvfp4":
        return quantize_nvfp4(w)
    if fmt == "mxfp4":
        return quantize_mxfp4(w)
    raise ValueError(f"unknown FP4 format {fmt!r}")


def decode_scales(t: FP4Tensor, scale_bytes: np.ndarray, as_format: str | None = None) -> np.ndarray:
    """Scale bytes -> float multipliers, read in the tensor's format or in `as_format`."""
    fmt = as_format or ("e4m3" if t.fmt == "nvfp4" else "ue8m0")
    decoder = {"e4m3": e4m3_decode, "e5m2": e5m2_decode, "ue8m0": ue8m0_decode}[fmt]
    return decoder(scale_bytes)


# ---- the 128x4 scale swizzle of CUTLASS-style kernels --------------------------------------
def _padded(scales: np.ndarray) -> tuple[np.ndarray, int, int]:
    rows, cols = scales.shape
    pr, pc = -(-rows // 128) * 128, -(-cols // 4) * 4
    out = np.zeros((pr, pc), dtype=scales.dtype)
    out[:rows, :cols] = scales
    return out, pr, pc


def swizzle(scales: np.ndarray) -> np.ndarray:
    """Linear [rows, cols] scales -> the flat swizzled buffer (rows padded to 128, cols to 4)."""
    padded, pr, pc = _padded(scales)
    tiles = padded.reshape(pr // 128, 4, 32, pc // 4, 4).transpose(0, 3, 2, 1, 4)
    return tiles.reshape(-1)


def unswizzle(buffer: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """The inverse of `swizzle`: flat swizzled buffer -> linear [rows, cols]."""
    pr, pc = -(-rows // 128) * 128, -(-cols // 4) * 4
    tiles = buffer.reshape(pr // 128, pc // 4, 32, 4, 4).transpose(0, 3, 2, 1, 4)
    return tiles.reshape(pr, pc)[:rows, :cols]
