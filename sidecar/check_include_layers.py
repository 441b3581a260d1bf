#!/usr/bin/env python3
"""Checks that sidecar/'s folders include one another only the way their CMakeLists.txt say.

Every folder below sidecar/ that holds C++ files has a CMakeLists.txt whose header comment
carries one line

    # May include: sidecar/base, sidecar/topology

(or `# May include: nothing of sidecar/`) and, where its tests need more than its code,

    # Tests may also include: sidecar/testing

A file may include its own folder and the folders its line names; a *_test.cc file also
those of the tests' line. Files at the top of sidecar/ (main.cc and the tests of the
booster-agent binary) may include any folder. The "May include" lines together must have no
cycle, so the dependencies run one way. Exits 1 naming every include that breaks a rule.

    python3 sidecar/check_include_layers.py [SIDECAR_DIR]
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"sidecar/([^"]+)"', re.MULTILINE)
SOURCE_SUFFIXES = (".h", ".cc")


def folder_rules(cmake_path):
    """The folders a folder may include (code, tests) from its CMakeLists.txt.

    A rule may go on over the next comment lines when they are indented ("#   sidecar/x")."""
    code, tests, found, into = set(), set(), False, None
    with open(cmake_path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("# May include:"):
                rest, into, found = line[len("# May include:"):], code, True
            elif line.startswith("# Tests may also include:"):
                rest, into = line[len("# Tests may also include:"):], tests
            elif into is not None and line.startswith("#   "):
                rest = line[1:]
            else:
                into = None
                continue
            for word in re.split(r"[,\s]+", rest):
                word = word.strip().rstrip(".").rstrip("/")
                if word.startswith("sidecar/"):
                    into.add(word[len("sidecar/"):])
    return (code, tests) if found else None


def find_cycle(graph):
    """A cycle of the folder graph as a list of folders, or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt]
            if nxt not in state:
                cycle = visit(nxt, path + [nxt])
                if cycle:
                    return cycle
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [node])
            if cycle:
                return cycle
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
    errors = []
    rules = {}
    sources = {}  # folder -> files
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "testdata")
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        files = sorted(f for f in filenames if f.endswith(SOURCE_SUFFIXES))
        if rel == ".":
            continue
        if files:
            sources[rel] = files
            cmake = os.path.join(dirpath, "CMakeLists.txt")
            r = folder_rules(cmake) if os.path.exists(cmake) else None
            if r is None:
                errors.append(f"sidecar/{rel}: no CMakeLists.txt with a '# May include:' line")
                r = (set(), set())
            rules[rel] = r
    for folder, (code, tests) in sorted(rules.items()):
        for other in sorted(code | tests):
            if other not in rules:
                errors.append(f"sidecar/{folder}/CMakeLists.txt names sidecar/{other}, "
                              "which holds no C++ files")
    cycle = find_cycle({f: r[0] for f, r in rules.items()})
    if cycle:
        errors.append("the '# May include:' lines make a cycle: " +
                      " -> ".join("sidecar/" + f for f in cycle))
    for folder, files in sorted(sources.items()):
        code, tests = rules[folder]
        for name in files:
            allowed = code | (tests if name.endswith("_test.cc") else set())
            with open(os.path.join(root, folder, name), encoding="utf-8") as f:
                text = f.read()
            for target in INCLUDE.findall(text):
                target_folder = os.path.dirname(target)
                if target_folder == folder:
                    continue
                if target_folder not in allowed:
                    errors.append(f"sidecar/{folder}/{name} includes sidecar/{target}: "
                                  f"sidecar/{folder} may not include sidecar/{target_folder}")
    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"sidecar/: {sum(len(f) for f in sources.values())} files in {len(sources)} folders "
          "include only what their folder's CMakeLists.txt allows; no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
