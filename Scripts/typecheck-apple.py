#!/usr/bin/env python3
# Type-checks Coffer's sources as an Apple build would select them (the `#if os(iOS)`,
# `#if os(macOS)`, `#if canImport(Darwin)`, … branches), on Linux, against the interface modules
# in AppleInterfaces/ (declarations transcribed from Apple's documentation). Run through
# Scripts/typecheck-apple.sh; docs/apple-platforms.md explains the method and its limits.
#
# How: the Swift compiler decides `os(…)` from the target triple, and this Linux toolchain has no
# standard library for an Apple triple, so the sources are copied with each platform condition of
# an `#if`/`#elseif` line replaced by `true` or `false` for the platform checked (iOS, then
# macOS). Line numbers do not change, so diagnostics point at the real files. Each module is then
# compiled in dependency order with `swiftc -emit-module` (full type-checking of every body, in
# the Swift 6 language mode with its complete concurrency checking), taking every other flag from
# the package's own debug build (`.build/debug.yaml`), so the dependencies (GRDB, swift-crypto,
# swift-log, argument parser) are the modules that build produced: nothing is rebuilt. Then, as
# the compiler checks availability only for the platform it compiles for, the script checks it
# itself for Sources/ (see "availability" below).
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INTERFACES = os.path.join(ROOT, "AppleInterfaces")
WORK = os.path.join(ROOT, ".build", "apple-typecheck")

# The platforms checked, with the Apple modules each one has. A module Coffer asks about with
# `canImport` must be listed in one of these sets, so a new condition is decided on purpose.
APPLE_MODULES = {
    "Darwin", "Foundation", "Dispatch", "Security", "SwiftUI", "Combine", "Observation", "os",
    "CryptoKit", "LocalAuthentication", "CoreFoundation", "Synchronization", "Testing", "XCTest",
}
PLATFORMS = {
    "iOS": {"os": "iOS", "modules": APPLE_MODULES | {"UIKit"}},
    "macOS": {"os": "macOS", "modules": APPLE_MODULES | {"AppKit"}},
}
# Modules that exist on Linux (or Windows, Android) and not on Apple platforms.
NON_APPLE_MODULES = {
    "Glibc", "Musl", "Bionic", "Android", "WinSDK", "ucrt", "CRT", "WASILibc",
    "FoundationEssentials", "FoundationInternationalization",
}
# Linux's Foundation stands in for Apple's here, and it keeps URLSession, URLCache, … in
# FoundationNetworking and XMLParser in FoundationXML, which Apple's Foundation contains: a
# condition on them is left as Linux decides it (true), so the code imports them as Apple's
# Foundation would provide them.
FOUNDATION_PARTS = {"FoundationNetworking", "FoundationXML"}
# Apple's Foundation re-exports Darwin (Linux's re-exports Glibc): a file that imports only
# Foundation sees Darwin's names on Apple platforms, so `import Darwin` is added on the same line.
FOUNDATION_IMPORT = re.compile(r"^(\s*(?:@\w+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+Foundation)\s*$")
KNOWN_OSES = {"macOS", "iOS", "tvOS", "watchOS", "visionOS", "Linux", "Windows", "Android",
              "FreeBSD", "OpenBSD", "WASI", "Cygwin", "Haiku", "PS4", "none"}

CONDITION_LINE = re.compile(r"^(\s*#\s*(?:if|elseif)\b)(.*)$")
CONDITION = re.compile(r"\b(os|canImport|targetEnvironment|arch|_runtime)\s*\(\s*([A-Za-z0-9_]+)[^)]*\)")


class Failure(Exception):
    pass


def rewrite_conditions(text, platform, path):
    """The source with every platform condition of its #if/#elseif lines decided for `platform`."""
    config = PLATFORMS[platform]

    def decide(match):
        kind, name = match.group(1), match.group(2)
        if kind == "os":
            if name not in KNOWN_OSES:
                raise Failure(f"{path}: unknown platform in os({name})")
            value = name == config["os"]
        elif kind == "canImport":
            if name in config["modules"]:
                value = True
            elif name in NON_APPLE_MODULES or any(name in p["modules"] for p in PLATFORMS.values()):
                value = False
            elif name in FOUNDATION_PARTS or name.startswith("Coffer") or name in (
                    "GRDB", "Crypto", "Logging", "ArgumentParser"):
                return match.group(0)  # the package's own modules and dependencies: as on Linux
            else:
                raise Failure(
                    f"{path}: canImport({name}) is not in Scripts/typecheck-apple.py's tables; "
                    "add the module to APPLE_MODULES or NON_APPLE_MODULES")
        elif kind == "targetEnvironment":
            value = False  # a device build, not the simulator nor Mac Catalyst
        elif kind == "arch":
            value = name == "arm64"
        else:  # _runtime
            value = name == "_ObjC"
        return "true" if value else "false"

    lines = text.split("\n")
    for index, line in enumerate(lines):
        found = CONDITION_LINE.match(line)
        if found:
            condition = found.group(2).split("//")[0].rstrip()
            if condition.endswith(("||", "&&", "(", ",", "!")) or condition.count("(") != condition.count(")"):
                raise Failure(f"{path}:{index + 1}: an #if condition continued on the next line; "
                              "write it on one line so the check can decide it")
            lines[index] = found.group(1) + CONDITION.sub(decide, found.group(2))
        elif FOUNDATION_IMPORT.match(line):
            lines[index] = line.rstrip() + "; import Darwin"
    return "\n".join(lines)


def swift_files(folder):
    result = []
    for base, dirs, files in os.walk(folder):
        dirs.sort()
        result.extend(os.path.join(base, f) for f in sorted(files) if f.endswith(".swift"))
    return result


def load_targets(roots):
    """The Swift modules whose sources are in `roots` (e.g. Sources, Tests), as the last build
    compiled them: flags, derived sources, dependencies among them."""
    manifest = os.path.join(ROOT, ".build", "debug.yaml")
    if not os.path.exists(manifest):
        raise Failure("no .build/debug.yaml: run `swift build` first (the check reuses its modules)")
    text = open(manifest).read()
    prefixes = [os.path.join(ROOT, r) + os.sep for r in roots]
    targets = {}
    for block in re.split(r'\n  "', text):
        if not re.match(r"C\.[^\n]*-debug\.module\":", block):
            continue
        inputs = re.search(r"\n    inputs: (\[.*\])", block)
        args = re.search(r"\n    args: (\[.*\])", block)
        if not inputs or not args:
            continue
        inputs, args = json.loads(inputs.group(1)), json.loads(args.group(1))
        if "-module-name" not in args:
            continue
        prefix = next((p for p in prefixes if any(i.startswith(p) and i.endswith(".swift") for i in inputs)), None)
        if prefix is None:
            continue  # a dependency's module, or one of a root not asked for
        own = [i for i in inputs if i.endswith(".swift") and i.startswith(prefix)]
        name = args[args.index("-module-name") + 1]
        folder = os.path.join(prefix, os.path.relpath(own[0], prefix).split(os.sep)[0])
        derived = [i for i in inputs if i.endswith(".swift") and not i.startswith(os.path.join(ROOT, "Sources") + os.sep)
                   and not i.startswith(os.path.join(ROOT, "Tests") + os.sep)]
        deps = [os.path.basename(i)[: -len(".swiftmodule")] for i in inputs if i.endswith(".swiftmodule")]
        targets[name] = {"name": name, "folder": folder, "derived": derived, "deps": deps, "args": args}
    if not targets:
        raise Failure(f".build/debug.yaml names no module of {', '.join(roots)}: run `swift build` here first")
    # Every Swift folder must be in the build (a target added since needs a new build).
    known = {t["folder"] for t in targets.values()}
    for prefix in prefixes:
        for entry in sorted(os.listdir(prefix)):
            folder = os.path.join(prefix, entry)
            if os.path.isdir(folder) and folder not in known and swift_files(folder):
                raise Failure(f"{os.path.relpath(folder, ROOT)} is not in the last build: run `swift build"
                              f"{' --build-tests' if 'Tests' in folder else ''}` first")
    for target in targets.values():
        target["deps"] = [d for d in target["deps"] if d in targets]
    return targets


def dependency_order(targets, wanted=None):
    order, seen = [], set()

    def visit(name):
        if name in seen:
            return
        seen.add(name)
        for dep in targets[name]["deps"]:
            visit(dep)
        order.append(name)

    for name in sorted(wanted or targets):
        visit(name)
    return order


def compiler_args(args):
    """The build's flags for one module, without its outputs, inputs and incremental state."""
    drop = {"-emit-dependencies", "-incremental", "-enable-batch-mode", "-serialize-diagnostics",
            "-parseable-output", "-emit-objc-header", "-c", "-g", "-emit-module", "-whole-module-optimization", "-wmo"}
    drop_with_value = {"-output-file-map", "-index-store-path", "-emit-objc-header-path",
                       "-emit-module-path", "-module-cache-path", "-o", "-emit-module-interface-path",
                       "-emit-private-module-interface-path", "-emit-package-module-interface-path"}
    kept, skip, verbatim = [], False, False
    for arg in args[1:]:
        if verbatim:  # the value of -Xcc, -Xfrontend, …: passed on as it is
            kept.append(arg)
            verbatim = False
        elif skip:
            skip = False
        elif arg in ("-Xcc", "-Xfrontend", "-Xllvm", "-Xlinker", "-Xclang-linker"):
            kept.append(arg)
            verbatim = True
        elif arg in drop_with_value:
            skip = True
        elif arg in drop or arg.startswith("@") or re.match(r"^-j\d+$", arg):
            continue
        else:
            kept.append(arg)
    return args[0], kept


def run(command, sources_map=None):
    """Runs a compiler command; returns (ok, output) with copied paths shown as the real files."""
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = done.stdout
    for copy, real in (sources_map or {}).items():
        output = output.replace(copy, real)
    return done.returncode == 0, output


def compile_interfaces(swiftc, out, cache):
    """Each folder of AppleInterfaces/ as a module, in import order."""
    modules = {}
    for entry in sorted(os.listdir(INTERFACES)):
        folder = os.path.join(INTERFACES, entry)
        if os.path.isdir(folder) and swift_files(folder):
            files = swift_files(folder)
            imports = set()
            for f in files:
                imports |= set(re.findall(r"^\s*(?:@_exported\s+)?import\s+(\w+)", open(f).read(), re.M))
            modules[entry] = {"files": files, "deps": [], "imports": imports}
    for module in modules.values():
        module["deps"] = sorted(m for m in module["imports"] if m in modules)
    for name in dependency_order(modules):
        # The package's own build modules too: the CryptoKit stand-in re-exports swift-crypto's
        # `Crypto`, as Apple's swift-crypto re-exports CryptoKit (same types on both sides).
        command = [swiftc, "-emit-module", "-parse-as-library", "-swift-version", "5", "-module-name", name,
                   "-emit-module-path", os.path.join(out, name + ".swiftmodule"), "-I", out,
                   "-I", os.path.join(ROOT, ".build", "debug", "Modules"),
                   "-module-cache-path", cache, "-suppress-warnings"] + modules[name]["files"]
        ok, output = run(command)
        if not ok:
            raise Failure(f"interface module {name} does not compile:\n{output}")
    return sorted(modules)


def prepare_sources(target, platform, src_root, overlay):
    """Copies a target's sources with the platform decided; returns (files, copy→real path map)."""
    files, paths = [], {}
    for real in swift_files(target["folder"]):
        relative = os.path.relpath(real, ROOT)
        text = overlay.get(relative)
        if text is None:
            text = open(real, encoding="utf-8").read()
        copy = os.path.join(src_root, platform, relative)
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        with open(copy, "w", encoding="utf-8") as handle:
            handle.write(rewrite_conditions(text, platform, relative))
        files.append(copy)
        paths[copy] = real
    return files + target["derived"], paths


def base_availability(swiftc, target, interfaces, interfaces_out, scratch):
    """The availability table of the toolchain's modules (cached per toolchain) and the interfaces."""
    cached = os.path.join(WORK, "toolchain-availability.json")
    stamp = f"{os.path.realpath(swiftc)} {os.path.getmtime(os.path.realpath(swiftc))} {target}"
    table = None
    if os.path.exists(cached):
        saved = json.load(open(cached))
        if saved.get("stamp") == stamp:
            table = {tuple(json.loads(k)): [{d: tuple(v) for d, v in e.items()} for e in entries]
                     for k, entries in saved["table"].items()}
    if table is None:
        table = symbol_availability(swiftc, TOOLCHAIN_MODULES, [], target, os.path.join(scratch, "graphs"))
        with open(cached, "w") as handle:
            json.dump({"stamp": stamp, "table": {json.dumps(list(k)): v for k, v in table.items()}}, handle)
    for key, entries in symbol_availability(swiftc, interfaces, [interfaces_out], target,
                                            os.path.join(scratch, "graphs")).items():
        table.setdefault(key, []).extend(entries)
    return table


def check(targets, platforms, wanted=None, overlay=None, quiet=False, scratch=None, availability=True):
    """Type-checks `wanted` (default: every module) for each platform; returns the failures."""
    overlay = overlay or {}
    scratch = scratch or os.path.join(WORK, "run")
    shutil.rmtree(scratch, ignore_errors=True)
    cache = os.path.join(WORK, "ModuleCache")
    interfaces_out = os.path.join(scratch, "interfaces")
    os.makedirs(interfaces_out)
    first_args = next(iter(targets.values()))["args"]
    swiftc, _ = compiler_args(first_args)
    target_triple = first_args[first_args.index("-target") + 1]
    interfaces = compile_interfaces(swiftc, interfaces_out, cache)
    if availability:
        deployment = deployment_targets()
        table = base_availability(swiftc, target_triple, interfaces, interfaces_out, scratch)
    failures = []
    previous = None  # the platform checked before (if it passed), whose identical modules are reused
    for platform in platforms:
        failed_before = len(failures)
        out = os.path.join(scratch, "modules", platform)
        os.makedirs(out)
        hashes = {}
        for name in dependency_order(targets, wanted):
            target = targets[name]
            files, paths = prepare_sources(target, platform, os.path.join(scratch, "src"), overlay)
            digest = hashlib.sha256()
            for f in files:
                digest.update(open(f, "rb").read())
            for dep in target["deps"]:
                digest.update(hashes.get(dep, "changed").encode())
            hashes[name] = digest.hexdigest()
            if previous and previous["hashes"].get(name) == hashes[name]:
                shutil.copy(os.path.join(previous["out"], name + ".swiftmodule"), out)
                if not quiet:
                    print(f"  {platform:5} {name}: same sources as {previous['platform']}, checked there")
                continue
            swiftc, flags = compiler_args(target["args"])
            command = ([swiftc, "-I", out, "-I", interfaces_out] + flags +
                       ["-wmo", "-emit-module", "-emit-module-path", os.path.join(out, name + ".swiftmodule"),
                        "-module-cache-path", cache] + files)
            started = time.monotonic()
            ok, output = run(command, paths)
            if not quiet:
                print(f"  {platform:5} {name}: {'ok' if ok else 'FAILED'} ({time.monotonic() - started:.1f} s)")
            if output.strip() and (not ok or not quiet):
                print(output.rstrip())
            if not ok:
                failures.append((platform, name, output))
                break  # later modules would fail on the missing module
            # Availability: for what the package ships (Sources/), which an app builds; the tests
            # are built only by the Apple workflow.
            if availability and target["folder"].startswith(os.path.join(ROOT, "Sources") + os.sep):
                # The first platform checked answers for both (the same code but for its `#if os`
                # branches); a later one for itself, in the modules whose code differs.
                domains = list(PLATFORMS) if platform == platforms[0] else [platform]
                if any("@available" in open(f, encoding="utf-8").read() for f in files):
                    for key, entries in symbol_availability(swiftc, [name], [out, interfaces_out], target_triple,
                                                            os.path.join(scratch, "graphs"), "private").items():
                        table.setdefault(key, []).extend(entries)
                dump_path = os.path.join(scratch, "ast.txt")
                with open(dump_path, "w") as dump_file:
                    subprocess.run([swiftc, "-I", out, "-I", interfaces_out] + flags +
                                   ["-dump-ast", "-enable-batch-mode", "-j1", "-module-cache-path", cache] + files,
                                   stdout=dump_file, stderr=subprocess.STDOUT)
                with open(dump_path, encoding="utf-8", errors="replace") as dump_file:
                    # In batch mode one file's dump ends on the line where the next one starts.
                    lines = (part for line in dump_file for part in line.replace(")(source_file ", ")\n(source_file ").split("\n"))
                    findings = availability_findings(lines, table, domains, deployment, paths)
                os.remove(dump_path)
                if findings:
                    text = "\n".join(
                        f"{location}: error: '{declaration.split('.(file).')[-1].replace(' extension', '')}' "
                        f"is only available in {domain} {'.'.join(map(str, needed[:2]))} or newer; the package "
                        f"supports {domain} {'.'.join(map(str, deployment[domain][:2]))} (add `if #available` or "
                        f"`@available`, or use an older API)"
                        for location, declaration, domain, needed in sorted(set(findings)))
                    print(text)
                    failures.append((platform, name, text))
        passed = len(failures) == failed_before
        previous = {"platform": platform, "out": out, "hashes": hashes} if passed else None
    return failures


# MARK: availability
#
# The compiler checks `@available(iOS …)` only when it compiles for iOS, so this check finds the
# uses of declarations that are newer than the package's minimum platforms itself: it reads the
# availability every declaration carries (the standard library, Foundation, Observation and the
# AppleInterfaces modules record their Apple availability even in a Linux build) from the
# compiler's symbol graphs, dumps each module's type-checked syntax tree (`-dump-ast`), and
# reports every reference to such a declaration that no enclosing `@available` or
# `if`/`guard #available` covers.
TOOLCHAIN_MODULES = ["Swift", "_Concurrency", "_StringProcessing", "Observation", "Synchronization", "Foundation",
                     "FoundationEssentials", "FoundationInternationalization", "Dispatch", "RegexBuilder"]


def version(text):
    parts = [int(p) for p in text.split(".") if p.isdigit()]
    return tuple((parts + [0, 0])[:3])


def deployment_targets():
    """The package's minimum Apple platforms, from Package.swift (`.iOS(.v16)` → iOS 16.0.0)."""
    text = open(os.path.join(ROOT, "Package.swift"), encoding="utf-8").read()
    found = {name: version(f"{major}.{minor or 0}")
             for name, major, minor in re.findall(r"\.(macOS|iOS)\(\s*\.v(\d+)(?:_(\d+))?", text)}
    if set(found) != {"iOS", "macOS"}:
        raise Failure("Package.swift's platforms do not name both iOS and macOS minimums")
    return found


def symbol_availability(swiftc, modules, search_paths, target, scratch, minimum_access="public"):
    """For each symbol path (e.g. ('String', 'init(validating:as:)')): one {domain: version} per
    declaration with that path, as its symbol graph records it."""
    extract = os.path.join(os.path.dirname(swiftc), "swift-symbolgraph-extract")
    table = {}
    os.makedirs(scratch, exist_ok=True)
    for module in modules:
        out = os.path.join(scratch, module)
        os.makedirs(out, exist_ok=True)
        command = [extract, "-module-name", module, "-target", target, "-output-dir", out,
                   "-minimum-access-level", minimum_access, "-skip-synthesized-members"]
        for path in search_paths:
            command += ["-I", path]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            continue  # a module this toolchain does not have
        for name in os.listdir(out):
            graph = json.load(open(os.path.join(out, name), encoding="utf-8"))
            for symbol in graph.get("symbols", []):
                domains = {}
                for entry in symbol.get("availability", []):
                    introduced = entry.get("introduced")
                    if entry.get("domain") in ("iOS", "macOS") and introduced:
                        domains[entry["domain"]] = (introduced.get("major", 0), introduced.get("minor", 0),
                                                    introduced.get("patch", 0))
                table.setdefault(tuple(symbol["pathComponents"]), []).append(domains)
    return table


def required_version(table, path, domain):
    """The version of `domain` that every declaration at `path` (and its enclosing types) needs."""
    needed = (0, 0, 0)
    for length in range(1, len(path) + 1):
        entries = table.get(tuple(path[:length]))
        if entries:
            needed = max(needed, min(e.get(domain, (0, 0, 0)) for e in entries))
    return needed


def split_path(text):
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "." and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def availability_findings(dump, table, domains, deployment, paths):
    """The references in an AST dump to declarations newer than `deployment` that no enclosing
    `@available` or `#available` covers: (location, declaration, domain, version)."""
    findings, stack = [], []
    for line in dump:
        stripped = line.lstrip(" ")
        if not stripped.startswith("("):
            continue
        depth = len(line) - len(stripped)
        while stack and stack[-1]["depth"] >= depth:
            closed = stack.pop()
            if closed["kind"] == "guard_stmt" and closed["specs"] and stack:
                for domain, value in closed["specs"].items():  # the rest of the block is covered
                    stack[-1]["context"][domain] = max(stack[-1]["context"].get(domain, (0, 0, 0)), value)
        kind = stripped[1:].split(" ", 1)[0].rstrip(")")
        entry = {"depth": depth, "kind": kind, "context": dict(stack[-1]["context"]) if stack else {},
                 "specs": {}, "covered_branch": False, "source": stack[-1]["source"] if stack else "?"}
        span = re.search(r" range=\[([^\]\s]+):(\d+):(\d+) ", stripped)
        if span and not span.group(1).startswith("@"):  # a real file, not a macro's expansion
            entry["source"] = f"{span.group(1)}:{span.group(2)}:{span.group(3)}"
        if kind in ("available_attr", "availability_spec") and stack:
            domain = re.search(r" domain=(\w+)", stripped)
            introduced = re.search(r" (?:introduced|version)=([\d.]+)", stripped)
            if domain and introduced and domain.group(1) in domains:
                value = version(introduced.group(1))
                if kind == "available_attr":  # an attribute of the declaration that encloses it
                    target = stack[-1]["context"]
                else:  # a condition of the if/guard/while that encloses it
                    owner = next((e for e in reversed(stack) if e["kind"] in ("if_stmt", "guard_stmt", "while_stmt")), None)
                    target = owner["specs"] if owner else {}
                target[domain.group(1)] = max(target.get(domain.group(1), (0, 0, 0)), value)
        elif kind == "brace_stmt" and stack and stack[-1]["kind"] in ("if_stmt", "while_stmt") \
                and not stack[-1]["covered_branch"]:
            stack[-1]["covered_branch"] = True  # the branch taken when the #available holds
            for domain, value in stack[-1]["specs"].items():
                entry["context"][domain] = max(entry["context"].get(domain, (0, 0, 0)), value)
        reference = re.search(r' decl="([^"]+)"', stripped)
        if reference:
            declaration = reference.group(1).split(" [with ")[0]
            # `for await` calls `next(isolation:)` where the platform has it and `next()` elsewhere
            # (the compiler decides by the target's availability), so its implicit call is no use.
            implicit_next = " implicit " in stripped and declaration.endswith("next(isolation:)")
            if ".(file)." in declaration and "@" not in declaration and not implicit_next:
                path = split_path(declaration.split(".(file).", 1)[1].replace(" extension", ""))
                for domain in domains:
                    needed = required_version(table, path, domain)
                    if needed > deployment[domain] and entry["context"].get(domain, (0, 0, 0)) < needed:
                        where = re.search(r" location=(\S+)", stripped)
                        location = where.group(1) if where else entry["source"]
                        if location.startswith("@"):  # code a macro wrote: name where the macro is used
                            location = entry["source"] + " (in a macro's expansion)"
                        for copy, real in paths.items():
                            location = location.replace(copy, real)
                        findings.append((location, declaration, domain, needed))
        stack.append(entry)
    return findings


# Deliberate errors in Apple-only code, each of which the check must reject (with a diagnostic
# containing the given text). `--self-test` runs them.
MUTATIONS = [
    ("a wrong argument label on a Keychain call",
     "Sources/CofferSecureStorage/KeychainSecureStorage.swift", "iOS",
     "let status = SecItemCopyMatching(q as CFDictionary, &result)\n        if status == errSecItemNotFound { return nil }",
     "let status = SecItemCopyMatching(q as CFDictionary, result: &result)\n        if status == errSecItemNotFound { return nil }",
     "argument label"),
    ("a missing `try` in the Keychain store",
     "Sources/CofferSecureStorage/KeychainSecureStorage.swift", "iOS",
     "    public func deleteBlocking(_ name: String) throws(SecureStorageError) {\n        try validateName(name)",
     "    public func deleteBlocking(_ name: String) throws(SecureStorageError) {\n        validateName(name)",
     "not marked with 'try'"),
    ("an optional result used as non-optional (SecCopyErrorMessageString)",
     "Sources/CofferSecureStorage/KeychainSecureStorage.swift", "iOS",
     "(SecCopyErrorMessageString(status, nil) as String?) ?? \"OSStatus \\(status)\"",
     "SecCopyErrorMessageString(status, nil) as String",
     "is not convertible to 'String'"),
    ("a misspelt Keychain key in the macOS-only branch",
     "Sources/CofferSecureStorage/KeychainSecureStorage.swift", "macOS",
     "query[kSecUseDataProtectionKeychain as String] = true",
     "query[kSecUseDataProtectionKeyChain as String] = true",
     "cannot find 'kSecUseDataProtectionKeyChain'"),
    ("a Darwin lock call given the wrong argument",
     "Sources/CofferSync/Locked.swift", "iOS",
     "guard os_unfair_lock_trylock(mutex) else { return nil }",
     "guard os_unfair_lock_trylock(mutex.pointee) else { return nil }",
     "cannot convert value of type 'os_unfair_lock'"),
    ("a wrong label on SwiftUI's State initializer",
     "Sources/CofferSettings/SettingProperty.swift", "iOS",
     "_model = State(wrappedValue: ObservedSetting(key, in: settings))",
     "_model = State(value: ObservedSetting(key, in: settings))",
     "no exact matches in call to initializer"),
    ("the @Setting wrapper taken off the main actor (Swift 6 concurrency checking)",
     "Sources/CofferSettings/SettingProperty.swift", "macOS",
     "@MainActor\n@propertyWrapper\npublic struct Setting",
     "@propertyWrapper\npublic struct Setting",
     "main actor-isolated"),
    ("the @CofferQuery wrapper's update() left main-actor isolated (DynamicProperty's requirement is nonisolated)",
     "Sources/CofferDatabase/QueryProperty.swift", "iOS",
     "nonisolated public mutating func update() {\n        MainActor.assumeIsolated { model.attach(context) }",
     "public mutating func update() {\n        model.attach(context)",
     "update()"),
    ("a standard-library API newer than the minimum platforms (String(validating:as:), iOS 18)",
     "Sources/CofferDeniable/VaultContents.swift", "iOS",
     "return String(validUTF8: raw)",
     "return String(validating: raw, as: UTF8.self)",
     "is only available in iOS 18.0 or newer"),
    ("an @Observable model without its @available(iOS 17) (Observation's minimum)",
     "Sources/CofferSettings/ObservedSetting.swift", "iOS",
     "@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)\n@MainActor\n@Observable",
     "@MainActor\n@Observable",
     "is only available in iOS 17.0 or newer"),
]


def self_test(targets):
    print("Self-test: each deliberate error in Apple-only code must fail the check.")
    failed = 0
    for index, (what, path, platform, old, new, expected) in enumerate(MUTATIONS):
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        if text.count(old) != 1:
            print(f"  FAIL {what}: the text to change is not (exactly once) in {path}; update MUTATIONS")
            failed += 1
            continue
        target = next(t["name"] for t in targets.values() if os.path.join(ROOT, path).startswith(t["folder"] + os.sep))
        failures = check(targets, [platform], wanted=[target], overlay={path: text.replace(old, new)}, quiet=True,
                         scratch=os.path.join(WORK, f"self-test-{index}"))
        shutil.rmtree(os.path.join(WORK, f"self-test-{index}"), ignore_errors=True)
        caught = [f for f in failures if f[1] == target and expected in f[2] and path in f[2]]
        if caught:
            print(f"  ok   {what} ({platform}): rejected")
        else:
            print(f"  FAIL {what} ({platform}): not rejected as expected")
            for failure in failures:
                print(failure[2])
            failed += 1
    return failed


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--self-test", action="store_true",
                        help="check that deliberate errors in Apple-only code fail the check")
    parser.add_argument("--platform", choices=sorted(PLATFORMS), action="append",
                        help="check only this platform (default: iOS and macOS)")
    parser.add_argument("--no-availability", action="store_true",
                        help="skip the availability check (uses of APIs newer than the minimum platforms)")
    parser.add_argument("--no-tests", action="store_true",
                        help="check Sources/ only (by default Tests/ too, which needs `swift build --build-tests`)")
    options = parser.parse_args()
    started = time.monotonic()
    try:
        targets = load_targets(["Sources"] + ([] if options.no_tests else ["Tests"]))
        if options.self_test:
            failed = self_test(targets)
            print(f"Self-test: {len(MUTATIONS) - failed} of {len(MUTATIONS)} errors caught "
                  f"({time.monotonic() - started:.0f} s).")
            return 1 if failed else 0
        platforms = options.platform or ["iOS", "macOS"]
        print(f"Type-checking {len(targets)} modules for {' and '.join(platforms)} against AppleInterfaces/:")
        failures = check(targets, platforms, availability=not options.no_availability)
    except Failure as failure:
        print(f"typecheck-apple: {failure}", file=sys.stderr)
        return 2
    if failures:
        print(f"typecheck-apple: FAILED ({', '.join(f'{p} {n}' for p, n, _ in failures)}): the Apple-only code "
              "above does not compile against the documented API (docs/apple-platforms.md).", file=sys.stderr)
        return 1
    print(f"typecheck-apple: every module type-checks for {' and '.join(platforms)} "
          f"({time.monotonic() - started:.0f} s).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
