"""The FP4 formats follow the real checkpoints: E2M1 table and rounding, nibble order, E4M3,
NVFP4 (16-blocks, E4M3 scales, FP32 global) and MXFP4 (32-blocks, E8M0), the 128x4 swizzle."""

from __future__ import annotations

import numpy as np
import pytest

from sparktriage.testbed.garbage import fp4


def test_e2m1_values_and_ties_to_even():
    assert fp4.e2m1_decode(np.arange(16, dtype=np.uint8)).tolist() == [
        0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6]
    x = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, -0.74, -2.6], dtype=np.float32)
    assert fp4.e2m1_decode(fp4.e2m1_encode(x)).tolist() == [0, 1, 1, 2, 2, 4, 4, 6, -0.5, -3]


def test_packing_puts_the_even_element_in_the_low_nibble():
    codes = np.array([[1, 2, 3, 4]], dtype=np.uint8)
    packed = fp4.pack_nibbles(codes)
    assert packed.tolist() == [[0x21, 0x43]]
    assert fp4.unpack_nibbles(packed).tolist() == codes.tolist()
    assert fp4.unpack_nibbles(packed, low_first=False).tolist() == [[2, 1, 4, 3]]


def test_e4m3_encoding_is_exact_on_every_finite_code():
    codes = np.arange(0x7F, dtype=np.uint8)  # positive finite E4M3FN codes
    values = fp4.e4m3_decode(codes)
    assert values[-1] == 448.0 and np.isnan(fp4.e4m3_decode(np.array([0x7F], dtype=np.uint8)))[0]
    assert fp4.e4m3_encode(values).tolist() == codes.tolist()
    assert fp4.e4m3_encode(np.array([1000.0], dtype=np.float32)).tolist() == [0x7E]  # saturates


def test_other_scale_formats():
    assert fp4.ue8m0_decode(np.array([127, 128, 126], dtype=np.uint8)).tolist() == [1.0, 2.0, 0.5]
    assert np.isnan(fp4.ue8m0_decode(np.array([255], dtype=np.uint8)))[0]
    assert np.isnan(fp4.e5m2_decode(np.array([0x7E], dtype=np.uint8)))[0]  # 448 in E4M3 is NaN in E5M2


@pytest.mark.parametrize("fmt, block, rel_err", [("nvfp4", 16, 0.12), ("mxfp4", 32, 0.16)])
def test_round_trip_layout_and_error(fmt, block, rel_err):
    rng = np.random.default_rng(0)
    w = (rng.normal(size=(64, 128)) * 0.02).astype(np.float32)
    t = fp4.quantize(w, fmt)
    assert t.packed.shape == (64, 64) and t.packed.dtype == np.uint8
    assert t.scales.shape == (64, 128 // block) and t.scales.dtype == np.uint8
    from sparktriage.testbed.garbage.bugs import dequantize
    back = dequantize(t)
    err = np.abs(back - w).mean() / np.abs(w).mean()
    assert 0.01 < err < rel_err
    if fmt == "nvfp4":
        assert t.global_scale == pytest.approx(np.abs(w).max() / (6 * 448), rel=1e-6)
    else:  # E8M0: every block amax / 2**e lies in (3, 6]
        amax = np.abs(w.reshape(64, -1, 32)).max(-1)
        ratio = amax / np.ldexp(1.0, t.scales.astype(int) - 127)
        assert (ratio <= 6).all() and (ratio > 3).all()


def test_swizzle_matches_the_kernel_layout_and_inverts():
    scales = np.arange(130 * 6).reshape(130, 6)
    buf = fp4.swizzle(scales)
    assert buf.size == 256 * 8  # rows padded to 128, columns to 4
    # in tile (mt, kt) byte [i, j, k] holds row mt*128 + j*32 + i, column kt*4 + k
    tiles = buf.reshape(2, 2, 32, 4, 4)
    assert tiles[0, 1, 5, 2, 1] == scales[2 * 32 + 5, 1 * 4 + 1]
    assert tiles[0, 1, 5, 2, 3] == 0  # padding column
    assert tiles[1, 0, 1, 0, 1] == scales[128 + 1, 1]
    assert np.array_equal(fp4.unswizzle(buf, 130, 6), scales)
