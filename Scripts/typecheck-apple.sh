#!/usr/bin/env bash
# Type-checks the package's Apple-only code (the `#if os(iOS)`, `#if os(macOS)`,
# `#if canImport(Darwin)`, … branches) on Linux, against the interface modules in
# AppleInterfaces/, which transcribe the Apple APIs Coffer uses from Apple's documentation.
# Nothing is linked or run: it catches what a compiler would (names, labels, types, optionality,
# `try`, concurrency checking) and uses of APIs newer than the package's minimum platforms, not
# what the SDK does at run time. See docs/apple-platforms.md.
#
#   Scripts/typecheck-apple.sh               iOS and macOS, every module of Sources/
#   Scripts/typecheck-apple.sh --platform iOS
#   Scripts/typecheck-apple.sh --self-test   deliberate errors in Apple-only code must fail it
#   Scripts/typecheck-apple.sh --no-tests --no-availability   quicker: Sources/ only, no availability
#
# It reuses the modules of the last `swift build` (.build/debug.yaml), so run that first.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v python3 >/dev/null 2>&1; then
    echo "typecheck-apple: python3 is needed (apt-get install python3)" >&2
    exit 2
fi
exec python3 Scripts/typecheck-apple.py "$@"
