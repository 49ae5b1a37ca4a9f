#!/usr/bin/env python3
"""JSONL to plait's token file (docs/data-format.md): tokens, a loss mask, document starts.

  .venv/bin/python tools/prepare_data.py --tokenizer TOKENIZER --out FILE INPUT.jsonl [...]
      [--count responses|all] [--chat-template FILE] [--no-eos] [--quiet]

TOKENIZER: a Hugging Face `tokenizers` file (tokenizer.json: BPE as GPT-2's and Llama 3's),
a folder holding one (with tokenizer_config.json for the end-of-text token and the chat
template, as transformers saves them), or a SentencePiece model (*.model). Encoding is the
library's own (`tokenizers`, `sentencepiece`); nothing here splits text by hand.

Each JSONL line is one document, one of:
  {"text": "..."}                                   pre-training text: every token counts
  {"prompt": "...", "response": "..."}              the response counts (--count all: both)
  {"messages": [{"role": "system|user|assistant", "content": "..."}, ...]}
      rendered with the chat template (Jinja, as transformers renders it); what the
      assistant says counts
The end-of-text token (the tokenizer's, when it has one) closes each document and counts
where the document's last part counts (a response learns to stop); --no-eos leaves it out.

Prompt and response are encoded apart and joined, as torchtune does, so the boundary never
merges a prompt's last characters into the response's first token. A conversation is cut
where the template's output for the first i messages (with the assistant's prompt) ends,
and each piece is encoded apart.

The file is written to FILE.partial and renamed when complete: an error leaves no file.
Errors name the input's file:line.
"""
import argparse
import json
import os
import struct
import sys
import time

import numpy as np

MAGIC = b"PLAITTOK"
VERSION = 1
HEADER_BYTES = 1024
SECTION_MASK, SECTION_DOCUMENTS = 1, 2


class InputError(Exception):
    pass


class Tokenizer:
    """One interface over `tokenizers` and `sentencepiece`: encode(text) -> ids."""

    def __init__(self, path):
        self.chat_template = None
        self.eos_id = -1
        self.bos_token = ""
        self.eos_token = ""
        if path.endswith(".model"):
            import sentencepiece
            self.sp = sentencepiece.SentencePieceProcessor(model_file=path)
            self.vocab_size = self.sp.get_piece_size()
            self.eos_id = self.sp.eos_id()
            self.name = f"sentencepiece {os.path.basename(path)}"
            self.encode_batch = lambda texts: self.sp.encode(texts)
            if self.eos_id >= 0:
                self.eos_token = self.sp.id_to_piece(self.eos_id)
            if self.sp.bos_id() >= 0:
                self.bos_token = self.sp.id_to_piece(self.sp.bos_id())
            return
        import tokenizers
        folder = path if os.path.isdir(path) else os.path.dirname(path)
        file = os.path.join(path, "tokenizer.json") if os.path.isdir(path) else path
        if not os.path.isfile(file):
            raise InputError(f"--tokenizer {path}: no tokenizer.json there (a tokenizers file, a folder with one, "
                             "or a SentencePiece .model)")
        self.tok = tokenizers.Tokenizer.from_file(file)
        self.vocab_size = self.tok.get_vocab_size(with_added_tokens=True)
        self.name = f"tokenizers {os.path.basename(file)}"
        # encode_batch_fast: the same ids without character offsets (tokenizers >= 0.21): 1.3x faster here
        self.encode_batch = lambda texts: [e.ids for e in self.tok.encode_batch_fast(texts, add_special_tokens=False)]
        config = os.path.join(folder, "tokenizer_config.json")
        if os.path.isfile(config):
            with open(config) as f:
                c = json.load(f)
            self.chat_template = c.get("chat_template")
            self.eos_token = token_text(c.get("eos_token"))
            self.bos_token = token_text(c.get("bos_token"))
            if self.eos_token:
                self.eos_id = self.tok.token_to_id(self.eos_token)
                if self.eos_id is None:
                    raise InputError(f"{config}: eos_token {self.eos_token!r} is not in {file}'s vocabulary")


def token_text(t):
    """tokenizer_config.json gives special tokens as text or as {"content": text}."""
    if isinstance(t, dict):
        return t.get("content", "")
    return t or ""


class ChatRenderer:
    def __init__(self, template, tokenizer):
        import jinja2
        import jinja2.sandbox

        def raise_exception(message):
            raise jinja2.exceptions.TemplateError(message)

        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = raise_exception
        self.template = env.from_string(template)
        self.specials = {"bos_token": tokenizer.bos_token, "eos_token": tokenizer.eos_token}

    def render(self, messages, add_generation_prompt):
        return self.template.render(messages=messages, add_generation_prompt=add_generation_prompt, **self.specials)


def chat_pieces(messages, renderer, place):
    """The conversation as (text, counts) pieces whose concatenation is the template's output."""
    if not isinstance(messages, list) or not messages:
        raise InputError(f"{place}: messages is a non-empty list of {{role, content}}")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("content"), str) or m.get("role") not in (
                "system", "user", "assistant"):
            raise InputError(f"{place}: message {i} is not {{\"role\": system|user|assistant, \"content\": text}}")
    pieces, done = [], ""
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            before = renderer.render(messages[:i], add_generation_prompt=True)
            if not before.startswith(done):
                raise InputError(f"{place}: the chat template renders message {i}'s prompt so that it changes what "
                                 "came before; the answer's tokens cannot be cut out")
            pieces.append((before[len(done):], False))
            done = before
        after = renderer.render(messages[:i + 1], add_generation_prompt=False)
        if not after.startswith(done):
            raise InputError(f"{place}: the chat template renders message {i} so that it changes what came before; "
                             "the messages cannot be cut apart")
        pieces.append((after[len(done):], m["role"] == "assistant"))
        done = after
    return [(text, counts) for text, counts in pieces if text]


def document_pieces(record, place, args, renderer):
    if not isinstance(record, dict):
        raise InputError(f"{place}: a line is a JSON object")
    if "text" in record:
        if not isinstance(record["text"], str):
            raise InputError(f"{place}: text is a string")
        return [(record["text"], True)]
    if "prompt" in record or "response" in record:
        if not isinstance(record.get("prompt"), str) or not isinstance(record.get("response"), str):
            raise InputError(f"{place}: a prompt/response record has both, as strings")
        return [(record["prompt"], args.count == "all"), (record["response"], True)]
    if "messages" in record:
        if renderer is None:
            raise InputError(f"{place}: a chat record needs a chat template: the tokenizer folder's "
                             "tokenizer_config.json has none; give one with --chat-template FILE")
        return [(text, counts or args.count == "all") for text, counts in chat_pieces(record["messages"], renderer,
                                                                                        place)]
    raise InputError(f"{place}: a record has \"text\", \"prompt\" and \"response\", or \"messages\"; this one has "
                     f"{sorted(record)}")


def read_documents(paths, args, renderer):
    """Yields (place, pieces) per JSONL line."""
    for path in paths:
        try:
            f = open(path, encoding="utf-8")
        except OSError as e:
            raise InputError(f"{path}: {e.strerror}")
        with f:
            for number, line in enumerate(f, 1):
                place = f"{path}:{number}"
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    raise InputError(f"{place}: not JSON ({e.msg} at column {e.colno})")
                yield place, document_pieces(record, place, args, renderer)


def encode_documents(documents, tokenizer, eos_id, batch=512):
    """(tokens, mask, starts) as lists of numpy arrays: each batch of pieces encoded at once."""
    tokens, mask, starts, at = [], [], [], 0
    pending = []

    def flush():
        nonlocal at
        texts = [text for _, pieces in pending for text, _ in pieces]
        ids = iter(tokenizer.encode_batch(texts)) if texts else iter(())
        for place, pieces in pending:
            doc_tokens, doc_mask = [], []
            for _, counts in pieces:
                piece = next(ids)
                doc_tokens.extend(piece)
                doc_mask.extend([counts] * len(piece))
            if eos_id >= 0:
                doc_tokens.append(eos_id)
                doc_mask.append(pieces[-1][1])
            if not doc_tokens:
                raise InputError(f"{place}: the document has no tokens")
            starts.append(at)
            at += len(doc_tokens)
            tokens.append(np.asarray(doc_tokens, dtype=np.int64))
            mask.append(np.asarray(doc_mask, dtype=np.uint8))
        pending.clear()

    for place, pieces in documents:
        pending.append((place, pieces))
        if len(pending) >= batch:
            flush()
    flush()
    return tokens, mask, starts


def header(width, n_tokens, n_documents, vocab_size, eos_id, name):
    h = bytearray(HEADER_BYTES)
    h[0:8] = MAGIC
    struct.pack_into("<IIqqIIq", h, 8, VERSION, width, n_tokens, n_documents, SECTION_MASK | SECTION_DOCUMENTS,
                     vocab_size, eos_id)
    encoded = name.encode("utf-8")[:127]
    h[48:48 + len(encoded)] = encoded
    return bytes(h)


def pad8(f):
    f.write(b"\0" * (-f.tell() % 8))


def write_token_file(out, tokens, mask, starts, vocab_size, eos_id, name):
    width = 2 if vocab_size <= 1 << 16 else 4
    all_tokens = np.concatenate(tokens).astype(np.uint16 if width == 2 else np.uint32)
    all_mask = np.concatenate(mask)
    partial = out + ".partial"
    with open(partial, "wb") as f:
        f.write(header(width, len(all_tokens), len(starts), vocab_size, eos_id, name))
        f.write(all_tokens.astype("<u2" if width == 2 else "<u4").tobytes())
        pad8(f)
        f.write(all_mask.tobytes())
        pad8(f)
        f.write(np.asarray(starts, dtype="<i8").tobytes())
    os.replace(partial, out)
    return len(all_tokens), int(all_mask.sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+", help="JSONL files")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", choices=["responses", "all"], default="responses",
                    help="what counts in the loss: responses and assistant turns (and all of a text), or every token")
    ap.add_argument("--chat-template", help="a Jinja file; default: the tokenizer folder's tokenizer_config.json's")
    ap.add_argument("--no-eos", action="store_true", help="no end-of-text token after each document")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    try:
        start = time.perf_counter()
        tokenizer = Tokenizer(args.tokenizer)
        template = tokenizer.chat_template
        if args.chat_template:
            with open(args.chat_template, encoding="utf-8") as f:
                template = f.read()
        renderer = ChatRenderer(template, tokenizer) if template else None
        eos_id = -1 if args.no_eos else tokenizer.eos_id
        tokens, mask, starts = encode_documents(read_documents(args.inputs, args, renderer), tokenizer, eos_id)
        if not starts:
            raise InputError(f"{', '.join(args.inputs)}: no documents")
        n, counted = write_token_file(args.out, tokens, mask, starts, tokenizer.vocab_size, eos_id, tokenizer.name)
        seconds = time.perf_counter() - start
        megabytes = sum(os.path.getsize(p) for p in args.inputs) / 1e6
        if not args.quiet:
            print(f"{args.out}: {len(starts)} documents, {n} tokens, {counted} counted in the loss; "
                  f"{tokenizer.name}, vocabulary {tokenizer.vocab_size}; "
                  f"{megabytes:.2f} MB of JSONL in {seconds:.2f} s ({megabytes / seconds:.2f} MB/s)")
    except InputError as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main()
