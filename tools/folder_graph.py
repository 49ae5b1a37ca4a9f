#!/usr/bin/env python3
"""Which folders of core/ include which: the pairs that include each other, and every
cycle among folders (strongly connected components), each with a few of its includes.

  python3 tools/folder_graph.py
"""
import collections
import pathlib
import re
import sys

CORE = pathlib.Path(__file__).resolve().parent.parent / "core"
INCLUDE = re.compile(r'#include "([a-z_]+)/[^"]+\.hpp"')


def edges():
    out = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in sorted(CORE.rglob("*")):
        if path.suffix not in (".cpp", ".hpp") or path.parent == CORE:
            continue
        here = path.relative_to(CORE).parts[0]
        for line in path.read_text(errors="ignore").splitlines():
            m = INCLUDE.match(line)
            if m and (CORE / m.group(1)).is_dir() and m.group(1) != here:
                out[here][m.group(1)].append(f"{path.relative_to(CORE)} -> {m.group(0)[10:-1]}")
    return out


def cycles(graph):
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def main():
    graph = edges()
    pairs = sorted({tuple(sorted((a, b))) for a in graph for b in graph[a] if a in graph.get(b, {})})
    print(f"{len(pairs)} pair(s) of folders that include each other")
    for a, b in pairs:
        print(f"  {a} <-> {b}: {graph[a][b][0]}; {graph[b][a][0]}")
    found = cycles(graph)
    print(f"{len(found)} cycle(s) among folders")
    for component in found:
        print("  " + ", ".join(component))
    return 0


if __name__ == "__main__":
    sys.exit(main())
