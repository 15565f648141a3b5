"""Build a scaled-up random Llama checkpoint for the stall reproductions (a few hundred MB).

Usage: python make_big_model.py TINY_MODEL_DIR OUT_DIR [--mb 300] [--shards 4] [--hub REPO_ID]
Run with the vLLM venv's python (torch and safetensors). No network, no training: the
tokenizer and chat template are copied from the tiny model; weights are random from a fixed
seed, written as `--shards` safetensors files with an index, so vLLM shows a shard progress
bar. `--hub org/name` lays the model out as a Hugging Face hub cache entry
(OUT_DIR/models--org--name/snapshots/<rev>/) for the download-or-lock reproduction.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "chat_template.jinja", "generation_config.json")
REVISION = "0123456789abcdef0123456789abcdef01234567"


def layout(out_dir: str, hub: str | None) -> str:
    if not hub:
        os.makedirs(out_dir, exist_ok=True)
        return out_dir
    org, name = hub.split("/", 1)
    repo = os.path.join(out_dir, f"models--{org}--{name}")
    snapshot = os.path.join(repo, "snapshots", REVISION)
    os.makedirs(snapshot, exist_ok=True)
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    with open(os.path.join(repo, "refs", "main"), "w") as fh:
        fh.write(REVISION)
    return snapshot


def build(tiny: str, target: str, mb: int, shards: int) -> dict:
    import torch
    from safetensors.torch import save_file

    with open(os.path.join(tiny, "config.json")) as fh:
        config = json.load(fh)
    hidden, inter = 512, 1536
    per_layer = 4 * hidden * hidden + 3 * hidden * inter + 2 * hidden
    vocab = config["vocab_size"]
    layers = max(1, round((mb * 2 ** 20 / 4 - 2 * vocab * hidden) / per_layer))
    heads, kv_heads = 8, 4
    head_dim = hidden // heads
    config.update(hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                  num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim)
    torch.manual_seed(7)
    tensors: dict[str, torch.Tensor] = {
        "model.embed_tokens.weight": torch.randn(vocab, hidden) * 0.02,
        "lm_head.weight": torch.randn(vocab, hidden) * 0.02,
        "model.norm.weight": torch.ones(hidden),
    }
    for i in range(layers):
        p = f"model.layers.{i}."
        tensors[p + "self_attn.q_proj.weight"] = torch.randn(hidden, hidden) * 0.02
        tensors[p + "self_attn.k_proj.weight"] = torch.randn(kv_heads * head_dim, hidden) * 0.02
        tensors[p + "self_attn.v_proj.weight"] = torch.randn(kv_heads * head_dim, hidden) * 0.02
        tensors[p + "self_attn.o_proj.weight"] = torch.randn(hidden, hidden) * 0.02
        tensors[p + "mlp.gate_proj.weight"] = torch.randn(inter, hidden) * 0.02
        tensors[p + "mlp.up_proj.weight"] = torch.randn(inter, hidden) * 0.02
        tensors[p + "mlp.down_proj.weight"] = torch.randn(hidden, inter) * 0.02
        tensors[p + "input_layernorm.weight"] = torch.ones(hidden)
        tensors[p + "post_attention_layernorm.weight"] = torch.ones(hidden)
    names = list(tensors)
    groups = [names[i::shards] for i in range(shards)]
    weight_map, total = {}, 0
    for i, group in enumerate(groups, 1):
        file = f"model-{i:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n].contiguous() for n in group}
        save_file(part, os.path.join(target, file), metadata={"format": "pt"})
        for n in group:
            weight_map[n] = file
            total += part[n].numel() * 4
    with open(os.path.join(target, "model.safetensors.index.json"), "w") as fh:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, fh)
    with open(os.path.join(target, "config.json"), "w") as fh:
        json.dump(config, fh, indent=1)
    for name in TOKENIZER_FILES:
        if os.path.exists(os.path.join(tiny, name)):
            shutil.copy(os.path.join(tiny, name), os.path.join(target, name))
    return {"layers": layers, "bytes": total, "shards": shards}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tiny")
    parser.add_argument("out_dir")
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--hub", default=None)
    args = parser.parse_args()
    target = layout(args.out_dir, args.hub)
    info = build(args.tiny, target, args.mb, args.shards)
    print(json.dumps({"path": target, **info}))


if __name__ == "__main__":
    main()
