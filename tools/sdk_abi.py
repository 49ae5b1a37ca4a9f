#!/usr/bin/env python3
"""The plugin API's layout check: plait's compatibility promise, enforced at build time.

A plugin built against API M.n must keep working in every plait of major M and minor
>= n. That holds only if nothing a plugin was compiled against moves: no virtual
function changes place, no struct changes layout (except by appending fields to the
structs the core creates and plugins only read, marked PLAIT_ABI_GROWS), no enumerator
changes value. This script compiles the SDK's headers with clang, reads the layouts
clang computes (record layouts, vtable layouts, enums), and compares them with the
frozen layout of every released version of the same major in sdk/abi/<M>.<n>.abi:

  dump    write the current layout to --out
  check   compare the current layout with every frozen one; exit 1, naming each
          difference, when the headers break a released version (the build runs this)
  freeze  record the current version's layout as sdk/abi/<M>.<n>.abi (once per
          version: a released version is never frozen again)
  match   exit 1 unless the headers (--sdk-include) have exactly the layout of
          --manifest (the test suite holds its frozen header copies to this)

The rules it checks are written out in sdk/README.md ("Compatibility").
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def api_version(sdk_include):
    text = open(os.path.join(sdk_include, "plait", "sdk", "version.hpp")).read()
    major = re.search(r"^#define PLAIT_API_MAJOR (\d+)", text, re.M)
    minor = re.search(r"^#define PLAIT_API_MINOR (\d+)", text, re.M)
    return int(major.group(1)), int(minor.group(1))


def torch_version(include_dirs):
    for d in include_dirs:
        path = os.path.join(d, "torch", "headeronly", "version.h")
        if os.path.exists(path):
            m = re.search(r'#define TORCH_VERSION "([^"]+)"', open(path).read())
            if m:
                return m.group(1)
    return "unknown"


def clang_flags(args):
    """Everything but the SDK's own folder, which the precompiled header does not need."""
    return [args.clang, "-std=c++20", "-w", "-D_GLIBCXX_USE_CXX11_ABI=1"] + ["-isystem" + d for d in args.include]


def external_headers(sdk_include):
    """The <...> headers the SDK includes (the standard library's and LibTorch's)."""
    found = set()
    for folder, _, files in os.walk(os.path.join(sdk_include, "plait")):
        for name in files:
            for line in open(os.path.join(folder, name)):
                m = re.match(r"\s*#\s*include\s*<([^>]+)>", line)
                if m:
                    found.add(m.group(1))
    return sorted(found)


def precompiled_header(args):
    """LibTorch's headers, parsed once into a clang PCH that every pass reuses (they are
    most of the parsing), cached in --cache by what it was made from."""
    headers = external_headers(args.sdk_include)
    flags = clang_flags(args)
    key = hashlib.sha1(repr((headers, flags)).encode()).hexdigest()[:16]
    os.makedirs(args.cache, exist_ok=True)
    pch = os.path.join(args.cache, f"sdk-deps-{key}.pch")
    if not os.path.exists(pch):
        header = os.path.join(args.cache, f"sdk-deps-{key}.hpp")
        with open(header, "w") as f:
            f.write("".join(f"#include <{h}>\n" for h in headers))
        partial = pch + f".{os.getpid()}.partial"
        done = subprocess.run(flags + ["-x", "c++-header", header, "-o", partial], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit("sdk_abi: clang could not precompile the SDK's LibTorch headers:\n" + done.stderr[-4000:])
        os.replace(partial, pch)
    return pch


def run_clang(args, source, extra):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "probe.cpp")
        with open(path, "w") as f:
            f.write(source)
        cmd = clang_flags(args) + ["-I" + args.sdk_include, "-include-pch", precompiled_header(args), path] + extra
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit("sdk_abi: clang could not compile the SDK's headers:\n" + done.stderr[-4000:])
        return done.stdout


# --- Pass 1: which types the SDK declares (clang's AST, namespace plait only) ---------

def json_objects(text):
    decoder, i, out = json.JSONDecoder(), 0, []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        obj, i = decoder.raw_decode(text, i)
        out.append(obj)


def enumerator_values(enum):
    values, next_value = [], 0
    for c in enum.get("inner", []):
        if c.get("kind") != "EnumConstantDecl":
            continue
        explicit = [x for x in walk(c) if x.get("kind") == "ConstantExpr" and "value" in x]
        value = int(explicit[0]["value"]) if explicit else next_value
        values.append((c["name"], value))
        next_value = value + 1
    return values


def walk(node):
    yield node
    for c in node.get("inner", []) or []:
        yield from walk(c)


def declared_types(args):
    """(records, enums): qualified names of the complete public records of namespace
    plait (with polymorphic and grows flags) and its enums with their values."""
    text = run_clang(args, '#include "plait/sdk/sdk.hpp"\n',
                     ["-fsyntax-only", "-Xclang", "-ast-dump=json", "-Xclang", "-ast-dump-filter=plait"])
    records, enums = {}, {}

    def visit(node, scope, public):
        kind = node.get("kind")
        if kind == "NamespaceDecl":
            name = node.get("name", "")
            if not name or name == "detail":  # anonymous namespaces and the plugin macro's helpers
                return
            for c in node.get("inner", []):
                visit(c, scope + [name], True)
        elif kind == "CXXRecordDecl" and node.get("completeDefinition") and not node.get("isImplicit") and public:
            qualified = "::".join(scope + [node["name"]]) if node.get("name") else None
            if qualified is None:
                return
            inner = node.get("inner", [])
            data = node.get("definitionData", {})
            records[qualified] = {
                "polymorphic": bool(data.get("isPolymorphic")),
                "grows": any(c.get("kind") == "AnnotateAttr" for c in inner),
            }
            access = "private" if node.get("tagUsed") == "class" else "public"
            for c in inner:
                if c.get("kind") == "AccessSpecDecl":
                    access = c.get("access")
                elif c.get("kind") in ("CXXRecordDecl", "EnumDecl"):
                    visit(c, scope + [node["name"]], access == "public")
        elif kind == "EnumDecl" and node.get("name") and public:
            enums["::".join(scope + [node["name"]])] = enumerator_values(node)

    for obj in json_objects(text):
        visit(obj, [], True)
    return records, enums


# --- Pass 2: their layouts (clang's record and vtable dumps) ---------------------------

def probe_source(records):
    lines = ['#include "plait/sdk/sdk.hpp"', "namespace plait_abi_probe {"]
    for i, (name, r) in enumerate(sorted(records.items())):
        if r["polymorphic"]:
            lines.append(f"void destroy{i}({name}* p) {{ delete p; }}")
    names = [n for n in sorted(records)] + ["PlaitPluginInfo"]
    lines.append("unsigned long sizes[] = {" + ", ".join(f"sizeof({n})" for n in names) + "};")
    lines.append("}")
    return "\n".join(lines) + "\n"


RECORD_HEAD = re.compile(r"^\s*0 \| (?:struct|class|union) (\S.*)$")
FIELD = re.compile(r"^\s*([\d:\-]+) \|(\s+)(\S.*)$")
SIZE = re.compile(r"\[sizeof=(\d+), dsize=\d+, align=(\d+)")
VTABLE_HEAD = re.compile(r"^Vtable for '([^']+)' \(\d+ entries\)\.$")
VTABLE_ENTRY = re.compile(r"^\s*(\d+) \| (.*)$")


def parse_layouts(text, wanted):
    records, vtables = {}, {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("*** Dumping AST Record Layout"):
            head = RECORD_HEAD.match(lines[i + 1])
            name = head.group(1) if head else None
            fields, j = [], i + 2
            while j < len(lines) and not SIZE.search(lines[j]):
                m = FIELD.match(lines[j])
                if m and len(m.group(2)) == 3:  # direct members only: "|   type name"
                    fields.append(f"{m.group(1)} {m.group(3)}")
                j += 1
            size = SIZE.search(lines[j]) if j < len(lines) else None
            if name in wanted and size and name not in records:
                records[name] = {"size": int(size.group(1)), "align": int(size.group(2)), "fields": fields}
            i = j + 1
            continue
        head = VTABLE_HEAD.match(line)
        if head and head.group(1) in wanted:
            entries, j = [], i + 1
            while j < len(lines) and lines[j].strip():
                m = VTABLE_ENTRY.match(lines[j])
                if m:
                    entries.append(m.group(2).replace(" [pure]", ""))
                j += 1
            vtables.setdefault(head.group(1), entries)
            i = j
            continue
        i += 1
    return records, vtables


def current_layout(args):
    declared, enums = declared_types(args)
    text = run_clang(args, probe_source(declared),
                     ["-c", "-o", os.devnull, "-Xclang", "-fdump-record-layouts", "-Xclang", "-fdump-vtable-layouts"])
    wanted = set(declared) | {"PlaitPluginInfo"}
    records, vtables = parse_layouts(text, wanted)
    missing = sorted(n for n in wanted if n not in records)
    if missing:
        sys.exit("sdk_abi: clang gave no layout for " + ", ".join(missing))
    for name, r in records.items():
        r["grows"] = declared.get(name, {"grows": True})["grows"]  # PlaitPluginInfo grows by info_size
    no_vtable = sorted(n for n, r in declared.items() if r["polymorphic"] and n not in vtables)
    if no_vtable:
        sys.exit("sdk_abi: clang gave no vtable for " + ", ".join(no_vtable))
    major, minor = api_version(args.sdk_include)
    return {"major": major, "minor": minor, "torch": torch_version(args.include),
            "records": records, "vtables": vtables, "enums": enums}


# --- The manifest: one text file per frozen version -----------------------------------

def write_manifest(layout, path):
    out = [f"# plait plugin API {layout['major']}.{layout['minor']}: the layouts plugins of this version were "
           "compiled against.",
           "# Frozen by tools/sdk_abi.py freeze; checked by every build. Never edit it by hand.",
           f"api {layout['major']}.{layout['minor']}",
           f"torch {layout['torch']}"]
    for name in sorted(layout["records"]):
        r = layout["records"][name]
        out.append(f"record {name} size={r['size']} align={r['align']}" + (" grows" if r["grows"] else ""))
        out += ["  " + f for f in r["fields"]]
    for name in sorted(layout["vtables"]):
        out.append(f"vtable {name}")
        out += [f"  {i} {e}" for i, e in enumerate(layout["vtables"][name])]
    for name in sorted(layout["enums"]):
        out.append(f"enum {name}")
        out += [f"  {n} = {v}" for n, v in layout["enums"][name]]
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def read_manifest(path):
    layout = {"records": {}, "vtables": {}, "enums": {}}
    current = None
    for line in open(path):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        if line.startswith("api "):
            layout["major"], layout["minor"] = (int(x) for x in line[4:].split("."))
        elif line.startswith("torch "):
            layout["torch"] = line[6:]
        elif line.startswith("record "):
            m = re.match(r"record (.+) size=(\d+) align=(\d+)( grows)?$", line)
            record = {"size": int(m.group(2)), "align": int(m.group(3)), "grows": bool(m.group(4)), "fields": []}
            layout["records"][m.group(1)] = record
            current = record["fields"]
        elif line.startswith("vtable "):
            current = layout["vtables"].setdefault(line[7:], [])
        elif line.startswith("enum "):
            current = layout["enums"].setdefault(line[5:], [])
        elif line.startswith("  ") and current is not None:
            current.append(line[2:])
    # Vtable entries are stored with their slot number, enum entries as "name = value".
    layout["vtables"] = {n: [e.split(" ", 1)[1] for e in es] for n, es in layout["vtables"].items()}
    layout["enums"] = {n: [(e.split(" = ")[0], int(e.split(" = ")[1])) for e in es] for n, es in layout["enums"].items()}
    return layout


# --- The rules --------------------------------------------------------------------------

def breaks(frozen, now):
    """What in `now` breaks a plugin built against `frozen` (same major), one sentence each."""
    version = f"{frozen['major']}.{frozen['minor']}"
    out = []
    for name, old in frozen["records"].items():
        new = now["records"].get(name)
        if new is None:
            out.append(f"{name} was removed (plugins of API {version} use it)")
            continue
        if old["grows"]:
            if new["fields"][:len(old["fields"])] != old["fields"] or new["size"] < old["size"] or \
                    new["align"] != old["align"]:
                out.append(f"{name} changed its first {len(old['fields'])} fields, its size or alignment; a struct "
                           f"marked PLAIT_ABI_GROWS may only gain fields at its end "
                           f"(API {version}: {old['fields']}, size {old['size']})")
        elif (new["size"], new["align"], new["fields"]) != (old["size"], old["align"], old["fields"]):
            detail = [f for f in new["fields"] if f not in old["fields"]] + \
                     [f"no longer '{f}'" for f in old["fields"] if f not in new["fields"]]
            out.append(f"{name} changed its layout (size {old['size']} -> {new['size']}; "
                       f"{'; '.join(detail) or 'fields reordered'}); its layout is frozen for the major version: add a "
                       "new type instead, or mark a struct that only the core creates PLAIT_ABI_GROWS in a new major")
    for name, old in frozen["vtables"].items():
        new = now["vtables"].get(name)
        if new != old:
            first = next((i for i in range(max(len(old), len(new or []))) if i >= len(old) or i >= len(new or [])
                          or old[i] != new[i]), 0)
            was = old[first] if first < len(old) else "(nothing)"
            became = new[first] if new and first < len(new) else "(nothing)"
            out.append(f"{name}'s virtual functions changed at slot {first}: '{was}' became '{became}'; a virtual "
                       "function is never added to, removed from or changed in an existing interface within a major "
                       "version: a minor version adds a new interface, reached through find_extension")
    for name, old in frozen["enums"].items():
        new = now["enums"].get(name, [])
        if new[:len(old)] != old:
            out.append(f"enum {name} changed its enumerators {old} -> {new}; a minor version may only append to an enum")
    return out


def manifests(abi_dir, major):
    found = []
    for f in sorted(os.listdir(abi_dir)) if os.path.isdir(abi_dir) else []:
        m = re.match(r"^(\d+)\.(\d+)\.abi$", f)
        if m and int(m.group(1)) == major:
            found.append((int(m.group(2)), os.path.join(abi_dir, f)))
    return sorted(found)


def check(args):
    now = current_layout(args)
    version = f"{now['major']}.{now['minor']}"
    frozen = manifests(args.abi_dir, now["major"])
    problems, compared = [], 0
    rel = lambda p: os.path.relpath(p, ROOT)
    if not any(minor == now["minor"] for minor, _ in frozen):
        problems.append(f"API {version} has no frozen layout ({rel(os.path.join(args.abi_dir, version + '.abi'))}): "
                        "once the headers are what this version should be, run tools/sdk_abi.py freeze")
    for minor, path in frozen:
        old = read_manifest(path)
        if old["torch"] != now["torch"]:
            print(f"sdk_abi: {rel(path)} was recorded under LibTorch {old['torch']}, this build uses {now['torch']}: "
                  "not compared (plugins are rebuilt for another LibTorch anyway)")
            continue
        compared += 1
        if minor > now["minor"]:
            problems.append(f"{rel(path)} is frozen for API {now['major']}.{minor}, newer than the headers' {version}")
            continue
        found = breaks(old, now)
        if minor == now["minor"] and not found and (old["records"], old["vtables"], old["enums"]) != \
                (now["records"], now["vtables"], now["enums"]):
            found = ["the headers add to it after it was frozen; additions go into a new minor version "
                     "(raise PLAIT_API_MINOR in sdk/include/plait/sdk/version.hpp, then freeze it)"]
        problems += [f"API {old['major']}.{minor} ({rel(path)}): {p}" for p in found]
    if problems:
        print("sdk_abi: the plugin API's headers break the compatibility promise (sdk/README.md, 'Compatibility'):",
              file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print(f"sdk_abi: API {version}: the layouts of {compared} frozen version(s) hold "
          f"({len(now['records'])} records, {len(now['vtables'])} vtables, {len(now['enums'])} enums)")
    if args.stamp:
        open(args.stamp, "w").write(version + "\n")
    return 0


def match(args):
    now, frozen = current_layout(args), read_manifest(args.manifest)
    differences = [f"{kind} {name}" for kind in ("records", "vtables", "enums")
                   for name in sorted(set(now[kind]) | set(frozen[kind])) if now[kind].get(name) != frozen[kind].get(name)]
    if (now["major"], now["minor"]) != (frozen["major"], frozen["minor"]):
        differences.insert(0, f"the version ({now['major']}.{now['minor']} against {frozen['major']}.{frozen['minor']})")
    if differences:
        print(f"sdk_abi: {args.sdk_include} differs from {args.manifest} in: " + ", ".join(differences), file=sys.stderr)
        return 1
    print(f"sdk_abi: {args.sdk_include} has the layout of {args.manifest}")
    return 0


def freeze(args):
    now = current_layout(args)
    path = os.path.join(args.abi_dir, f"{now['major']}.{now['minor']}.abi")
    if os.path.exists(path) and not args.replace_unreleased:
        sys.exit(f"sdk_abi: {os.path.relpath(path, ROOT)} exists: a released version is never frozen again. Raise "
                 "PLAIT_API_MINOR for an addition, or pass --replace-unreleased if this version was never released")
    for minor, older in manifests(args.abi_dir, now["major"]):
        if minor < now["minor"]:
            found = breaks(read_manifest(older), now)
            if found:
                sys.exit("sdk_abi: not frozen, the headers break an earlier version:\n  " + "\n  ".join(found))
    os.makedirs(args.abi_dir, exist_ok=True)
    write_manifest(now, path)
    print(f"sdk_abi: froze API {now['major']}.{now['minor']} in {os.path.relpath(path, ROOT)}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["dump", "check", "freeze", "match"])
    parser.add_argument("--clang", default=os.environ.get("PLAIT_ABI_CLANG", "clang++-16"))
    parser.add_argument("--sdk-include", default=os.path.join(ROOT, "sdk", "include"))
    parser.add_argument("--include", action="append", default=[],
                        help="LibTorch's include folders (TORCH_INCLUDE_DIRS); default: the .venv's torch")
    parser.add_argument("--abi-dir", default=os.path.join(ROOT, "sdk", "abi"))
    parser.add_argument("--out", help="dump: where to write the layout")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "plait-sdk-abi"),
                        help="where the precompiled LibTorch headers are kept between runs")
    parser.add_argument("--stamp", help="check: a file written when the check passes")
    parser.add_argument("--manifest", help="match: the frozen layout the headers must have")
    parser.add_argument("--replace-unreleased", action="store_true",
                        help="freeze: replace the current version's layout (only before it is released)")
    args = parser.parse_args()
    if not args.include:
        import glob
        found = glob.glob(os.path.join(ROOT, ".venv", "lib", "python3*", "site-packages", "torch", "include"))
        if not found:
            sys.exit("sdk_abi: no LibTorch include folder: pass --include (TORCH_INCLUDE_DIRS)")
        args.include = [found[0], os.path.join(found[0], "torch", "csrc", "api", "include")]
    if args.command == "dump":
        write_manifest(current_layout(args), args.out or "/dev/stdout")
        return 0
    return {"check": check, "freeze": freeze, "match": match}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
