#!/usr/bin/env python3
"""check_includes: the house's include rules, checked over the #include lines of the C code.

A module is a .c file and its header (common/net/conn.c and conn.h are one module,
"common/net/conn"): code that can call code. A header with no .c of its own (loop.h,
store_impl.h, atomics.h, status.h, loadgen/io.h) holds shared types and inline helpers, not
calls into a module, so it is not a node of the graph (its own includes are still held to
the layers).
Checks, and prints one line per breach (exit 1 when any):
  1. no circle between modules (a module includes the header of another, that one back,
     ...; the linker would then need both to build either);
  2. the layers: a folder includes only folders below it (LAYERS, lowest first); tests/,
     bench/, tests/fuzz/ and the programs may include any of them;
  3. the one spelling: a project header in the including file's own folder by bare name,
     any other by its path from the repository root.
Usage: scripts/check_includes.py [--graph]   (run anywhere in the checkout; --graph prints
the module graph, one "module -> module" line per arrow)."""
import os
import re
import subprocess
import sys

# each layer and what it may include besides itself, lowest first; the programs
# (actor-server/, async-server/, loadgen/), tests/ and bench/ may include any of them
LAYERS = {
    "common/base": [],
    "common/store": ["common/base"],
    "common/http": ["common/base", "common/store"],
    "common/net": ["common/base", "common/store", "common/http"],
    "common/app": ["common/base", "common/store", "common/http", "common/net"],
    "actor": ["common/base"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard",
                          "--", "*.c", "*.h"], check=True, capture_output=True, text=True)
    return [p for p in out.stdout.split() if os.path.exists(os.path.join(root, p))]


def module(path):
    return path[:-2]


def allowed(src_folder, dst_folder):
    if src_folder == dst_folder or src_folder not in LAYERS:
        return True
    return dst_folder in LAYERS[src_folder]


def circles(graph):
    """Every set of modules that include each other round a circle (Tarjan's strongly
    connected components of more than one module), each as a sorted list."""
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(n):
        index[n] = low[n] = len(index)
        stack.append(n)
        on.add(n)
        for m in sorted(graph.get(n, ())):
            if m not in index:
                visit(m)
                low[n] = min(low[n], low[m])
            elif m in on:
                low[n] = min(low[n], index[m])
        if low[n] == index[n]:
            comp = []
            while True:
                m = stack.pop()
                on.discard(m)
                comp.append(m)
                if m == n:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for n in sorted(graph):
        if n not in index:
            visit(n)
    return out


def main(argv):
    if len(argv) > 1 and argv[1] not in ("--graph",):
        print("usage: scripts/check_includes.py [--graph]", file=sys.stderr)
        return 2
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True,
                          capture_output=True, text=True).stdout.strip()
    files = set(sources(root))
    graph = {}
    breaches = []
    for path in sorted(files):
        here = os.path.dirname(path)
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        for name in INCLUDE.findall(text):
            own = os.path.normpath(os.path.join(here, name))
            if "/" not in name and own in files:
                target = own
            elif name in files:
                target = name
                if os.path.dirname(name) == here:
                    breaches.append(f"{path}: \"{name}\" is in its own folder: "
                                    f"include it as \"{os.path.basename(name)}\"")
            else:
                continue  # a system or generated header
            src, dst = module(path), module(target)
            if src != dst and src + ".c" in files and dst + ".c" in files:
                graph.setdefault(src, set()).add(dst)
            if not allowed(here, os.path.dirname(target)):
                breaches.append(f"{path}: includes {target}: {here}/ may include only "
                                f"{', '.join(LAYERS[here]) or 'itself'}")
    for comp in circles(graph):
        breaches.append("modules that include each other round a circle: " + ", ".join(comp))
    if len(argv) > 1:
        for src in sorted(graph):
            for dst in sorted(graph[src]):
                print(f"{src} -> {dst}")
    for b in breaches:
        print(b)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
