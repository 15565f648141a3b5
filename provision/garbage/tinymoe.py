"""A tiny Qwen3-MoE causal LM in plain PyTorch, numerically the architecture vLLM serves.

Used by train.py. The maths follow `Qwen3MoeForCausalLM` (transformers / vLLM): RMSNorm before
attention and MLP, grouped-query attention with per-head RMSNorm on q and k, rotary embeddings
(rotate-half form), and a sparse MoE MLP: softmax router, top-k experts renormalized, SwiGLU
experts (`down(silu(gate(x)) * up(x))`), each expert computing only the tokens routed to it.
Parameter names are the checkpoint names (`model.layers.N.mlp.experts.E.gate_proj.weight`, ...).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class TinyMoeConfig:
    vocab_size: int = 4096
    hidden_size: int = 128
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 32
    num_experts: int = 8
    num_experts_per_tok: int = 2
    moe_intermediate_size: int = 128
    max_position_embeddings: int = 1024
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6

    def hf_config(self, bos: int, eos: int) -> dict:
        """config.json of the checkpoint (architecture Qwen3MoeForCausalLM)."""
        return {
            "architectures": ["Qwen3MoeForCausalLM"],
            "model_type": "qwen3_moe",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": 2 * self.moe_intermediate_size,
            "moe_intermediate_size": self.moe_intermediate_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "num_experts": self.num_experts,
            "num_experts_per_tok": self.num_experts_per_tok,
            "norm_topk_prob": True,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
            "max_position_embeddings": self.max_position_embeddings,
            "rope_theta": self.rope_theta,
            "rope_scaling": None,
            "rms_norm_eps": self.rms_norm_eps,
            "hidden_act": "silu",
            "attention_bias": False,
            "attention_dropout": 0.0,
            "tie_word_embeddings": False,
            "use_sliding_window": False,
            "sliding_window": None,
            "bos_token_id": bos,
            "eos_token_id": eos,
            "torch_dtype": "bfloat16",
        }


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + self.eps) * self.weight


def rope_tables(cfg: TinyMoeConfig, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2, dtype=torch.float32) / cfg.head_dim))
    freqs = torch.outer(torch.arange(length, dtype=torch.float32), inv)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: TinyMoeConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d, hd = cfg.hidden_size, cfg.head_dim
        self.q_proj = nn.Linear(d, cfg.num_attention_heads * hd, bias=False)
        self.k_proj = nn.Linear(d, cfg.num_key_value_heads * hd, bias=False)
        self.v_proj = nn.Linear(d, cfg.num_key_value_heads * hd, bias=False)
        self.o_proj = nn.Linear(cfg.num_attention_heads * hd, d, bias=False)
        self.q_norm = RMSNorm(hd, cfg.rms_norm_eps)
        self.k_norm = RMSNorm(hd, cfg.rms_norm_eps)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        b, t, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, t, cfg.num_attention_heads, cfg.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, t, cfg.num_key_value_heads, cfg.head_dim)).transpose(1, 2)
        v = self.v_proj(x).view(b, t, cfg.num_key_value_heads, cfg.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = cfg.num_attention_heads // cfg.num_key_value_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class Expert(nn.Module):
    def __init__(self, d: int, inter: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(d, inter, bias=False)
        self.up_proj = nn.Linear(d, inter, bias=False)
        self.down_proj = nn.Linear(inter, d, bias=False)


class SparseMoe(nn.Module):
    def __init__(self, cfg: TinyMoeConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.gate = nn.Linear(cfg.hidden_size, cfg.num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(cfg.hidden_size, cfg.moe_intermediate_size)
                                     for _ in range(cfg.num_experts))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cfg = self.cfg
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        probs = F.softmax(self.gate(flat), dim=-1, dtype=torch.float32)
        top_w, top_i = probs.topk(cfg.num_experts_per_tok, dim=-1)
        top_w = top_w / top_w.sum(-1, keepdim=True)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):  # sparse: each expert sees only its tokens
            rows, slot = (top_i == e).nonzero(as_tuple=True)
            if rows.numel() == 0:
                continue
            h = flat[rows]
            y = expert.down_proj(F.silu(expert.gate_proj(h)) * expert.up_proj(h))
            out.index_add_(0, rows, y * top_w[rows, slot].unsqueeze(-1))
        # Switch-style load-balancing loss: fraction routed x mean router probability.
        routed = F.one_hot(top_i, cfg.num_experts).float().sum(-2).mean(0) / cfg.num_experts_per_tok
        aux = cfg.num_experts * (routed * probs.mean(0)).sum()
        return out.reshape(shape), aux


class Layer(nn.Module):
    def __init__(self, cfg: TinyMoeConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = SparseMoe(cfg)


class Body(nn.Module):
    def __init__(self, cfg: TinyMoeConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class TinyMoe(nn.Module):
    def __init__(self, cfg: TinyMoeConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.model = Body(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        cos, sin = rope_tables(cfg, cfg.max_position_embeddings)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.apply(self._init)

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = ids.shape[1]
        cos, sin = self.cos[:t], self.sin[:t]
        x = self.model.embed_tokens(ids)
        aux = x.new_zeros(())
        for layer in self.model.layers:
            x = x + layer.self_attn(layer.input_layernorm(x), cos, sin)
            moe, layer_aux = layer.mlp(layer.post_attention_layernorm(x))
            x = x + moe
            aux = aux + layer_aux
        return self.lm_head(self.model.norm(x)), aux / len(self.model.layers)

    def param_count(self) -> int:
        return sum(p.numel() for p in self.parameters())
