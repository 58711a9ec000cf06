# Sourced by the interop scripts: makes sure "$venv" (COFFER_INTEROP_VENV, default
# .build/interop-venv) has aries-askar and PyNaCl from PyPI. When the package index cannot be
# reached it prints "SKIP: …" and exits 0: a skip, not a failure. Anything else that goes wrong (no
# venv, an install that fails while the index answers) exits non-zero, and the test fails.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${COFFER_INTEROP_VENV:-$root/.build/interop-venv}"
# The venv's folder may not exist yet (a build with another --scratch-path makes no .build).
mkdir -p "$(dirname "$venv")"
# One setup at a time: tests run in parallel may both need the venv.
exec 9>"$venv.lock"
flock 9
if ! "$venv/bin/python" -c 'import aries_askar, nacl' 2>/dev/null; then
    if ! python3 -m venv "$venv" >"$venv.venv.log" 2>&1; then
        echo "FAIL: python3 cannot make a venv at $venv (install python3-venv):"
        cat "$venv.venv.log"
        exit 1
    fi
    if ! timeout 600 "$venv/bin/pip" install --quiet --disable-pip-version-check aries-askar pynacl >"$venv.pip.log" 2>&1; then
        # A skip only when the index itself does not answer: fetch one small known package.
        probe="$(mktemp -d)"
        if ! timeout 120 "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --dest "$probe" pip >/dev/null 2>&1; then
            rm -rf "$probe"
            echo "SKIP: the package index is unreachable: aries-askar and PyNaCl could not be installed (see $venv.pip.log)"
            exit 0
        fi
        rm -rf "$probe"
        echo "FAIL: the package index answers, but installing aries-askar and PyNaCl failed:"
        tail -20 "$venv.pip.log"
        exit 1
    fi
fi
flock -u 9
