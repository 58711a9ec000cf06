#!/usr/bin/env bash
# Interop with real clients from PyPI: Aries Askar's Key API (Ed25519) and PyNaCl (sealed boxes).
# Usage: Tests/Interop/run.sh PATH/TO/coffer
# Makes a venv (COFFER_INTEROP_VENV, default .build/interop-venv) with aries-askar and pynacl.
# When PyPI cannot be reached it prints "SKIP: …" and exits 0: a skip, not a failure.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
coffer="${1:?usage: run.sh PATH/TO/coffer}"
venv="${COFFER_INTEROP_VENV:-$root/.build/interop-venv}"
if ! "$venv/bin/python" -c 'import aries_askar, nacl' 2>/dev/null; then
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        echo "SKIP: python3 cannot make a venv at $venv"
        exit 0
    fi
    if ! timeout 600 "$venv/bin/pip" install --quiet --disable-pip-version-check aries-askar pynacl >"$venv.pip.log" 2>&1; then
        echo "SKIP: PyPI unreachable: aries-askar and PyNaCl could not be installed (see $venv.pip.log)"
        exit 0
    fi
fi
exec "$venv/bin/python" "$here/interop.py" "$coffer"
