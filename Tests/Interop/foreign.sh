#!/usr/bin/env bash
# Source stores for the import tests (see foreign_stores.py): Askar stores made by the real Askar,
# libindy wallets from the format. Usage: Tests/Interop/foreign.sh askar OUTDIR | indy OUTDIR NAME KDF N
# The venv and its skip rule: see venv.sh.
set -u
source "$(cd "$(dirname "$0")" && pwd)/venv.sh"
exec "$venv/bin/python" "$here/foreign_stores.py" "$@"
