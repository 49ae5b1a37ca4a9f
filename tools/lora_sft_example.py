#!/usr/bin/env python3
"""What the LoRA fine-tuning example starts from, made here (nothing downloaded):

  FOLDER/instructions.jsonl   600 prompt/response pairs of four small tasks on a word list
                              (reverse, sort, first and last word, count), a fixed seed
  FOLDER/tokenizer/           a byte-level BPE (vocabulary 512) trained on them by
                              Hugging Face `tokenizers`, <|endoftext|> its end of text
  FOLDER/base/                a small LlamaForCausalLM (plait's llama tiny widths,
                              vocabulary 512) that transformers pre-trains here on plain
                              sequences of the same words (300 AdamW steps; the whole
                              script took 9.3-10.1 s wall, 13.5-15.3 s of CPU, in three
                              runs on a 2-core machine, more on a cold disk's first import)
                              and saves: the model to fine-tune, which knows the words but
                              not the tasks

Then the README's three commands prepare the data (tools/prepare_data.py: loss on the
responses), fine-tune with configs/lora-sft.toml (bundle lora-sft: LoRA, packing) and
export the adapters for PEFT. The default FOLDER is what configs/lora-sft.toml reads.
"""
import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("apple river stone cloud tiger lemon piano garden silver rocket candle forest window "
         "marble violet copper meadow falcon harbor pepper").split()
VOCAB = 512


def instructions(n, seed=7):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = rng.sample(WORDS, rng.randint(3, 7))
        task = i % 4
        if task == 0:
            prompt, response = "reverse: " + " ".join(words), " ".join(reversed(words))
        elif task == 1:
            prompt, response = "sort: " + " ".join(words), " ".join(sorted(words))
        elif task == 2:
            prompt, response = "ends: " + " ".join(words), f"{words[0]} {words[-1]}"
        else:
            prompt, response = "count: " + " ".join(words), str(len(words))
        out.append({"prompt": prompt + "\n", "response": response})
    return out


def make_tokenizer(folder, records):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([r["prompt"] + r["response"] for r in records] + plain_text(3000), trainer)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))


def plain_text(n, seed=11):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) for _ in range(n)]


def make_base(folder, tokenizer_file, steps=300, rows=16, length=64):
    import torch
    import transformers
    from tokenizers import Tokenizer
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False)
    model = transformers.LlamaForCausalLM(config)
    tok = Tokenizer.from_file(str(tokenizer_file))
    eos = tok.token_to_id("<|endoftext|>")
    stream = [t for line in plain_text(3000) for t in tok.encode(line).ids + [eos]]
    data = torch.tensor(stream)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    gen = torch.Generator().manual_seed(0)
    for step in range(steps):
        starts = torch.randint(0, len(stream) - length - 1, (rows,), generator=gen)
        batch = torch.stack([data[s:s + length + 1] for s in starts.tolist()])
        loss = torch.nn.functional.cross_entropy(model(batch[:, :-1]).logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.save_pretrained(str(folder), safe_serialization=True)
    return loss.item()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", nargs="?", default=str(ROOT / "runs/lora-sft-example"))
    folder = Path(ap.parse_args().folder)
    records = instructions(600)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "instructions.jsonl", "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    make_tokenizer(folder / "tokenizer", records)
    loss = make_base(folder / "base", folder / "tokenizer/tokenizer.json")
    print(f"wrote {folder}/instructions.jsonl ({len(records)} pairs), {folder}/tokenizer (BPE, {VOCAB} tokens), "
          f"{folder}/base (LlamaForCausalLM, pre-trained to loss {loss:.3f} on plain word sequences)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
