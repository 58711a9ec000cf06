#!/usr/bin/env bash
# App start beside Aries Askar's open, in one run: `coffer bench launch` (every part at empty and
# realistic sizes, and the wallet's raw-key open at 1,000 and 100,000 records) and Askar's raw-key
# Store.open at the same two sizes (Benchmarks/askar_open.py, aries-askar from PyPI in a venv).
# The two alternate COMPARE_RUNS times (default 3); each number is the median of its runs.
# Usage: Benchmarks/compare-launch.sh
#   ASKAR_VENV  venv to use or create (default: .build-askar-venv in the repo, git-ignored)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${ASKAR_VENV:-$root/.build-askar-venv}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# shellcheck source=setup.sh
. "$root/Benchmarks/setup.sh"

runs="${COMPARE_RUNS:-3}"
for i in $(seq 1 "$runs"); do
    echo "run $i of $runs: Askar open ..." >&2
    "$venv/bin/python" "$root/Benchmarks/askar_open.py" --dir "$out/askar-$i" > "$out/askar-$i.json"
    rm -rf "$out/askar-$i"
    echo "run $i of $runs: coffer bench launch ..." >&2
    "$root/.build/release/coffer" bench launch --json > "$out/coffer-$i.json"
done

python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
askar = [json.load(open(f"{out}/askar-{i}.json")) for i in range(1, runs + 1)]
coffer = [json.load(open(f"{out}/coffer-{i}.json")) for i in range(1, runs + 1)]
med = lambda xs: statistics.median(xs)
sizes = coffer[0]["realistic_sizes"]
print(f"median of {runs} runs (each itself a median of {sizes['repeats']} opens), seconds")
print(f"realistic: {sizes['wallet_records']} wallet records, {sizes['assets']} assets, "
      f"{sizes['thumbnails']} thumbnails of {sizes['thumbnail_bytes']} bytes, a used vault")
print(f"{'part':30} {'empty':>10} {'realistic':>10} {'ratio':>7}")
for part in coffer[0]["empty_s_median"]:
    e = med([float(c["empty_s_median"][part]) for c in coffer])
    r = med([float(c["realistic_s_median"][part]) for c in coffer])
    ratio = f"{r / e:6.2f}x" if e else "      -"
    print(f"{part:30} {e:10.5f} {r:10.5f} {ratio}")
sc = [c["wallet_open_scaling"] for c in coffer]
cs, cl = med([float(s["raw_open_s_median_small"]) for s in sc]), med([float(s["raw_open_s_median_large"]) for s in sc])
a_s, a_l = med([a["raw_open_s_median_small"] for a in askar]), med([a["raw_open_s_median_large"] for a in askar])
ns, nl = sc[0]["records_small"], sc[0]["records_large"]
print(f"raw-key open at {ns} / {nl} records: coffer {cs:.5f} / {cl:.5f} s ({cl / cs:.2f}x), "
      f"askar {a_s:.5f} / {a_l:.5f} s ({a_l / a_s:.2f}x); coffer at {nl} is {a_l / cl:.2f}x askar's speed")
PY
