#!/usr/bin/env bash
# Builds the DocC documentation of every catalog (the Coffer umbrella, CofferWallet,
# CofferDeniable, CofferDatabase) with swift-docc-plugin, and fails on any warning.
# Output: .build/docs/<Target>/ (a DocC archive per target). Usage: Scripts/docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=".build/docs"
mkdir -p "$out"
status=0
for target in Coffer CofferWallet CofferDeniable CofferDatabase; do
    log="$(mktemp)"
    echo "== $target" >&2
    if ! swift package --allow-writing-to-directory "$out" generate-documentation \
        --target "$target" --output-path "$out/$target" --warnings-as-errors >"$log" 2>&1; then
        cat "$log" >&2
        echo "error: the documentation of $target did not build (warnings count as errors)" >&2
        status=1
    elif grep -q "warning:" "$log"; then
        grep "warning:" "$log" >&2
        echo "error: the documentation of $target has warnings" >&2
        status=1
    fi
    rm -f "$log"
done
exit "$status"
