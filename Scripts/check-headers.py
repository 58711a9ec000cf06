#!/usr/bin/env python3
"""File headers stay above the imports.

`swift format` sorts imports and carries the comment lines directly above an import along with
it: a file's header comment that touches its first import is sorted into the import block as soon
as an import that sorts earlier is added. A header followed by a blank line is left in place. This
check fails when a Swift file's header comment touches its first import, or when a comment sits
directly above an import that follows another import (a header already sorted into the block).

Usage: Scripts/check-headers.py [PATH …] (default: Sources Tests Examples Package.swift)
"""
import pathlib
import re
import sys

IMPORT = re.compile(r"^(@\w+(\(.*\))?\s+)*import\s")


def is_comment(line):
    return line.startswith("//") and not line.startswith("///")


def problems(path):
    lines = path.read_text(encoding="utf-8").split("\n")
    found = []
    seen_import = False
    for number, line in enumerate(lines):
        if IMPORT.match(line):
            previous = lines[number - 1] if number > 0 else ""
            if is_comment(previous):
                if seen_import:
                    found.append(f"{path}:{number}: a comment sits between imports (a file header sorted into them?)")
                else:
                    found.append(f"{path}:{number}: the header comment touches the first import; put a blank line after it")
            seen_import = True
        elif line.strip() and not is_comment(line) and not line.startswith("#"):
            break
    return found


def main(arguments):
    roots = [pathlib.Path(a) for a in (arguments or ["Sources", "Tests", "Examples", "Package.swift"])]
    files = []
    for root in roots:
        files += [root] if root.is_file() else sorted(p for p in root.rglob("*.swift") if ".build" not in p.parts)
    found = [problem for path in files for problem in problems(path)]
    for problem in found:
        print(problem, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
