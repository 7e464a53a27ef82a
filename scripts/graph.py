#!/usr/bin/env python3
"""The include and call graph between rakazo's source files, by wing.

A module is a .c file and its .h. An edge a -> b means a includes b's header
or calls (references) a symbol b defines: includes are read from the source,
calls from the symbol tables of the built objects (nm), so no call is guessed
from text. Every module belongs to a wing, and the wings have an order
(WINGS below, lowest first). Two things are refused:

  upward edge   a module uses one in a higher wing
  cycle         modules that reach each other (a strongly connected set)

Usage: scripts/graph.py [--root DIR] [--build DIR] [--edges] [--check]
  --edges   print every edge ("a -> b  include,call")
  --check   exit 1 when there is an upward edge or a cycle
Without a build directory (or with objects missing) only includes count,
and the summary says so.
"""
import os
import re
import subprocess
import sys

# Lowest first. A module may use its own wing and the wings below it.
WINGS = [
    ("engine/util", "buffers, errors, files, JSON, time, logs, IPC, HTTP, archives"),
    ("providers", "one vtable a machine backend fills; uses engine/util only"),
    ("engine/state", "SQL and the tables: the only place with SQL"),
    ("engine/store", "the workspace store: checkpoints, local or S3"),
    ("engine/screen", "RFB, observe and act, keys, pictures"),
    ("engine/access", "who may do what: authz, spaces, secrets, approvals"),
    ("engine/machine", "computers and what runs on them"),
    ("engine/gateway", "the screen gateway and port forwarding"),
    ("engine/agent", "models, tools, the run loop, memory"),
    ("api", "the HTTP API server"),
    ("cmd", "the CLI"),
    ("tui", "the dashboard"),
]
# Not engine code: the static in-computer agent is built on its own.
SKIP = {"providers/docker/agent", "providers/docker/cdp_bridge"}
# cmd/ and tui/ sit side by side at the top: the dashboard is started by a
# command (cmd/tui.c), so they may use each other.
SAME_FLOOR = {("cmd", "tui"), ("tui", "cmd")}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def wing_of(module):
    best = None
    for i, (prefix, _) in enumerate(WINGS):
        if module == prefix or module.startswith(prefix + "/"):
            if best is None or len(prefix) > len(WINGS[best][0]):
                best = i
    return best


def modules(root):
    found = {}
    for prefix, _ in WINGS:
        top = os.path.join(root, prefix)
        if not os.path.isdir(top):
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith((".c", ".h")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                mod = rel[:-2]
                if mod in SKIP or wing_of(mod) is None:
                    continue
                found.setdefault(mod, []).append(rel)
    return found


def include_edges(root, mods):
    edges = {}
    for mod, files in mods.items():
        for rel in files:
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                # root-relative, or relative to the including file
                cands = [inc, os.path.normpath(os.path.join(os.path.dirname(rel), inc))]
                for c in cands:
                    if c.endswith(".h") and c[:-2] in mods and c[:-2] != mod:
                        edges.setdefault((mod, c[:-2]), set()).add("include")
                        break
    return edges


def call_edges(build, mods, edges):
    defs, undef, missing = {}, {}, 0
    for mod in mods:
        obj = os.path.join(build, mod + ".o")
        if not os.path.exists(obj):
            if any(f.endswith(".c") for f in mods[mod]):
                missing += 1
            continue
        out = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRCG":
                defs[p[2]] = mod
            elif len(p) == 2 and p[0] == "U":
                undef.setdefault(mod, set()).add(p[1])
    for mod, syms in undef.items():
        for s in syms:
            d = defs.get(s)
            if d and d != mod:
                edges.setdefault((mod, d), set()).add("call")
    return missing


def cycles(nodes, edges):
    """Tarjan's strongly connected components of two or more modules."""
    adj = {n: [] for n in nodes}
    for (a, b) in edges:
        adj[a].append(b)
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # iterative, so a deep graph cannot hit the recursion limit
        work = [(v, iter(sorted(adj[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(adj[w]))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for n in sorted(nodes):
        if n not in index:
            visit(n)
    return sorted(out)


def main(argv):
    root, build, show_edges, check = ".", None, False, False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--root", "--build") and i + 1 < len(argv):
            if a == "--root":
                root = argv[i + 1]
            else:
                build = argv[i + 1]
            i += 2
            continue
        if a == "--edges":
            show_edges = True
        elif a == "--check":
            check = True
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        else:
            print(f"graph: unknown argument '{a}' (see --help)", file=sys.stderr)
            return 2
        i += 1
    if build is None:
        build = os.path.join(root, os.environ.get("BUILD", "build"))
    mods = modules(root)
    edges = include_edges(root, mods)
    missing = call_edges(build, mods, edges)
    up = sorted((a, b) for (a, b) in edges
                if wing_of(b) > wing_of(a) and (WINGS[wing_of(a)][0], WINGS[wing_of(b)][0]) not in SAME_FLOOR)
    circ = cycles(mods.keys(), edges)

    if show_edges:
        for (a, b) in sorted(edges):
            print(f"{a} -> {b}  {','.join(sorted(edges[(a, b)]))}")
    print(f"graph: {len(mods)} modules in {len(WINGS)} wings, {len(edges)} edges"
          + (f" (calls not read for {missing} modules: build first)" if missing else ""))
    for n, (prefix, what) in enumerate(WINGS):
        count = sum(1 for m in mods if wing_of(m) == n)
        print(f"  {n:2d} {prefix:15s} {count:3d}  {what}")
    print(f"upward edges: {len(up)}")
    for (a, b) in up:
        print(f"  {a} -> {b}  ({','.join(sorted(edges[(a, b)]))}: {WINGS[wing_of(a)][0]} is below {WINGS[wing_of(b)][0]})")
    print(f"cycles: {len(circ)}")
    for c in circ:
        print(f"  {len(c)} modules: {' '.join(c)}")
    if check and (up or circ):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
