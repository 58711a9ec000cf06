#!/usr/bin/env bash
# Type-checks every ```swift block of README.md, docs/*.md and the DocC catalogs against the
# modules of the last `swift build --build-tests`, each block in an async context on the main
# actor (Scripts/check-snippets.py says how, and how a fragment is marked).
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 Scripts/check-snippets.py "$@"
