#!/usr/bin/env python3
"""Type-checks every ```swift block of README.md, docs/*.md and the DocC catalogs
(Sources/*/*.docc/**/*.md) against the modules of the last debug build.

Each block becomes the body of an `async throws` function on the main actor (what a view model's
code is), so a blocking call where an async form exists, a missing `await` or a `for await` over
a throwing stream fails the check. A deprecated name (the old blocking names, before `…Blocking`)
is an error too: the docs show the current API. Other warnings are not reported. `import` lines at the top of a block are kept as imports; the
names a block uses without declaring them (`app`, `wallet`, `url`, …) come from
Scripts/snippet-context.swift, one declaration each, with the type the docs mean.

A block that is not code on its own (property declarations of a SwiftUI view, say) is skipped
when the line just before its opening fence is the marker

    <!-- snippet: fragment -->

Keep those few: each is code no reader can check. The script prints the skipped blocks.

It reuses the flags and modules of the last `swift build --build-tests` (.build/debug.yaml), as
Scripts/typecheck-apple.py does, so run that first. One compiler run checks every block.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = "<!-- snippet: fragment -->"
# A module whose build flags see every product module (its dependencies include `Coffer`).
FLAGS_FROM = "CofferAPITests"


def documents():
    files = [os.path.join(ROOT, "README.md")]
    files += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    files += sorted(glob.glob(os.path.join(ROOT, "Sources", "*", "*.docc", "**", "*.md"), recursive=True))
    return files


def blocks(path):
    """(first line number of the body, body lines, skipped) for each ```swift block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        match = re.match(r"^(\s*)```swift\s*$", lines[i])
        if not match:
            i += 1
            continue
        indent = match.group(1)
        previous = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        start, body = i + 2, []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        out.append((start, body, previous == MARKER))
        i += 1
    return out


def build_flags():
    manifest = os.path.join(ROOT, ".build", "debug.yaml")
    if not os.path.exists(manifest):
        raise SystemExit("check-snippets: no .build/debug.yaml: run `swift build --build-tests` first")
    for block in re.split(r'\n  "', open(manifest).read()):
        if not re.match(r"C\.[^\n]*-debug\.module\":", block):
            continue
        args = re.search(r"\n    args: (\[.*\])", block)
        if not args:
            continue
        args = json.loads(args.group(1))
        if "-module-name" in args and args[args.index("-module-name") + 1] == FLAGS_FROM:
            return args[0], compiler_args(args)
    raise SystemExit(f"check-snippets: .build/debug.yaml has no {FLAGS_FROM}: run `swift build --build-tests` first")


def compiler_args(args):
    """The build's search paths and language flags for one module (no inputs, outputs or state)."""
    keep_with_value = {"-I", "-F", "-swift-version", "-target", "-sdk", "-module-cache-path", "-Xcc",
                       "-enable-upcoming-feature", "-enable-experimental-feature", "-resource-dir"}
    kept, i = [], 1
    while i < len(args):
        arg = args[i]
        if arg in keep_with_value and i + 1 < len(args):
            kept += [arg, args[i + 1]]
            i += 2
            continue
        if arg.startswith("-I") or arg.startswith("-F") or arg.startswith("-D") or arg == "-strict-concurrency=complete":
            kept.append(arg)
        i += 1
    return kept


def main():
    swiftc, flags = build_flags()
    work = tempfile.mkdtemp(prefix="coffer-snippets-")
    sources, skipped, count = [os.path.join(ROOT, "Scripts", "snippet-context.swift")], [], 0
    for path in documents():
        rel = os.path.relpath(path, ROOT)
        for number, (start, body, skip) in enumerate(blocks(path), 1):
            if skip:
                skipped.append(f"{rel} block {number} (line {start})")
                continue
            count += 1
            imports = [line for line in body if re.match(r"^import \w+\s*$", line)]
            code = [("" if re.match(r"^import \w+\s*$", line) else line) for line in body]
            text = ["import Coffer", "import Foundation", *imports, "",
                    "@MainActor",
                    f"func snippet{count}() async throws {{",
                    f'#sourceLocation(file: "{rel}", line: {start})',
                    *code,
                    "#sourceLocation()",
                    "}", ""]
            name = os.path.join(work, f"snippet{count}.swift")
            with open(name, "w", encoding="utf-8") as f:
                f.write("\n".join(text))
            sources.append(name)
    command = [swiftc, "-typecheck", "-parse-as-library", "-module-name", "CofferSnippets", *flags,
               "-Werror", "DeprecatedDeclaration", *sources]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    for line in skipped:
        print(f"check-snippets: skipped (marked as a fragment): {line}")
    if done.returncode != 0:
        print(done.stdout.replace(ROOT + os.sep, ""), end="")
        print(f"check-snippets: FAILED: {count} Swift blocks, errors above (file and line in the document)", file=sys.stderr)
        return 1
    print(f"check-snippets: {count} Swift blocks type-check ({len(skipped)} fragments skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
