"""The routed experts a verify step reads: the union over the tokens it verifies (docs/roofline.md).

At one stream a plain decode step routes one token to `per_token` of the `experts` routed
experts of each MoE layer. A speculative verify step of width w = k + 1 tokens reads the union of
the experts its tokens route to. With independent, uniform routing that union holds on average

    U(w) = E · (1 − (1 − k/E)^w)                E experts, k = experts per token

experts per layer (Kimi K2, 384 experts, top-8: 8, 15.8, 31.0 and 45.6 at w = 1, 2, 4, 6): an
upper bound, since adjacent tokens reuse experts (measured up to ~30% fewer). Routing
correlation ρ is modelled as each further token bringing only a share 1 − ρ of a fresh token's
draws: U_ρ(w) = U(1 + (w − 1)(1 − ρ)). `ratio(w)` = U_ρ(w) / U(1) is how many times the routed
bytes of a plain step a verify step of width w reads. A step over `streams` sequences of w
tokens each (a batch) reads U(streams · (1 + (w − 1)(1 − ρ))): different sequences route
independently of each other.
"""

from __future__ import annotations

import math


def union(experts: int, per_token: int, width: float, correlation: float = 0.0,
          streams: int = 1) -> float:
    """Expected distinct routed experts per layer over `width` tokens of each of `streams`
    sequences (see module doc)."""
    if width <= 0 or streams <= 0:
        return 0.0
    effective = streams * (1.0 + (width - 1.0) * (1.0 - correlation))
    miss = 1.0 - per_token / experts
    if miss <= 0.0:
        return float(experts)
    return experts * (1.0 - math.exp(effective * math.log(miss)))


def ratio(experts: int, per_token: int, width: float, correlation: float = 0.0,
          streams: int = 1) -> float:
    """U_ρ(width) / U(1): the routed bytes of a verify step of `width` tokens (of each of
    `streams` sequences) over a plain step's."""
    return union(experts, per_token, width, correlation, streams) / union(experts, per_token, 1.0)
