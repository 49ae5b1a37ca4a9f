#!/usr/bin/env python3
"""The plugin API's layout check (tools/sdk_abi.py) must fail on the changes that would
break a released plugin, naming the type, and let a minor version's additions through.
Each case edits a copy of the SDK's headers and runs the check on it against a copy of
sdk/abi, exactly as the build does."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

parser = argparse.ArgumentParser()
parser.add_argument("--source", required=True)
parser.add_argument("--clang", required=True)
parser.add_argument("--include", action="append", default=[])
parser.add_argument("--cache", help="the precompiled LibTorch headers, shared with the build's check")
args = parser.parse_args()
tool = os.path.join(args.source, "tools", "sdk_abi.py")
failures = []


def run(command, sdk, abi):
    cmd = [sys.executable, tool, command, "--clang", args.clang, "--sdk-include", sdk, "--abi-dir", abi]
    for d in args.include:
        cmd += ["--include", d]
    if args.cache:
        cmd += ["--cache", args.cache]
    done = subprocess.run(cmd, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def case(name, edits, command, want_code, want_text):
    with tempfile.TemporaryDirectory() as tmp:
        sdk, abi = os.path.join(tmp, "include"), os.path.join(tmp, "abi")
        shutil.copytree(os.path.join(args.source, "sdk", "include"), sdk)
        shutil.copytree(os.path.join(args.source, "sdk", "abi"), abi)
        for header, old, new in edits:
            path = os.path.join(sdk, "plait", "sdk", header)
            text = open(path).read()
            assert old in text, f"{name}: '{old}' is not in {header}"
            open(path, "w").write(text.replace(old, new, 1))
        code, out = run(command, sdk, abi)
        ok = code == want_code and re.search(want_text, out) is not None
        print(f"{'PASS' if ok else 'FAIL'}  {name}: exit {code}")
        if not ok:
            failures.append(f"{name}: wanted exit {want_code} and /{want_text}/, got exit {code}:\n{out}")


minor = int(re.search(r"#define PLAIT_API_MINOR (\d+)", open(
    os.path.join(args.source, "sdk", "include", "plait", "sdk", "version.hpp")).read()).group(1))
next_minor = ("version.hpp", f"#define PLAIT_API_MINOR {minor}", f"#define PLAIT_API_MINOR {minor + 1}")

case("the headers as they are hold every frozen version", [], "check", 0, r"the layouts of \d+ frozen version")
case("a virtual function inserted into an interface breaks every version",
     [("data_parallel.hpp", "  virtual void before_microbatch(", "  virtual void before_step() {}\n  virtual void before_microbatch(")],
     "check", 1, r"plait::DataParallel's virtual functions changed at slot 8: "
                 r"'void plait::DataParallel::before_microbatch\(const MicrobatchInfo &\)' became "
                 r"'void plait::DataParallel::before_step\(\)'")
case("a virtual function appended to an existing interface breaks it too (an older plugin's own virtuals sit there)",
     [("pipeline.hpp", "int64_t pp_rank) const = 0;\n};",
       "int64_t pp_rank) const = 0;\n  virtual int64_t warmup() const { return 0; }\n};")],
     "check", 1, r"plait::PipelineSchedule's virtual functions changed")
case("a field appended to a struct plugins make (not PLAIT_ABI_GROWS) breaks it, even in a new minor",
     [next_minor, ("state.hpp", "  int replicas = 1, replica = 0;", "  int replicas = 1, replica = 0;\n  int64_t stride = 1;")],
     "freeze", 1, r"plait::StatePart changed its layout \(size 88 -> 96; 88 int64_t stride\)")
case("a field added to a PLAIT_ABI_GROWS struct without a new minor is refused",
     [("data_parallel.hpp", "  Communicator* pp_group = nullptr;\n};", "  Communicator* pp_group = nullptr;\n  int future = 0;\n};")],
     "check", 1, r"add to it after it was frozen; additions go into a new minor version")
case("the same field in a new minor version is an addition: it freezes",
     [next_minor,
      ("data_parallel.hpp", "  Communicator* pp_group = nullptr;\n};", "  Communicator* pp_group = nullptr;\n  int future = 0;\n};")],
     "freeze", 0, rf"froze API 12\.{minor + 1}")
case("a field inserted in the middle of a PLAIT_ABI_GROWS struct breaks it",
     [next_minor, ("data_parallel.hpp", "  StageModel* model = nullptr;", "  int first = 0;\n  StageModel* model = nullptr;")],
     "freeze", 1, r"plait::DataParallelSetup changed its first \d+ fields")
case("an enumerator inserted before others breaks the enum",
     [next_minor, ("pipeline.hpp", "  forward,         // run stage on microbatch", "  idle,\n  forward,")],
     "freeze", 1, r"enum plait::ActionType changed its enumerators")

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("the layout check refuses each breaking change and lets the minor addition through")
