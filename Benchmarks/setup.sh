# Sourced by the compare scripts: Aries Askar from PyPI in a venv, and a release build of coffer.
# Needs $root (the repository) and $venv (the venv's folder) set by the caller.

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import aries_askar' 2>/dev/null; then
    echo "setting up $venv with aries-askar from PyPI ..." >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet aries-askar
fi

# COFFER_SKIP_BUILD=1: use the release coffer already built (e.g. built under a shared build lock).
if [ -z "${COFFER_SKIP_BUILD:-}" ]; then
    echo "building coffer (release) ..." >&2
    (cd "$root" && swift build -c release --product coffer >&2)
fi
