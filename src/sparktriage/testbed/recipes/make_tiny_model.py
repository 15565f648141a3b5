"""Build the tiny test-bed causal LM: a locally trained byte-level BPE and a seeded Llama.

Usage: python make_tiny_model.py OUT_DIR [--draft]
Run with the vLLM venv's python (it has torch, tokenizers and transformers). No network.

The tokenizer is trained on the Python standard library sources of the interpreter running
this script, sorted by name, so that the same interpreter always gives the same vocabulary.
`--draft` writes a one-layer sibling with the same tokenizer, used as a speculative draft.
The weights are random from a fixed seed: the model produces nonsense text, but every
request of the delivered-token protocol yields exactly the asked number of tokens.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sysconfig

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SIZES = {
    "main": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, seed=0),
    "draft": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=1, seed=1),
}


def train_tokenizer(out_dir: str):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    stdlib = sysconfig.get_paths()["stdlib"]
    files = sorted(glob.glob(os.path.join(stdlib, "*.py")))[:200]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=2048, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train(files, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=SPECIAL_TOKENS[0], eos_token=SPECIAL_TOKENS[0],
        unk_token=SPECIAL_TOKENS[0], pad_token=SPECIAL_TOKENS[0],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = 512
    fast.save_pretrained(out_dir)
    return tok.get_vocab_size()


def build_model(out_dir: str, vocab_size: int, size: dict) -> int:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    size = dict(size)
    torch.manual_seed(size.pop("seed"))
    config = LlamaConfig(
        vocab_size=vocab_size, max_position_embeddings=512, bos_token_id=0, eos_token_id=0,
        pad_token_id=0, tie_word_embeddings=False, torch_dtype="float32", **size,
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(out_dir, safe_serialization=True)
    return sum(p.numel() for p in model.parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--draft", action="store_true", help="write the one-layer draft model")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    vocab = train_tokenizer(args.out_dir)
    params = build_model(args.out_dir, vocab, SIZES["draft" if args.draft else "main"])
    with open(os.path.join(args.out_dir, "sparktriage-model.json"), "w") as fh:
        json.dump({"kind": "draft" if args.draft else "main", "vocab_size": vocab,
                   "parameters": params}, fh)
    print(f"tiny model: {params} parameters, vocab {vocab}, in {args.out_dir}")


if __name__ == "__main__":
    main()
