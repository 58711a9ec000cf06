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

It then checks that GRDB stays out of the public API (docs/app-data.md, "GRDB and the public
API"): the public symbol graph of every product module (`swift-symbolgraph-extract`) may name a
GRDB type only in the escape hatches listed in GRDB_ESCAPE_HATCHES, and no public type may conform
to a GRDB protocol; and each snippet of MUST_NOT_COMPILE (an app that imports both Coffer and GRDB
and tries `asset.insert(db)`, `Settings(database:)`, …) must be rejected by the compiler with its
expected message.

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


# The public declarations that take GRDB's `Database` on purpose: an app's own tables and data
# steps, written by an app that depends on GRDB itself (docs/app-data.md).
GRDB_ESCAPE_HATCHES = {
    "CofferDatabase": {
        "AppMigration/migrate", "AppMigration/init(_:migrate:)", "DataMigration/run", "DataMigration/init(version:name:run:)",
        "AppDatabase/read(_:)", "AppDatabase/write(_:)", "StorageContext/observe(_:)",
    },
}
SURFACE_MODULES = ["Coffer", "CofferWallet", "CofferCrypto", "CofferDeniable", "CofferStateMachines", "CofferSettings",
                   "CofferDatabase", "CofferMediaCache", "CofferSecureStorage", "CofferSync", "CofferFileModes"]
GRDB_PREFIXES = ("s:4GRDB", "s:10GRDBSQLite", "c:@S@sqlite3")

# Code an app could write with `import Coffer` and `import GRDB` that must not compile: the public
# records and settings carry no GRDB conformance or GRDB-typed entry point. (snippet, expected
# compiler message)
MUST_NOT_COMPILE = [
    ("func f(_ db: Database, _ a: Asset) throws { try a.insert(db) }", "has no member 'insert'"),
    ("func f(_ db: Database) throws -> [Album] { try Album.fetchAll(db) }", "has no member 'fetchAll'"),
    ("func f<T: PersistableRecord>(_: T.Type) {}\nfunc g() { f(BackupAlbum.self) }", "conform to 'PersistableRecord'"),
    ("func f<T: FetchableRecord>(_: T.Type) {}\nfunc g() { f(ETag.self) }", "conform to 'FetchableRecord'"),
    ("func f<T: MutablePersistableRecord>(_: T.Type) {}\nfunc g() { f(Brand.self) }", "conform to 'MutablePersistableRecord'"),
    ("func f(_ pool: DatabasePool) throws -> Settings { try Settings(database: pool) }", "inaccessible due to 'package'"),
    ("func f() { var m = DatabaseMigrator(); Settings.registerMigrations(&m) }", "inaccessible due to 'package'"),
    ("let codec = SettingCodec<Int>(kind: \"int\", encode: { $0.databaseValue }, decode: { _ in nil })",
     "inaccessible due to 'package'"),
    ("func f() -> DatabaseValue? { SettingsCatalog.entry(named: \"tilesPerRow\")?.defaultValue }",
     "inaccessible due to 'package'"),
]


def search_flags(flags):
    """The module search flags of `flags` (what swift-symbolgraph-extract needs to load a module)."""
    kept, i = [], 0
    while i < len(flags):
        if flags[i] in ("-I", "-Xcc", "-module-cache-path", "-sdk", "-resource-dir", "-target") and i + 1 < len(flags):
            kept += [flags[i], flags[i + 1]]
            i += 2
            continue
        if flags[i].startswith("-I"):
            kept.append(flags[i])
        i += 1
    return kept


def public_grdb_uses(swiftc, flags, work):
    """Every public declaration naming a GRDB type, and every conformance of a public type to a
    GRDB protocol, outside GRDB_ESCAPE_HATCHES."""
    extract = os.path.join(os.path.dirname(swiftc), "swift-symbolgraph-extract")
    found = []
    for module in SURFACE_MODULES:
        out = os.path.join(work, "symbols", module)
        os.makedirs(out, exist_ok=True)
        command = [extract, "-module-name", module, "-output-dir", out, "-minimum-access-level", "public",
                   "-skip-synthesized-members", *search_flags(flags)]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            raise SystemExit(f"check-snippets: cannot extract the symbol graph of {module}:\n{done.stdout}")
        allowed = GRDB_ESCAPE_HATCHES.get(module, set())
        for name in sorted(os.listdir(out)):
            graph = json.load(open(os.path.join(out, name), encoding="utf-8"))
            symbols = {s["identifier"]["precise"]: s for s in graph.get("symbols", [])}
            for symbol in graph.get("symbols", []):
                path = "/".join(symbol["pathComponents"])
                fragments = symbol.get("declarationFragments", [])
                if path not in allowed and any(f.get("preciseIdentifier", "").startswith(GRDB_PREFIXES) for f in fragments):
                    found.append(f"{module}: {path}: {''.join(f['spelling'] for f in fragments)}")
            for relation in graph.get("relationships", []):
                if relation.get("target", "").startswith(GRDB_PREFIXES):
                    source = symbols.get(relation["source"])
                    where = "/".join(source["pathComponents"]) if source else relation["source"]
                    found.append(f"{module}: {where} {relation['kind']} {relation.get('targetFallback', relation['target'])}")
    return found


def compiles_wrongly(swiftc, flags, work):
    """The MUST_NOT_COMPILE snippets the compiler accepted, or rejected for another reason."""
    wrong = []
    for number, (code, expected) in enumerate(MUST_NOT_COMPILE, 1):
        name = os.path.join(work, f"must_not_compile{number}.swift")
        with open(name, "w", encoding="utf-8") as f:
            f.write("import Coffer\nimport Foundation\nimport GRDB\n\n" + code + "\n")
        command = [swiftc, "-typecheck", "-parse-as-library", "-module-name", "CofferMustNotCompile", *flags,
                   "-suppress-warnings", name]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        if done.returncode == 0:
            wrong.append(f"compiled, but must not: {code!r}")
        elif expected not in done.stdout:
            wrong.append(f"rejected without {expected!r}: {code!r}\n{done.stdout}")
    return wrong


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

    leaks = public_grdb_uses(swiftc, flags, work)
    for leak in leaks:
        print(f"check-snippets: GRDB in the public API: {leak}")
    wrong = compiles_wrongly(swiftc, flags, work)
    for line in wrong:
        print(f"check-snippets: {line}")
    if leaks or wrong:
        print("check-snippets: FAILED: GRDB reaches the public API (see above and docs/app-data.md)", file=sys.stderr)
        return 1
    print(f"check-snippets: no GRDB in the public API outside {sum(map(len, GRDB_ESCAPE_HATCHES.values()))} escape hatches; "
          f"{len(MUST_NOT_COMPILE)} app uses of GRDB through Coffer's types are rejected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
