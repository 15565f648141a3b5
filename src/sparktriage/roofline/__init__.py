"""The bandwidth roofline of single-stream decode: profiles and the ceiling (docs/roofline.md)."""
