#!/usr/bin/env python3
"""tools/prepare_data.py refuses every bad input in one line and leaves nothing behind.

Each case runs the tool as a subprocess on one class of fault and asserts: the exit status
(1; 130 for SIGINT, 143 for SIGTERM), stderr is exactly one line starting "error: " with no
traceback or library text, it names what is at fault (file:line, or the flag and its value),
and the work folder holds exactly the files it held before (no output, no .partial; an
existing output unchanged). Classes: input not UTF-8, not JSON, missing or a folder; --out
in a missing folder, a folder, under /proc or /sys, on a read-only file system, on a full
disk (a tiny tmpfs in a private mount namespace where `unshare -m` works; RLIMIT_FSIZE
always), a device; a bogus --tokenizer, tokenizer_config.json, SentencePiece .model, or a
tokenizer that fails to encode; a missing, undecodable, failing or invalid chat template;
SIGINT and SIGTERM mid-run; an existing output without --force (and replaced with it);
empty documents (an error; --skip-empty warns and counts). No plait binary needed.
Prints one line per case and "N passed, 0 failed"; exit status 0 when all pass.
"""
import argparse
import hashlib
import json
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree for the import below
sys.path.insert(0, str(Path(__file__).resolve().parent))
from prepare_data_check import CHAT_TEMPLATE, PREPARE, corpus, make_bpe, make_sentencepiece  # noqa: E402

RESULTS = {"passed": 0, "failed": 0}


def snapshot(folder):
    """Every file under folder with a digest of its bytes."""
    files = {}
    for path in sorted(Path(folder).rglob("*")):
        files[str(path.relative_to(folder))] = hashlib.sha1(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return files


def report(name, problems, stderr):
    if problems:
        RESULTS["failed"] += 1
        print(f"FAIL {name}: {'; '.join(problems)}\n     stderr: {stderr!r}")
    else:
        RESULTS["passed"] += 1
        print(f"ok   {name}: {stderr.strip()}")


def judge(rc, stderr, status, says):
    problems = []
    if rc != status:
        problems.append(f"exit status {rc}, expected {status}")
    lines = stderr.splitlines()
    if len(lines) != 1 or not stderr.startswith("error: ") or not stderr.endswith("\n"):
        problems.append(f"stderr is {len(lines)} lines, expected one 'error: ...' line")
    for word in ("Traceback", "panicked", "jinja2.", "File \""):
        if word in stderr:
            problems.append(f"stderr shows {word!r}")
    for words in says:
        if words not in stderr:
            problems.append(f"stderr does not say {words!r}")
    return problems


def tool(*args):
    return [sys.executable, str(PREPARE)] + [str(a) for a in args]


class Cases:
    def __init__(self, work):
        self.work = work

    def refused(self, name, args, says, status=1, **run):
        """The tool refuses: status, one line saying each of says, and work unchanged."""
        before = snapshot(self.work)
        r = subprocess.run(tool(*args), capture_output=True, text=True, timeout=120, **run)
        problems = judge(r.returncode, r.stderr, status, says)
        after = snapshot(self.work)
        if after != before:
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            problems.append(f"the work folder changed: {changed}")
        report(name, problems, r.stderr)

    def signalled(self, name, args, signum, partial_folder):
        """SIGINT/SIGTERM once the tool has its .partial file and is reading: 128 + signum, nothing left."""
        before = snapshot(self.work)
        p = subprocess.Popen(tool(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # even if ours is ignored
        deadline = time.monotonic() + 30
        while not any(partial_folder.glob("*.partial")) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.5)  # into the reading and encoding
        early = p.poll()
        p.send_signal(signum)
        _, stderr = p.communicate(timeout=60)
        problems = judge(p.returncode, stderr, 128 + signum, ["not written"])
        if early is not None:
            problems.append(f"the tool ended (status {early}) before the signal: give it a larger input")
        if snapshot(self.work) != before:
            problems.append("the work folder changed")
        report(name, problems, stderr)

    def in_tmpfs(self, name, folder, options, setup, args, says, expect_files):
        """The tool writing into a tmpfs mounted (options) on folder in a private mount namespace: it refuses,
        and the tmpfs then holds expect_files ({name: bytes}) exactly."""
        script = (f'd=$1; shift; mount -t tmpfs -o {options} plait_test "$d" || exit 97; {setup}; '
                  '"$@" >/dev/null; rc=$?; for f in "$d"/* "$d"/.[!.]*; do [ -e "$f" ] && '
                  'printf "%s %s\\n" "${f##*/}" "$(sha1sum < "$f" | cut -c1-40)"; done; exit $rc')
        before = snapshot(self.work)
        r = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(folder)] + tool(*args),
                           capture_output=True, text=True, timeout=120)
        problems = judge(r.returncode, r.stderr, 1, says)
        left = dict(line.split(" ", 1) for line in r.stdout.splitlines())
        want = {k: hashlib.sha1(v).hexdigest() for k, v in expect_files.items()}
        if left != want:
            problems.append(f"the tmpfs holds {sorted(left)}, expected {sorted(want)} unchanged")
        if snapshot(self.work) != before:
            problems.append("the work folder changed")
        report(name, problems, r.stderr)


def can_mount(folder):
    if not shutil.which("unshare"):
        return False
    r = subprocess.run(["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=64k plait_probe "$1"', "sh",
                       str(folder)], capture_output=True)
    return r.returncode == 0


def write_lines(path, lines):
    path.write_bytes(b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines))
    return path


def limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    work = Path(args.work).resolve()
    shutil.rmtree(work, ignore_errors=True)
    inp, out, mnt = work / "in", work / "out", work / "mnt"
    for folder in (inp, out, mnt):
        folder.mkdir(parents=True)
    start = time.monotonic()

    bpe = inp / "bpe"
    make_bpe(bpe)
    make_sentencepiece(inp)
    sp = inp / "sp.model"
    text = '{"text": "the model learns tokens"}'
    pair = '{"prompt": "what counts", "response": "the responses"}'
    chat = json.dumps({"messages": [{"role": "user", "content": "what counts"},
                                    {"role": "assistant", "content": "the responses"}]})
    good = write_lines(inp / "good.jsonl", [text, pair, chat])
    plain = write_lines(inp / "plain.jsonl", [text, pair])
    big = inp / "big.jsonl"
    big.write_text("".join(json.dumps({"text": t}) + "\n" for t in corpus(3000, 5)))
    template = inp / "chat.jinja"
    template.write_text(CHAT_TEMPLATE)
    target = out / "data.bin"
    c = Cases(work)

    # Input not UTF-8: file:line and the byte's offset.
    bad = write_lines(inp / "latin1.jsonl", [text, '{"text": "caf'.encode() + b'\xe9"}'])
    c.refused("input not UTF-8 (a Latin-1 byte)", ["--tokenizer", bpe, "--out", target, bad],
              [f"{bad}:2: not UTF-8", "byte 0xe9", "byte 14 of the line", "byte offset"])
    cut = write_lines(inp / "cut.jsonl", [text, pair, b'{"text": "\xe2\x82"}'])
    c.refused("input not UTF-8 (a character cut short)", ["--tokenizer", bpe, "--out", target, cut],
              [f"{cut}:3: not UTF-8"])
    # Not JSON: file:line and the column.
    bad = write_lines(inp / "oops.jsonl", [text, '{"text": oops}'])
    c.refused("a line that is not JSON", ["--tokenizer", bpe, "--out", target, bad],
              [f"{bad}:2: not JSON", "column 10"])
    bad = write_lines(inp / "short.jsonl", ['{"text": "no end"'])
    c.refused("a JSON line cut short", ["--tokenizer", bpe, "--out", target, bad], [f"{bad}:1: not JSON"])
    bad = write_lines(inp / "deep.jsonl", [text, pair, '{"text": ' + "[" * 100000 + "]" * 100000 + "}"])
    c.refused("a JSON line nested too deep", ["--tokenizer", bpe, "--out", target, bad],
              [f"{bad}:3: not JSON this tool can read ("])
    bad = write_lines(inp / "list.jsonl", [text, "", "[1, 2]"])
    c.refused("a JSON line that is no object", ["--tokenizer", bpe, "--out", target, bad],
              [f"{bad}:3: a list, not a JSON object (a line is one record)"])
    for label, record, says in (
            ("a text that is a number", {"text": 5}, "text is a number (5), not a string"),
            ("a text that is null", {"text": None}, "text is null, not a string"),
            ("a prompt without its response", {"prompt": "hello"}, "a prompt/response record has both; this one has no response"),
            ("a response that is a list", {"prompt": "p", "response": ["r"]}, "response is a list, not a string"),
            ("a record with a text and a prompt/response", {"text": "a", "prompt": "p", "response": "r"},
             "this one has text and prompt/response, and would be read as one of them")):
        bad = write_lines(inp / "typed.jsonl", [text, json.dumps(record)])
        c.refused(label, ["--tokenizer", bpe, "--out", target, bad], [f"{bad}:2: ", says])
    empty_template = inp / "empty.jinja"
    empty_template.write_text("")
    c.refused("an empty chat template file", ["--tokenizer", bpe, "--chat-template", empty_template, "--out", target,
                                              good], [f"--chat-template {empty_template}: the file is empty"])
    bad = write_lines(inp / "surrogate.jsonl", [text, r'{"text": "half \ud800 a pair"}'])
    c.refused("a text with half a surrogate pair", ["--tokenizer", bpe, "--out", target, bad],
              [f"{bad}:2:", "\\ud800", "surrogate"])
    # Inputs that are not there.
    c.refused("a missing input", ["--tokenizer", bpe, "--out", target, inp / "missing.jsonl"],
              [f"{inp / 'missing.jsonl'}: No such file or directory"])
    c.refused("a missing second input", ["--tokenizer", bpe, "--out", target, good, inp / "gone.jsonl"],
              [f"{inp / 'gone.jsonl'}: No such file or directory"])
    c.refused("an input that is a folder", ["--tokenizer", bpe, "--out", target, inp], [f"{inp}: is a folder"])

    # --out where no file can be.
    c.refused("--out in a missing folder", ["--tokenizer", bpe, "--out", out / "nope/data.bin", good],
              [f"--out {out / 'nope/data.bin'}: the folder {out / 'nope'} does not exist"])
    c.refused("--out under a file", ["--tokenizer", bpe, "--out", good / "data.bin", good],
              [f"--out {good / 'data.bin'}: {good} is a file, not a folder"])
    c.refused("--out naming a folder with a slash", ["--tokenizer", bpe, "--out", f"{out}/new/", good],
              ["--out", "a folder's name"])
    c.refused("--out an existing folder", ["--tokenizer", bpe, "--out", out, good], [f"--out {out}: is a folder"])
    c.refused("--out an existing folder, --force", ["--tokenizer", bpe, "--out", out, "--force", good],
              [f"--out {out}: is a folder"])
    c.refused("--out under /proc", ["--tokenizer", bpe, "--out", "/proc/plait_data.bin", good],
              ["--out /proc/plait_data.bin: cannot create a file in /proc ("])
    c.refused("--out a /proc file, --force", ["--tokenizer", bpe, "--out", "/proc/self/comm", "--force", good],
              ["--out /proc/self/comm: cannot create a file in /proc/self ("])
    c.refused("--out under /sys", ["--tokenizer", bpe, "--out", "/sys/plait_data.bin", good],
              ["--out /sys/plait_data.bin: cannot create a file in /sys ("])
    c.refused("--out /dev/full (a device is never written over)", ["--tokenizer", bpe, "--out", "/dev/full", good],
              ["--out /dev/full: is a character device"])
    c.refused("--out /dev/null, --force", ["--tokenizer", bpe, "--out", "/dev/null", "--force", good],
              ["--out /dev/null: is a character device"])
    c.refused("a full disk (RLIMIT_FSIZE: File too large)", ["--tokenizer", bpe, "--out", target, big],
              [f"--out {target}: cannot write (File too large)"], preexec_fn=limit_file_size)
    if can_mount(mnt):
        c.in_tmpfs("a full disk (a 64 KiB tmpfs)", mnt, "size=64k", ":", ["--tokenizer", bpe, "--out", mnt / "data.bin",
                                                                          big],
                   [f"--out {mnt / 'data.bin'}: cannot write (No space left on device)"], {})
        c.in_tmpfs("a read-only file system", mnt, "ro,size=64k", ":", ["--tokenizer", bpe, "--out", mnt / "data.bin",
                                                                        good],
                   [f"--out {mnt / 'data.bin'}: cannot create a file in {mnt} (Read-only file system)"], {})
        c.in_tmpfs("a read-only file system, --force over a file", mnt, "size=64k",
                   'printf old > "$d/data.bin"; mount -o remount,ro "$d"',
                   ["--tokenizer", bpe, "--out", mnt / "data.bin", "--force", good],
                   ["(Read-only file system)"], {"data.bin": b"old"})
    else:
        print("skip the tmpfs cases (full disk, read-only): `unshare -m` cannot mount here")

    # Tokenizers that are not.
    c.refused("--tokenizer a JSONL file", ["--tokenizer", good, "--out", target, good],
              [f"--tokenizer {good}: is not a Hugging Face tokenizers file ("])
    empty = inp / "empty_folder"
    empty.mkdir()
    c.refused("--tokenizer an empty folder", ["--tokenizer", empty, "--out", target, good],
              [f"--tokenizer {empty}: no tokenizer.json there"])
    c.refused("--tokenizer missing", ["--tokenizer", inp / "nope", "--out", target, good],
              [f"--tokenizer {inp / 'nope'}: no such file or folder"])
    broken = inp / "broken_config"
    shutil.copytree(bpe, broken)
    (broken / "tokenizer_config.json").write_text('{"eos_token": "<|endoftext|>",\n "chat_template": }\n')
    c.refused("a tokenizer_config.json that is not JSON", ["--tokenizer", broken, "--out", target, good],
              [f"{broken / 'tokenizer_config.json'}:2: not JSON"])
    (broken / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|nowhere|>"}))
    c.refused("an eos_token not in the vocabulary", ["--tokenizer", broken, "--out", target, good],
              [f"{broken / 'tokenizer_config.json'}: eos_token '<|nowhere|>'"])
    word_level = json.loads((bpe / "tokenizer.json").read_text())
    word_level["model"] = {"type": "WordLevel", "vocab": {"the": 0}, "unk_token": "<unk>"}
    (inp / "word_level.json").write_text(json.dumps(word_level))
    c.refused("a tokenizer that cannot encode a document",
              ["--tokenizer", inp / "word_level.json", "--out", target, plain],
              [f"{plain}:1: the tokenizer (tokenizers word_level.json) cannot encode this document ("])
    for label, data in (("text", b"not a model\n"), ("empty", b""), ("truncated", sp.read_bytes()[:200])):
        model = inp / f"{label}.model"
        model.write_bytes(data)
        c.refused(f"a broken SentencePiece .model ({label})", ["--tokenizer", model, "--out", target, plain],
                  [f"--tokenizer {model}: not a SentencePiece model ("])

    # Chat templates.
    c.refused("--chat-template missing", ["--tokenizer", sp, "--chat-template", inp / "none.jinja", "--out", target,
                                          good], [f"--chat-template {inp / 'none.jinja'}: No such file or directory"])
    c.refused("--chat-template a folder", ["--tokenizer", sp, "--chat-template", inp, "--out", target, good],
              [f"--chat-template {inp}: Is a directory"])
    latin = inp / "latin1.jinja"
    latin.write_bytes(b"{{ messages }}\n\xe9\n")
    c.refused("--chat-template not UTF-8", ["--tokenizer", sp, "--chat-template", latin, "--out", target, good],
              [f"--chat-template {latin}:2: not UTF-8"])
    raising = inp / "raise.jinja"
    raising.write_text("{% if messages[0]['role'] != 'system' %}{{ raise_exception('the first message is the "
                       "system prompt') }}{% endif %}")
    c.refused("a chat template that raises", ["--tokenizer", sp, "--chat-template", raising, "--out", target, good],
              [f"{good}:3: the chat template (--chat-template {raising}) failed on this conversation "
               "(the first message is the system prompt)"])
    failing = inp / "fails.jinja"
    failing.write_text("{{ messages[0].content.nope() }}")
    c.refused("a chat template that fails", ["--tokenizer", sp, "--chat-template", failing, "--out", target, good],
              [f"{good}:3: the chat template", "failed on this conversation ("])
    syntax = inp / "syntax.jinja"
    syntax.write_text("{% for m in messages %}\n{{ m['content'] }\n{% endfor %}")
    c.refused("a chat template that is not Jinja", ["--tokenizer", sp, "--chat-template", syntax, "--out", target,
                                                    plain], [f"--chat-template {syntax}:2: the chat template is not "
                                                             "valid Jinja ("])
    (broken / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>",
                                                              "chat_template": "{% if %}"}))
    c.refused("a tokenizer_config.json chat_template that is not Jinja", ["--tokenizer", broken, "--out", target, good],
              [f"{broken / 'tokenizer_config.json'}'s chat_template:1: the chat template is not valid Jinja"])

    # Signals mid-run.
    c.signalled("SIGINT (Ctrl-C) mid-run", ["--tokenizer", bpe, "--out", target] + [big] * 100, signal.SIGINT, out)
    c.signalled("SIGTERM mid-run", ["--tokenizer", bpe, "--out", target] + [big] * 100, signal.SIGTERM, out)

    unheard = write_lines(inp / "no_assistant.jsonl", [json.dumps({"messages": [{"role": "user", "content": "hello"}]})])
    c.refused("no token counted in the loss", ["--tokenizer", bpe, "--chat-template", template, "--out", target,
                                               unheard], [f"{unheard}: none of the", "counted in the loss", "--count all"])

    # An existing output.
    target.write_bytes(b"an earlier file")
    c.refused("an existing --out without --force", ["--tokenizer", bpe, "--out", target, good],
              [f"--out {target}: exists; give --force to replace it"])
    c.refused("--out one of the inputs, --force", ["--tokenizer", bpe, "--out", good, "--force", good],
              [f"--out {good}: is {good}, which this run reads"])
    for read in (bpe / "tokenizer.json", bpe / "tokenizer_config.json"):
        c.refused(f"--out the tokenizer's {read.name}, --force", ["--tokenizer", bpe, "--out", read, "--force", good],
                  [f"--out {read}: is {read}, which this run reads"])
    c.refused("--out the chat template, --force", ["--tokenizer", bpe, "--chat-template", template, "--out", template,
                                                   "--force", good], [f"--out {template}: is {template}, which this run reads"])
    before = snapshot(work)
    r = subprocess.run(tool("--tokenizer", bpe, "--out", target, "--force", "--quiet", good), capture_output=True,
                       text=True)
    problems = [] if r.returncode == 0 and not r.stderr else [f"exit status {r.returncode}, stderr {r.stderr!r}"]
    if not target.read_bytes().startswith(b"PLAITTOK"):
        problems.append("the file was not replaced by a token file")
    if sorted(snapshot(work)) != sorted(before):
        problems.append("files other than --out appeared or went")
    report("an existing --out with --force is replaced", problems, "(replaced)")
    target.unlink()

    # Empty documents: an error naming file:line; --skip-empty warns, counts and writes the rest.
    for label, record in (("an empty text", {"text": ""}), ("an empty response", {"prompt": "p", "response": ""}),
                          ("an empty assistant message", {"messages": [{"role": "user", "content": "u"},
                                                                       {"role": "assistant", "content": ""}]})):
        bad = write_lines(inp / "empty.jsonl", [text, json.dumps(record)])
        c.refused(label, ["--tokenizer", bpe, "--out", target, bad], [f"{bad}:2:", "empty", "--skip-empty"])
    bad = write_lines(inp / "blank.jsonl", [text, pair, '{"text": "   "}'])
    c.refused("a text that encodes to no tokens", ["--tokenizer", sp, "--out", target, bad],
              [f"{bad}:3: the text encodes to no tokens"])
    bad = write_lines(inp / "blanks.jsonl", [text, '{"text": ""}', pair, '{"prompt": "p", "response": ""}'])
    r = subprocess.run(tool("--tokenizer", bpe, "--out", target, "--skip-empty", "--quiet", bad), capture_output=True,
                       text=True)
    lines = r.stderr.splitlines()
    problems = [] if r.returncode == 0 and target.exists() else [f"exit status {r.returncode}"]
    if len(lines) != 3 or f"{bad}:2:" not in lines[0] or f"{bad}:4:" not in lines[1] or "2 empty" not in lines[2]:
        problems.append("expected a warning naming each file:line and a count")
    report("--skip-empty leaves empty documents out with warnings", problems, " | ".join(lines))
    target.unlink()

    total = RESULTS["passed"] + RESULTS["failed"]
    print(f"{total} cases in {time.monotonic() - start:.1f} s")
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    sys.exit(1 if RESULTS["failed"] else 0)


if __name__ == "__main__":
    main()
