#!/usr/bin/env python3
"""JSONL to plait's token file (docs/data-format.md): tokens, a loss mask, document starts.

  .venv/bin/python tools/prepare_data.py --tokenizer TOKENIZER --out FILE INPUT.jsonl [...]
      [--count responses|all] [--chat-template FILE] [--no-eos] [--force] [--skip-empty] [--quiet]

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

An empty document is an error naming its file:line: a text or a response that is empty or
encodes to no tokens, an assistant message with no content, a conversation that encodes to
nothing. --skip-empty leaves such documents out instead, with a warning for each of the
first 10 and their count at the end.

Every error is one line on stderr, "error: " and then what is at fault: the input's
file:line (byte offset or JSON column where known), or the flag whose value it is (--out,
--tokenizer, --chat-template); exit status 1, 130 on Ctrl-C (SIGINT), 128 + the signal's
number on SIGTERM or SIGHUP. The output's folder is checked (it exists, is a folder, takes a
new file) before any input is read; an existing FILE is replaced only with --force, and
never when it is not a regular file (a device such as /dev/null, a pipe, a folder). The
token file is written to FILE.XXXXXXXX.partial in FILE's folder and renamed to FILE when
complete: any failure (an error, a full disk, Ctrl-C, SIGTERM) deletes it and leaves FILE
as it was.
"""
import argparse
import json
import os
import signal
import stat
import struct
import sys
import tempfile
import time

import numpy as np

MAGIC = b"PLAITTOK"
VERSION = 1
HEADER_BYTES = 1024
SECTION_MASK, SECTION_DOCUMENTS = 1, 2
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
WARN_EMPTY = 10  # empty documents named one by one under --skip-empty; the rest are counted


class InputError(Exception):
    """What the user gave is at fault: one line that names it."""


class Empty(InputError):
    """A document with nothing to learn from (--skip-empty leaves it out)."""


class Stopped(BaseException):
    """SIGTERM or SIGHUP: unwinds as Ctrl-C does, so the partial file is deleted."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def on_signal(signum, frame):
    raise Stopped(signum)


def one_line(text, limit=300):
    """A library's message as a parenthesis: its first non-empty line, shortened."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def reason(e):
    """An exception's one-line reason, with its type where it says nothing alone."""
    text = one_line(e)
    return text or type(e).__name__


def why(e):
    """errno's words for an OSError."""
    return os.strerror(e.errno) if e.errno else reason(e)


def is_library_failure(e):
    """An Exception, or pyo3's PanicException (a BaseException): a Rust library's panic."""
    return isinstance(e, Exception) or type(e).__name__ == "PanicException"


def need(module, purpose):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise InputError(f"{purpose} needs the Python package {module.split('.')[0]}, which this Python "
                         f"({sys.executable}) cannot import ({reason(e)}); tools/setup installs it into .venv")


def utf8(data, name, line=1, offset=0):
    """data decoded strictly; else an error naming name:line and the byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line += data.count(b"\n", 0, e.start)
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(f"{name}:{line}: not UTF-8 (byte 0x{data[e.start]:02x} at byte {column} of the line, "
                         f"byte offset {offset + e.start} in the file)")


def read_text(path, name):
    """A whole small file as text: name is how errors call it (a flag and its value, or the path)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(f"{name}: {why(e)}")
    return utf8(data, name)


def parse_json(text, name, line=None):
    """text as JSON; else an error naming name:line (line None: the error's own, in a whole file) and the column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{name}:{e.lineno if line is None else line}: not JSON ({e.msg} at column {e.colno})")
    except (ValueError, RecursionError) as e:  # a number of too many digits, nesting too deep
        raise InputError(f"{name}{'' if line is None else f':{line}'}: not JSON this tool can read ({reason(e)})")


class Quiet:
    """Holds fd 2 in a file while a library runs: a Rust panic's or a C++ log's text is not the user's."""

    def __init__(self):
        self.file, self.saved = None, None

    def __enter__(self):
        sys.stderr.flush()
        old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # fd 2 and self.saved change together
        try:
            if self.file is None:
                self.file = tempfile.TemporaryFile()
            self.saved = os.dup(2)
            os.dup2(self.file.fileno(), 2)
        except OSError:  # no temporary file or no fd 2: the library may speak, nothing else changes
            self.release()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def release(self):
        """fd 2 back; main() calls it again, as a signal may stop a with statement before __exit__."""
        old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            if self.saved is not None:
                os.dup2(self.saved, 2)
                os.close(self.saved)
                self.saved = None
                self.file.seek(0)
                self.file.truncate()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


QUIET = Quiet()


def library(call, failed):
    """call() with the library's stderr held; any failure becomes InputError(failed + its reason)."""
    try:
        with QUIET:
            return call()
    except (KeyboardInterrupt, Stopped, InputError):
        raise
    except BaseException as e:
        if not is_library_failure(e):
            raise
        raise InputError(f"{failed} ({reason(e)})")


class Tokenizer:
    """One interface over `tokenizers` and `sentencepiece`: encode(text) -> ids."""

    def __init__(self, path):
        self.chat_template = None
        self.template_source = None
        self.eos_id = -1
        self.bos_token = ""
        self.eos_token = ""
        flag = f"--tokenizer {path}"
        if not os.path.exists(path):
            raise InputError(f"{flag}: no such file or folder")
        if path.endswith(".model"):
            self.load_sentencepiece(path, flag)
            return
        folder = path if os.path.isdir(path) else os.path.dirname(path)
        file = os.path.join(path, "tokenizer.json") if os.path.isdir(path) else path
        if not os.path.isfile(file):
            hint = "; a SentencePiece model there? give its .model file" if os.path.isfile(
                os.path.join(folder, "tokenizer.model")) else ""
            raise InputError(f"{flag}: no tokenizer.json there (a tokenizers file, a folder with one, "
                             f"or a SentencePiece .model){hint}")
        tokenizers = need("tokenizers", f"{flag}")
        where = f"{flag}: " if file == path else f"{flag}: {file} "
        self.tok = library(lambda: tokenizers.Tokenizer.from_file(file),
                           f"{where}is not a Hugging Face tokenizers file")
        self.tok.no_truncation()  # a saved truncation or padding would cut documents or add tokens to them
        self.tok.no_padding()
        self.vocab_size = self.tok.get_vocab_size(with_added_tokens=True)
        if self.vocab_size <= 0:
            raise InputError(f"{where}has an empty vocabulary")
        self.name = f"tokenizers {os.path.basename(file)}"
        # encode_batch_fast: the same ids without character offsets (tokenizers >= 0.21): 1.3x faster here
        self.encode_batch = lambda texts: [e.ids for e in self.tok.encode_batch_fast(texts, add_special_tokens=False)]
        config = os.path.join(folder, "tokenizer_config.json")
        if os.path.isfile(config):
            self.read_config(config, file)

    def load_sentencepiece(self, path, flag):
        if not os.path.isfile(path):
            raise InputError(f"{flag}: not a file (a SentencePiece model is one *.model file)")
        sentencepiece = need("sentencepiece", flag)
        self.sp = library(lambda: sentencepiece.SentencePieceProcessor(model_file=path),
                          f"{flag}: not a SentencePiece model")
        self.vocab_size = self.sp.get_piece_size()
        if self.vocab_size <= 0:
            raise InputError(f"{flag}: a SentencePiece model with an empty vocabulary")
        self.eos_id = self.sp.eos_id()
        self.name = f"sentencepiece {os.path.basename(path)}"
        self.encode_batch = lambda texts: self.sp.encode(texts)
        if self.eos_id >= 0:
            self.eos_token = self.sp.id_to_piece(self.eos_id)
        if self.sp.bos_id() >= 0:
            self.bos_token = self.sp.id_to_piece(self.sp.bos_id())

    def read_config(self, config, file):
        c = parse_json(read_text(config, config), config)
        if not isinstance(c, dict):
            raise InputError(f"{config}: not a JSON object")
        template = c.get("chat_template")
        if isinstance(template, list):  # transformers' named templates: [{"name": ..., "template": ...}]
            named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
            template = named.get("default", next(iter(named.values()), None))
        if template is not None and not isinstance(template, str):
            raise InputError(f"{config}: chat_template is not text")
        self.chat_template = template or None
        self.template_source = f"{config}'s chat_template"
        self.eos_token = token_text(c.get("eos_token"), config, "eos_token")
        self.bos_token = token_text(c.get("bos_token"), config, "bos_token")
        if self.eos_token:
            self.eos_id = self.tok.token_to_id(self.eos_token)
            if self.eos_id is None:
                raise InputError(f"{config}: eos_token {self.eos_token!r} is not in {file}'s vocabulary")


def token_text(t, config, key):
    """tokenizer_config.json gives special tokens as text or as {"content": text}."""
    if isinstance(t, dict):
        t = t.get("content", "")
    if t is not None and not isinstance(t, str):
        raise InputError(f"{config}: {key} is not text (nor {{\"content\": text}})")
    return t or ""


class ChatRenderer:
    """The chat template, compiled when first needed (at once for --chat-template); its errors name it."""

    def __init__(self, template, tokenizer, source):
        self.text, self.source, self.template = template, source, None
        self.specials = {"bos_token": tokenizer.bos_token, "eos_token": tokenizer.eos_token}

    def compile(self):
        jinja2 = need("jinja2", self.source)
        import jinja2.ext
        import jinja2.sandbox

        def raise_exception(message):
            raise jinja2.exceptions.TemplateError(message)

        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                           extensions=[jinja2.ext.loopcontrols])
        env.globals["raise_exception"] = raise_exception
        try:
            self.template = env.from_string(self.text)
        except jinja2.exceptions.TemplateSyntaxError as e:
            raise InputError(f"{self.source}:{e.lineno}: the chat template is not valid Jinja ({one_line(e.message)})")
        except Exception as e:
            raise InputError(f"{self.source}: the chat template is not valid Jinja ({reason(e)})")

    def render(self, messages, add_generation_prompt, place):
        if self.template is None:
            self.compile()
        try:
            return self.template.render(messages=messages, add_generation_prompt=add_generation_prompt,
                                        **self.specials)
        except Exception as e:
            raise InputError(f"{place}: the chat template ({self.source}) failed on this conversation ({reason(e)})")


def chat_pieces(messages, renderer, place):
    """The conversation as (text, counts) pieces whose concatenation is the template's output."""
    if not isinstance(messages, list) or not messages:
        raise InputError(f"{place}: messages is a non-empty list of {{role, content}}")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("content"), str) or m.get("role") not in (
                "system", "user", "assistant"):
            raise InputError(f"{place}: message {i} is not {{\"role\": system|user|assistant, \"content\": text}}")
        if m["role"] == "assistant" and not m["content"]:
            raise Empty(f"{place}: message {i} (assistant) is empty")
    pieces, done = [], ""
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            before = renderer.render(messages[:i], True, place)
            if not before.startswith(done):
                raise InputError(f"{place}: the chat template renders message {i}'s prompt so that it changes what "
                                 "came before; the answer's tokens cannot be cut out")
            pieces.append((before[len(done):], False))
            done = before
        after = renderer.render(messages[:i + 1], False, place)
        if not after.startswith(done):
            raise InputError(f"{place}: the chat template renders message {i} so that it changes what came before; "
                             "the messages cannot be cut apart")
        pieces.append((after[len(done):], m["role"] == "assistant"))
        done = after
    pieces = [(text, counts) for text, counts in pieces if text]
    if not pieces:
        raise Empty(f"{place}: the chat template renders this conversation as no text")
    return pieces


def json_kind(value):
    """What a JSON value is, as an error names it: "a number (5)", "null", "a list"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "a string"


def document(record, place, args, renderer):
    """(pieces, needed): the document's (text, counts) pieces, and (index, name) of the one that must have
    tokens (None: any)."""
    if not isinstance(record, dict):
        raise InputError(f"{place}: {json_kind(record)}, not a JSON object (a line is one record)")
    kinds = [k for k in (("text",), ("prompt", "response"), ("messages",)) if any(key in record for key in k)]
    if len(kinds) > 1:
        raise InputError(f"{place}: a record has one of \"text\", \"prompt\"/\"response\" or \"messages\"; this one "
                         f"has {' and '.join('/'.join(k) for k in kinds)}, and would be read as one of them")
    if "text" in record:
        if not isinstance(record["text"], str):
            raise InputError(f"{place}: text is {json_kind(record['text'])}, not a string")
        if not record["text"]:
            raise Empty(f"{place}: the text is empty")
        return [(record["text"], True)], (0, "the text")
    if "prompt" in record or "response" in record:
        for key in ("prompt", "response"):
            if key not in record:
                raise InputError(f"{place}: a prompt/response record has both; this one has no {key}")
            if not isinstance(record[key], str):
                raise InputError(f"{place}: {key} is {json_kind(record[key])}, not a string")
        if not record["response"]:
            raise Empty(f"{place}: the response is empty")
        return [(record["prompt"], args.count == "all"), (record["response"], True)], (1, "the response")
    if "messages" in record:
        if renderer is None:
            raise InputError(f"{place}: a chat record needs a chat template: the tokenizer folder's "
                             "tokenizer_config.json has none; give one with --chat-template FILE")
        return [(text, counts or args.count == "all") for text, counts in chat_pieces(record["messages"], renderer,
                                                                                        place)], None
    raise InputError(f"{place}: a record has \"text\", \"prompt\" and \"response\", or \"messages\"; this one has "
                     f"{sorted(record)}")


class Empties:
    """Empty documents: an error, or under --skip-empty a warning for each of the first few and a count."""

    def __init__(self, skip):
        self.skip, self.count = skip, 0

    def __call__(self, error):
        if not self.skip:
            raise InputError(f"{error}; give --skip-empty to leave such documents out")
        self.count += 1
        if self.count <= WARN_EMPTY:
            print(f"warning: {error}; left out (--skip-empty)", file=sys.stderr)

    def summary(self):
        if self.count:
            more = f", {self.count - WARN_EMPTY} of them not named above" if self.count > WARN_EMPTY else ""
            print(f"warning: {self.count} empty documents left out (--skip-empty){more}", file=sys.stderr)


def read_lines(path):
    """(number, byte offset, bytes) per line of path; its errors name path (and line)."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise InputError(f"{path}: {why(e)}")
    with f:
        number, offset, lines = 0, 0, iter(f)
        while True:
            try:
                raw = next(lines, None)
            except OSError as e:
                raise InputError(f"{path}:{number + 1}: cannot read ({why(e)})")
            if raw is None:
                return
            number += 1
            yield number, offset, raw
            offset += len(raw)


def read_documents(paths, args, renderer, empties):
    """Yields (place, pieces, needed) per JSONL line."""
    for path in paths:
        for number, offset, raw in read_lines(path):
            place = f"{path}:{number}"
            line = utf8(raw, path, number, offset)
            if number == 1 and line.startswith("\ufeff"):
                line = line[1:]
            if not line.strip():
                continue
            record = parse_json(line, path, number)
            try:
                pieces, needed = document(record, place, args, renderer)
            except Empty as e:
                empties(e)
                continue
            yield place, pieces, needed


def encode_documents(documents, tokenizer, eos_id, empties, batch=512):
    """(tokens, mask, starts) as lists of numpy arrays: each batch of pieces encoded at once."""
    tokens, mask, starts, at = [], [], [], 0
    pending = []

    def encode(texts, failed):
        return library(lambda: tokenizer.encode_batch(texts), failed) if texts else []

    def encode_pending():
        texts = [text for _, pieces, _ in pending for text, _ in pieces]
        try:
            return encode(texts, "")
        except InputError:  # which document: encode each alone
            for place, pieces, _ in pending:
                for text, _ in pieces:
                    try:
                        text.encode("utf-8")
                    except UnicodeEncodeError as e:
                        raise InputError(f"{place}: the text holds \\u{ord(text[e.start]):04x}, half of a UTF-16 "
                                         "surrogate pair, which is no character")
                encode([text for text, _ in pieces], f"{place}: the tokenizer ({tokenizer.name}) cannot encode "
                                                     "this document")
            raise InputError(f"{pending[0][0]}: the tokenizer ({tokenizer.name}) cannot encode this batch of "
                             f"{len(pending)} documents, though it encodes each alone")

    def flush():
        nonlocal at
        ids = iter(encode_pending())
        for place, pieces, needed in pending:
            doc_tokens, doc_mask = [], []
            encoded = [next(ids) for _ in pieces]
            for piece, (_, counts) in zip(encoded, pieces):
                doc_tokens.extend(piece)
                doc_mask.extend([counts] * len(piece))
            blank = needed is not None and not len(encoded[needed[0]])
            if blank or not doc_tokens:
                empties(Empty(f"{place}: {needed[1] if blank else 'the document'} encodes to no tokens"))
                continue
            if eos_id >= 0:
                doc_tokens.append(eos_id)
                doc_mask.append(pieces[-1][1])
            starts.append(at)
            at += len(doc_tokens)
            tokens.append(np.asarray(doc_tokens, dtype=np.int64))
            mask.append(np.asarray(doc_mask, dtype=np.uint8))
        pending.clear()

    for document in documents:
        pending.append(document)
        if len(pending) >= batch:
            flush()
    flush()
    return tokens, mask, starts


def header(width, n_tokens, n_documents, vocab_size, eos_id, name):
    h = bytearray(HEADER_BYTES)
    h[0:8] = MAGIC
    struct.pack_into("<IIqqIIq", h, 8, VERSION, width, n_tokens, n_documents, SECTION_MASK | SECTION_DOCUMENTS,
                     vocab_size, eos_id)
    encoded = name.encode("utf-8")[:127].decode("utf-8", "ignore").encode("utf-8")  # never half a character
    h[48:48 + len(encoded)] = encoded
    return bytes(h)


def file_kind(mode):
    for test, words in ((stat.S_ISREG, "a file"), (stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def read_files(args):
    """The tokenizer's and the chat template's files: --out never replaces what this run reads."""
    files = [args.chat_template] if args.chat_template else []
    if args.tokenizer and os.path.isdir(args.tokenizer):
        files += [os.path.join(args.tokenizer, name) for name in os.listdir(args.tokenizer)]
    elif args.tokenizer:
        files.append(args.tokenizer)
    return files


def check_out(out, force, inputs):
    """The path to write (a link's target), checked before any input is read: a new file in an existing
    folder, or with --force an existing regular file; never one of the inputs."""
    flag = f"--out {out}"
    if not out:
        raise InputError("--out is empty: give the token file's path")
    if out.endswith(os.sep) and not os.path.isdir(out):
        raise InputError(f"{flag}: ends in {os.sep}, as a folder's name does; give the token file's path")
    target = os.path.realpath(out)
    try:
        st = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):  # the folder's turn, below
        st = None
    except OSError as e:
        raise InputError(f"{flag}: {why(e)}")
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{flag}: is a folder; give the token file's path (as {os.path.join(out, 'train.bin')})")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{flag}: is {file_kind(st.st_mode)}, not a file; give a file's path")
        if not force:
            raise InputError(f"{flag}: exists; give --force to replace it")
        for path in inputs:
            if os.path.isfile(path) and os.path.samefile(path, target):
                raise InputError(f"{flag}: is {path}, which this run reads; give another path")
    folder = os.path.dirname(target)
    shown = folder if os.path.islink(out) else os.path.dirname(out) or "."
    try:
        folder_mode = os.stat(folder).st_mode
    except FileNotFoundError:
        raise InputError(f"{flag}: the folder {shown} does not exist")
    except OSError as e:
        raise InputError(f"{flag}: the folder {shown}: {why(e)}")
    if not stat.S_ISDIR(folder_mode):
        raise InputError(f"{flag}: {shown} is {file_kind(folder_mode)}, not a folder")
    return target


def check_inputs(paths):
    for path in paths:
        try:
            st = os.stat(path)
        except OSError as e:
            raise InputError(f"{path}: {why(e)}")
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{path}: is a folder; give JSONL files")


class Output:
    """FILE.XXXXXXXX.partial in FILE's folder, renamed to FILE by commit(); discard() deletes it."""

    def __init__(self, target, out):
        self.target, self.flag = target, f"--out {out}"
        self.folder = os.path.dirname(target) if os.path.islink(out) else os.path.dirname(out) or "."
        self.path, self.file, self.written = None, None, False

    def create(self):
        folder, base = os.path.split(self.target)
        old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # no Ctrl-C between creating and knowing it
        try:
            fd, self.path = tempfile.mkstemp(dir=folder, prefix=base[:200] + ".", suffix=".partial")
            self.file = os.fdopen(fd, "wb")
        except OSError as e:
            raise InputError(f"{self.flag}: cannot create a file in {self.folder} ({why(e)})")
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def write(self, data):
        try:
            self.file.write(data)
        except OSError as e:
            raise InputError(f"{self.flag}: cannot write ({why(e)}); nothing written")

    def commit(self):
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            try:
                mode = stat.S_IMODE(os.stat(self.target).st_mode)
            except FileNotFoundError:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.chmod(self.path, mode)
        except OSError as e:
            raise InputError(f"{self.flag}: cannot write ({why(e)}); nothing written")
        old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            os.replace(self.path, self.target)
            self.path, self.written = None, True
        except OSError as e:
            raise InputError(f"{self.flag}: cannot rename {os.path.basename(self.path)} to it ({why(e)}); "
                             "nothing written")
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def discard(self):
        old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            if self.file is not None:
                try:
                    self.file.close()
                except OSError:
                    pass
            if self.path is not None:
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass
                self.path = None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def write_token_file(output, tokens, mask, starts, vocab_size, eos_id, name):
    width = 2 if vocab_size <= 1 << 16 else 4
    all_tokens = np.concatenate(tokens).astype("<u2" if width == 2 else "<u4")
    all_mask = np.concatenate(mask)
    at = 0
    for data in (header(width, len(all_tokens), len(starts), vocab_size, eos_id, name), all_tokens.tobytes(), None,
                 all_mask.tobytes(), None, np.asarray(starts, dtype="<i8").tobytes()):
        if data is None:  # each section starts at a multiple of 8 bytes
            data = b"\0" * (-at % 8)
        output.write(data)
        at += len(data)
    output.commit()
    return len(all_tokens), int(all_mask.sum())


def print_quietly(line):
    """The summary on stdout; a reader that went away (| head) is no error: the file is written."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def prepare(args, output):
    start = time.perf_counter()
    check_inputs(args.inputs)
    tokenizer = Tokenizer(args.tokenizer)
    template, source = tokenizer.chat_template, tokenizer.template_source
    if args.chat_template:
        source = f"--chat-template {args.chat_template}"
        template = read_text(args.chat_template, source)
        if not template.strip():
            raise InputError(f"{source}: the file is empty; give a chat template (Jinja)")
    renderer = ChatRenderer(template, tokenizer, source) if template else None
    if renderer and args.chat_template:
        renderer.compile()
    eos_id = -1 if args.no_eos else tokenizer.eos_id
    empties = Empties(args.skip_empty)
    tokens, mask, starts = encode_documents(read_documents(args.inputs, args, renderer, empties), tokenizer, eos_id,
                                            empties)
    if not starts:
        raise InputError(f"{', '.join(args.inputs)}: no documents")
    if not any(m.any() for m in mask):
        raise InputError(f"{', '.join(args.inputs)}: none of the {sum(len(t) for t in tokens)} tokens is counted in "
                         f"the loss (--count {args.count}): plait would refuse the file; give documents with an "
                         f"assistant turn, or --count all")
    n, counted = write_token_file(output, tokens, mask, starts, tokenizer.vocab_size, eos_id, tokenizer.name)
    empties.summary()
    seconds = time.perf_counter() - start
    megabytes = sum(os.path.getsize(p) for p in args.inputs) / 1e6
    if not args.quiet:
        skipped = f", {empties.count} empty left out" if empties.count else ""
        print_quietly(f"{args.out}: {len(starts)} documents{skipped}, {n} tokens, {counted} counted in the loss; "
                      f"{tokenizer.name}, vocabulary {tokenizer.vocab_size}; "
                      f"{megabytes:.3g} MB of JSONL in {seconds:.2g} s ({megabytes / seconds:.3g} MB/s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="JSONL files")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True, help="the token file; an existing one is replaced only with --force")
    ap.add_argument("--count", choices=["responses", "all"], default="responses",
                    help="what counts in the loss: responses and assistant turns (and all of a text), or every token")
    ap.add_argument("--chat-template", help="a Jinja file; default: the tokenizer folder's tokenizer_config.json's")
    ap.add_argument("--no-eos", action="store_true", help="no end-of-text token after each document")
    ap.add_argument("--force", action="store_true", help="replace --out when it exists (a regular file)")
    ap.add_argument("--skip-empty", action="store_true",
                    help="leave empty documents out with a warning (default: an error naming file:line)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    for signum in STOP_SIGNALS[1:]:
        signal.signal(signum, on_signal)
    output = None
    try:
        output = Output(check_out(args.out, args.force, args.inputs + read_files(args)), args.out)
        output.create()  # the folder takes a new file: known before any input is read
        prepare(args, output)
        return
    except BaseException as e:
        for signum in STOP_SIGNALS:  # a second Ctrl-C does not cut the clean-up short
            signal.signal(signum, signal.SIG_IGN)
        QUIET.release()
        if output is not None:
            output.discard()
        outcome = f"--out {args.out} {'was written' if output is not None and output.written else 'not written'}"
        if isinstance(e, InputError):
            status, message = 1, str(e)
        elif isinstance(e, KeyboardInterrupt):
            status, message = 128 + signal.SIGINT, f"interrupted (Ctrl-C); {outcome}"
        elif isinstance(e, Stopped):
            status, message = 128 + e.signum, f"stopped by {signal.Signals(e.signum).name}; {outcome}"
        elif isinstance(e, MemoryError):
            status, message = 1, f"out of memory; {outcome}"
        else:  # a bug here: its traceback
            raise
    print(f"error: {one_line(message, limit=2000)}", file=sys.stderr)
    sys.exit(status)


if __name__ == "__main__":
    main()
