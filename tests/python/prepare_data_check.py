#!/usr/bin/env python3
"""tools/prepare_data.py against the tokenizer libraries, and plait reading what it writes.

Nothing is downloaded: the test trains its own tokenizers on a corpus it makes.
  * A byte-level BPE (`tokenizers`' trainer, as GPT-2's) with chat markers and a chat
    template in tokenizer_config.json, and a SentencePiece unigram model.
  * JSONL of the three kinds (text, prompt/response, chat). For each tokenizer, the file's
    tokens are the library's own encoding of each piece, the loss mask is 1 exactly on the
    responses and assistant turns (and their end-of-text), all of a text counts, and the
    document starts are where each document begins; with --count all everything counts.
  * plait runs 2 steps on the BPE file (dp 2, sequential order): each step's
    counted_tokens is the count of mask ones over that global batch's targets, worked
    out here from the file.
  * Refusals: a line that is not JSON and a record of no known kind name file:line in one
    line and leave no file (prepare_data_refusals.py has the other classes); a model whose
    vocab_size is below the tokenizer's is refused before launch naming the setting.
Prints the preparation speed (MB of JSONL per second). Exit status 0 when all holds.
"""
import argparse
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PREPARE = ROOT / "tools" / "prepare_data.py"
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")
WORDS = ("the a model learns tokens from data with masks and packing of documents every step counts what "
         "responses say to prompts while attention stays inside one document").split()


def fail(message):
    sys.exit(f"FAIL: {message}")


def corpus(n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 12)))) for _ in range(n)]


def make_bpe(folder):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(2000, 1), trainer)
    folder.mkdir(parents=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"eos_token": "<|endoftext|>", "chat_template": CHAT_TEMPLATE}))
    return tok


def make_sentencepiece(work):
    import sentencepiece as spm
    text = work / "sp_corpus.txt"
    text.write_text("\n".join(corpus(2000, 2)))
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(work / "sp"), vocab_size=48, hard_vocab_limit=False,
                                   model_type="unigram", minloglevel=2)
    return spm.SentencePieceProcessor(model_file=str(work / "sp.model"))


def records():
    rng = np.random.default_rng(3)
    out = []
    for i in range(60):
        a, b, c = (" ".join(rng.choice(WORDS, size=int(rng.integers(2, 9)))) for _ in range(3))
        kind = i % 3
        if kind == 0:
            out.append({"text": a})
        elif kind == 1:
            out.append({"prompt": a, "response": b})
        else:
            out.append({"messages": [{"role": "system", "content": c}, {"role": "user", "content": a},
                                     {"role": "assistant", "content": b}, {"role": "user", "content": c},
                                     {"role": "assistant", "content": a}]})
    return out


def render(messages, generation):
    import jinja2.sandbox
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(CHAT_TEMPLATE).render(messages=messages, add_generation_prompt=generation)


def expected_pieces(record):
    """(text, counts) as the format promises, worked out from the record and the template."""
    if "text" in record:
        return [(record["text"], True)]
    if "prompt" in record:
        return [(record["prompt"], False), (record["response"], True)]
    pieces, done, msgs = [], "", record["messages"]
    for i, m in enumerate(msgs):
        if m["role"] == "assistant":
            before = render(msgs[:i], True)
            pieces.append((before[len(done):], False))
            done = before
        after = render(msgs[:i + 1], False)
        pieces.append((after[len(done):], m["role"] == "assistant"))
        done = after
    return [p for p in pieces if p[0]]


def read_token_file(path):
    raw = path.read_bytes()
    if raw[:8] != b"PLAITTOK":
        fail(f"{path} does not start with the magic")
    version, width, n, docs, sections, vocab, eos = struct.unpack_from("<IIqqIIq", raw, 8)
    at = 1024
    tokens = np.frombuffer(raw, dtype="<u2" if width == 2 else "<u4", count=n, offset=at).astype(np.int64)
    at += n * width
    at += -at % 8
    mask = np.frombuffer(raw, dtype=np.uint8, count=n, offset=at)
    at += n
    at += -at % 8
    starts = np.frombuffer(raw, dtype="<i8", count=docs, offset=at)
    if at + 8 * docs != len(raw) or version != 1 or sections != 3:
        fail(f"{path}: version {version}, sections {sections}, {len(raw)} bytes for {n} tokens and {docs} documents")
    return dict(tokens=tokens, mask=mask, starts=starts, vocab=vocab, eos=eos, name=raw[48:176].rstrip(b"\0").decode())


def prepare(work, tokenizer, out, extra=(), inputs=None):
    cmd = [sys.executable, str(PREPARE), "--tokenizer", str(tokenizer), "--out", str(out)] + list(extra) + [
        str(p) for p in (inputs or [work / "data.jsonl"])]
    return subprocess.run(cmd, capture_output=True, text=True)


def check_file(label, got, recs, encode, eos, count_all=False):
    tokens, mask, starts = [], [], []
    for r in recs:
        starts.append(len(tokens))
        pieces = expected_pieces(r)
        for text, counts in pieces:
            ids = encode(text)
            tokens += ids
            mask += [counts or count_all] * len(ids)
        tokens.append(eos)
        mask.append(pieces[-1][1] or count_all)
    if not np.array_equal(got["tokens"], np.asarray(tokens)):
        first = int(np.argmax(got["tokens"][:len(tokens)] != np.asarray(tokens)[:len(got["tokens"])]))
        fail(f"{label}: tokens differ from the library's encoding (lengths {len(got['tokens'])} vs {len(tokens)}, "
             f"first difference at {first})")
    if not np.array_equal(got["mask"], np.asarray(mask, dtype=np.uint8)):
        fail(f"{label}: the loss mask differs at {int(np.argmax(got['mask'] != np.asarray(mask, dtype=np.uint8)))}")
    if not np.array_equal(got["starts"], np.asarray(starts)):
        fail(f"{label}: document starts {got['starts'][:5]}... expected {starts[:5]}...")
    if got["eos"] != eos:
        fail(f"{label}: header's end-of-text {got['eos']}, expected {eos}")
    counted = int(got["mask"].sum())
    if not count_all and not 0 < counted < len(tokens):
        fail(f"{label}: {counted} of {len(tokens)} tokens counted: the prompts should not count")
    print(f"ok   {label}: {len(starts)} documents, {len(tokens)} tokens, {counted} counted, equal to the library's")


def check_plait_counts(plait, work, data, vocab):
    out = work / "run"
    shutil.rmtree(out, ignore_errors=True)
    seq, rows, dp = 32, 2, 2
    sets = ["model.family=llama", "model.size=tiny", f"model.vocab_size={vocab}", "data.source=tokens",
            f"data.path={data}", "data.order=sequential", f"data.seq_len={seq}", f"data.micro_batch_size={rows}",
            "parallel.dp=2", "parallel.data=ddp"]
    cmd = [str(plait), "run", str(ROOT / "configs/quickstart.toml"), "--steps", "2", "--out", str(out)]
    for s in sets:
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"plait run on the prepared file failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    mask = read_token_file(data)["mask"]
    n, per_batch = len(mask), dp * rows * seq
    for line in (out / "metrics.jsonl").read_text().splitlines():
        m = json.loads(line)
        k = m["step"] - 1
        want = int(mask[(k * per_batch + 1 + np.arange(per_batch)) % n].sum())
        if m["counted_tokens"] != want or m["tokens"] != per_batch:
            fail(f"step {m['step']}: plait counted {m['counted_tokens']} of {m['tokens']}, the file says {want} "
                 f"of {per_batch}")
        print(f"ok   plait step {m['step']}: counted_tokens {want} of {per_batch}, as the file's mask says")
    cmd[cmd.index(f"model.vocab_size={vocab}")] = f"model.vocab_size={vocab - 1}"
    cmd[cmd.index(str(out))] = str(work / "refused")
    r = subprocess.run(cmd, capture_output=True, text=True)
    said = r.stdout + r.stderr
    if r.returncode == 0 or f"tokenizer of {vocab} tokens" not in said or "--set model.vocab_size" not in said:
        fail(f"a model of vocab_size {vocab - 1} was not refused naming the tokenizer's {vocab}:\n{said[-1500:]}")
    print("ok   a model smaller than the tokenizer's vocabulary is refused before launch")


def check_refusals(work, tokenizer):
    bad = work / "bad.jsonl"
    for lines, words in ((['{"text": "fine"}', '{"text": oops}'], f"{bad}:2: not JSON"),
                         (['{"text": "fine"}', '', '{"title": "x"}'], f"{bad}:3: a record has")):
        bad.write_text("\n".join(lines) + "\n")
        out = work / "bad.bin"
        r = prepare(work, tokenizer, out, inputs=[bad])
        left = sorted(p.name for p in work.glob(out.name + "*"))  # the file, or its FILE.XXXXXXXX.partial
        if r.returncode == 0 or words not in r.stderr or left or len(r.stderr.splitlines()) != 1:
            fail(f"bad input not refused in one line with {words!r} (rc {r.returncode}, left {left}): "
                 f"{r.stderr[-500:]}")
        print(f"ok   refused: {r.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plait", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    recs = records()
    (work / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))

    bpe = make_bpe(work / "bpe")
    r = prepare(work, work / "bpe", work / "bpe.bin")
    if r.returncode != 0:
        fail(f"prepare (BPE): {r.stderr}")
    print(r.stdout.strip())
    eos = bpe.token_to_id("<|endoftext|>")
    got = read_token_file(work / "bpe.bin")
    check_file("tokenizers BPE", got, recs, lambda t: bpe.encode(t, add_special_tokens=False).ids, eos)
    if got["vocab"] != bpe.get_vocab_size() or "tokenizer.json" not in got["name"]:
        fail(f"header: vocabulary {got['vocab']} ({got['name']}), expected {bpe.get_vocab_size()}")

    r = prepare(work, work / "bpe", work / "bpe_all.bin", ["--count", "all"])
    if r.returncode != 0:
        fail(f"prepare --count all: {r.stderr}")
    check_file("tokenizers BPE, --count all", read_token_file(work / "bpe_all.bin"), recs,
               lambda t: bpe.encode(t, add_special_tokens=False).ids, eos, count_all=True)

    sp = make_sentencepiece(work)
    sp_recs = [r for r in recs if "messages" not in r]  # no chat template next to a .model
    (work / "plain.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sp_recs))
    r = prepare(work, work / "sp.model", work / "sp.bin", inputs=[work / "plain.jsonl"])
    if r.returncode != 0:
        fail(f"prepare (SentencePiece): {r.stderr}")
    check_file("SentencePiece unigram", read_token_file(work / "sp.bin"), sp_recs, lambda t: sp.encode(t), sp.eos_id())
    r = prepare(work, work / "sp.model", work / "sp_chat.bin")
    if r.returncode == 0 or "--chat-template" not in r.stderr:
        fail(f"a chat record without a template was not refused: {r.stderr}")
    template = work / "chat.jinja"
    template.write_text(CHAT_TEMPLATE)
    r = prepare(work, work / "sp.model", work / "sp_chat.bin", ["--chat-template", str(template)])
    if r.returncode != 0:
        fail(f"prepare (SentencePiece, chat template file): {r.stderr}")
    print("ok   SentencePiece with --chat-template:", r.stdout.strip())

    check_refusals(work, work / "bpe")
    check_plait_counts(args.plait, work, work / "bpe.bin", got["vocab"])
    print("PASS")


if __name__ == "__main__":
    main()
