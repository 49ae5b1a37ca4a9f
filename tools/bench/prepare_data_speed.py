#!/usr/bin/env python3
"""How fast tools/prepare_data.py turns JSONL into a token file (MB of JSONL per second).

  .venv/bin/python tools/bench/prepare_data_speed.py [--mb 50] [--repeats 3] [--vocab 8192]

Makes its own data (pseudo-words drawn by a Zipf law, a third each text, prompt/response
and chat records) and its own byte-level BPE (`tokenizers`' trainer, --vocab tokens) and a
SentencePiece unigram model, then times prepare_data.py end to end (start-up, reading,
rendering, encoding, writing) on each, printing the median of --repeats runs. Nothing is
downloaded.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def words(rng, n_words=20000):
    letters = np.array(list("etaoinshrdlucmfwypvbgkjqxz"))
    return ["".join(rng.choice(letters, size=int(rng.integers(2, 10)))) for _ in range(n_words)]


def text(rng, vocab, n):
    ranks = np.minimum(rng.zipf(1.2, size=n) - 1, len(vocab) - 1)
    return " ".join(vocab[r] for r in ranks)


def make_jsonl(path, megabytes, rng, vocab):
    size = 0
    with open(path, "w") as f:
        i = 0
        while size < megabytes * 1e6:
            kind = i % 3
            if kind == 0:
                r = {"text": text(rng, vocab, 300)}
            elif kind == 1:
                r = {"prompt": text(rng, vocab, 60), "response": text(rng, vocab, 150)}
            else:
                r = {"messages": [{"role": "user", "content": text(rng, vocab, 50)},
                                  {"role": "assistant", "content": text(rng, vocab, 120)},
                                  {"role": "user", "content": text(rng, vocab, 30)},
                                  {"role": "assistant", "content": text(rng, vocab, 80)}]}
            line = json.dumps(r) + "\n"
            f.write(line)
            size += len(line)
            i += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=8192)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    vocab = words(rng)
    with tempfile.TemporaryDirectory() as work:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        import sentencepiece as spm
        corpus = [text(rng, vocab, 200) for _ in range(3000)]
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train_from_iterator(corpus, trainers.BpeTrainer(
            vocab_size=args.vocab, special_tokens=["<|endoftext|>", "<|user|>", "<|assistant|>", "<|end|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        bpe = os.path.join(work, "bpe")
        os.makedirs(bpe)
        tok.save(os.path.join(bpe, "tokenizer.json"))
        with open(os.path.join(bpe, "tokenizer_config.json"), "w") as f:
            json.dump({"eos_token": "<|endoftext|>", "chat_template": TEMPLATE}, f)
        with open(os.path.join(work, "corpus.txt"), "w") as f:
            f.write("\n".join(corpus))
        spm.SentencePieceTrainer.train(input=os.path.join(work, "corpus.txt"), model_prefix=os.path.join(work, "sp"),
                                       vocab_size=args.vocab, model_type="unigram", minloglevel=2,
                                       hard_vocab_limit=False)
        with open(os.path.join(work, "chat.jinja"), "w") as f:
            f.write(TEMPLATE)
        data = os.path.join(work, "data.jsonl")
        make_jsonl(data, args.mb, rng, vocab)
        mb = os.path.getsize(data) / 1e6
        print(f"{mb:.1f} MB of JSONL; {os.cpu_count()} cores")
        for name, tokenizer, extra in (("tokenizers BPE", bpe, []),
                                       ("SentencePiece unigram", os.path.join(work, "sp.model"),
                                        ["--chat-template", os.path.join(work, "chat.jinja")])):
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "prepare_data.py"), "--tokenizer",
                                    tokenizer, "--out", os.path.join(work, "out.bin"), "--force", "--quiet", data] + extra,
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(r.stderr)
                times.append(time.perf_counter() - start)
            t = statistics.median(times)
            print(f"{name:24s} vocab {args.vocab}: median {t:.2f} s of {args.repeats} -> {mb / t:.2f} MB/s "
                  f"(runs {', '.join(f'{x:.2f}' for x in times)})")


if __name__ == "__main__":
    main()
