#!/usr/bin/env bash
# Interop with real clients from PyPI: Aries Askar's Key API (Ed25519) and PyNaCl (sealed boxes).
# Usage: Tests/Interop/run.sh PATH/TO/coffer
# The venv and its skip rule: see venv.sh.
set -u
coffer="${1:?usage: run.sh PATH/TO/coffer}"
source "$(cd "$(dirname "$0")" && pwd)/venv.sh"
exec "$venv/bin/python" "$here/interop.py" "$coffer"
