"""Train the tiny MoE test-bed model on CPU and write it as a Qwen3-MoE checkpoint.

Usage (the committed model, docs/garbage.md):
    .venv-vllm/bin/python provision/garbage/train.py /tmp/phase1 --steps 1000 --stop-after 600
    .venv-vllm/bin/python provision/garbage/train.py provision/garbage/model --init /tmp/phase1 --phase 1 --steps 700
Run with the vLLM venv's python (torch, tokenizers, transformers, safetensors). No network.

Deterministic: fixed seeds, one thread, a fixed number of steps; the corpus comes from
corpus.py (stdlib text committed under data/, synthetic skills generated from a seed; phase 1
uses the skill-heavy mixture). About 25-40 minutes on one core of a shared machine. The result
is committed, so CI never retrains; the corrupted variants are built from it at test time
(sparktriage.testbed.garbage).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import EOS, IM_END, IM_START, Corpus  # noqa: E402
from tinymoe import TinyMoe, TinyMoeConfig  # noqa: E402

SEED = 20261129
SPECIALS = [EOS, IM_START, IM_END]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SEQ_LEN, BATCH = 256, 8
LR_MAX, LR_MIN, WARMUP = 3e-3, 2e-4, 50
AUX_COEF = 0.01


def train_tokenizer(corpus: Corpus, vocab_size: int, out_dir: str):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    # Digits one by one (as Llama 3 / Qwen do); byte-level BPE so any text is encodable.
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(SPECIALS), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    sample = [corpus.document() for _ in range(30000)]
    tok.train_from_iterator(sample, trainer)
    tok.add_special_tokens(SPECIALS)  # after the byte alphabet: id 0 is "!" as in GPT-2/Qwen
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOS, eos_token=EOS,
                                   unk_token=None, pad_token=EOS)
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = 1024
    fast.save_pretrained(out_dir)
    return fast


def batches(corpus: Corpus, tok, rng: torch.Generator):
    eos = tok.convert_tokens_to_ids(EOS)
    buffer: list[int] = []
    need = BATCH * (SEQ_LEN + 1)
    while True:
        while len(buffer) < need:
            buffer.extend(tok.encode(corpus.document(), add_special_tokens=False) + [eos])
        chunk, buffer = buffer[:need], buffer[need:]
        yield torch.tensor(chunk, dtype=torch.long).view(BATCH, SEQ_LEN + 1)


def lr_at(step: int, steps: int) -> float:
    if step < WARMUP:
        return LR_MAX * (step + 1) / WARMUP
    progress = (step - WARMUP) / max(1, steps - WARMUP)
    return LR_MIN + 0.5 * (LR_MAX - LR_MIN) * (1 + math.cos(math.pi * progress))


def evaluate(model: TinyMoe, tok, seed: int, n: int = 8) -> float:
    model.eval()
    corpus = Corpus(seed)
    gen = batches(corpus, tok, torch.Generator())
    losses = []
    with torch.no_grad():
        for _ in range(n):
            ids = next(gen)
            logits, _ = model(ids[:, :-1])
            losses.append(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1)).item())
    model.train()
    return sum(losses) / len(losses)


def save(model: TinyMoe, tok, out_dir: str, meta: dict) -> None:
    from safetensors.torch import save_file

    tensors = {name: p.detach().to(torch.bfloat16).contiguous() for name, p in model.state_dict().items()
               if name not in ("cos", "sin")}
    save_file(tensors, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    eos, im_end = tok.convert_tokens_to_ids(EOS), tok.convert_tokens_to_ids(IM_END)
    config = model.cfg.hf_config(bos=eos, eos=eos)
    with open(os.path.join(out_dir, "config.json"), "w") as fh:
        json.dump(config, fh, indent=2)
    with open(os.path.join(out_dir, "generation_config.json"), "w") as fh:
        json.dump({"bos_token_id": eos, "eos_token_id": [im_end, eos], "do_sample": False}, fh, indent=2)
    with open(os.path.join(out_dir, "sparktriage-model.json"), "w") as fh:
        json.dump(meta, fh, indent=2)


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", default=os.path.join(here, "model"))
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--init", default=None,
                        help="continue from this checkpoint (its weights and tokenizer) with a fresh schedule")
    parser.add_argument("--phase", type=int, default=0,
                        help="1: continue with the skill-heavy mixture (corpus seed offset 1)")
    parser.add_argument("--stop-after", type=int, default=None,
                        help="stop (and save) after this many steps of the --steps schedule")
    parser.add_argument("--save-every", type=int, default=100,
                        help="also write the checkpoint every N steps (the last one is the result)")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.set_num_threads(1)  # one thread: bit-reproducible on any machine, no OpenMP spinning when shared
    torch.manual_seed(SEED)
    cfg = TinyMoeConfig()
    corpus = Corpus(SEED + args.phase, skills=args.phase > 0)
    if args.init:
        from safetensors.torch import load_file
        from transformers import PreTrainedTokenizerFast

        tok = PreTrainedTokenizerFast.from_pretrained(args.init)
        if os.path.abspath(args.init) != os.path.abspath(args.out_dir):
            tok.save_pretrained(args.out_dir)
        model = TinyMoe(cfg)
        state = {k: v.float() for k, v in load_file(os.path.join(args.init, "model.safetensors")).items()}
        model.load_state_dict(state, strict=False)
        previous = json.load(open(os.path.join(args.init, "sparktriage-model.json")))
    else:
        tok = train_tokenizer(corpus, cfg.vocab_size, args.out_dir)
        model = TinyMoe(cfg)
        previous = None
    assert len(tok) == cfg.vocab_size, len(tok)
    opt = torch.optim.AdamW(model.parameters(), lr=LR_MAX, betas=(0.9, 0.95), weight_decay=0.05)
    gen = batches(corpus, tok, torch.Generator().manual_seed(SEED + args.phase))
    started = time.time()
    last = args.steps if args.stop_after is None else min(args.steps, args.stop_after)
    for step in range(last):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args.steps)
        ids = next(gen)
        logits, aux = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, cfg.vocab_size), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        (loss + AUX_COEF * aux).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == last - 1:
            print(f"step {step:5d} loss {loss.item():.3f} aux {aux.item():.3f} "
                  f"lr {lr_at(step, args.steps):.2e} {time.time() - started:.0f}s", flush=True)
        if args.save_every and (step + 1) % args.save_every == 0 and step + 1 < last:
            save(model, tok, args.out_dir, {"steps_done": step + 1, "steps_planned": args.steps,
                                            "seed": SEED, "train_loss": round(loss.item(), 4)})
    held_out = evaluate(model, tok, SEED + 1)
    meta = {"architecture": "Qwen3MoeForCausalLM", "parameters": model.param_count(),
            "steps": last, "steps_scheduled": args.steps, "tokens_seen": last * BATCH * SEQ_LEN, "seed": SEED, "phase": args.phase,
            "continued_from": previous,
            "final_train_loss": round(loss.item(), 4), "held_out_loss": round(held_out, 4),
            "train_seconds": round(time.time() - started)}
    save(model, tok, args.out_dir, meta)
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
