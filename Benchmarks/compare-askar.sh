#!/usr/bin/env bash
# Runs Aries Askar (PyPI aries-askar in a venv) and Coffer on the same workload and N in one run,
# then prints a ratio per metric. Usage: Benchmarks/compare-askar.sh [N] [--json]
#                                       Benchmarks/compare-askar.sh --postgres [N] [--json]
#   --postgres    both on PostgreSQL: a private cluster (initdb in a temporary folder, a free
#                 loopback port; see postgres.sh) runs Askar's PostgreSQL backend and Coffer's
#                 (coffer bench wallet --wallet-url), then the concurrent workload (16 tasks on 16
#                 profiles, 4 fetches to 1 replace) on both; the cluster is stopped at the end.
#                 A coffer built without the PostgreSQL trait cannot run its side: the script says
#                 so and prints Askar's numbers alone. COMPARE_PROFILES / COMPARE_OPS set the
#                 concurrent workload's tasks (16) and operations per task (500).
#   COMPARE_RUNS  paired runs (odd runs Askar first, even runs Coffer first; each on fresh files; default 3). Each side's
#                 number is the median of its runs and the ratio is taken between medians; the
#                 range of the per-run ratios is printed beside it. This machine's numbers move
#                 20-40% between runs, so one run alone says little.
#   ASKAR_BENCH   path of askar_bench.py (default: Benchmarks/askar_bench.py)
#   ASKAR_VENV    venv to use or create (default: .build-askar-venv in the repo, git-ignored)
#   ASKAR_PAGED_CAP  rows Askar's offset/limit walk covers (default: all when N <= 20000, else 10000).
#                 Askar pages with OFFSET, so a full walk is quadratic (over 40 minutes at N=100,000);
#                 a capped walk covers its first, cheapest pages, which flatters Askar, not Coffer.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${1:-}" = "--postgres" ]; then
    shift
    exec "$root/Benchmarks/compare-askar-postgres.sh" "$@"
fi
n="${1:-10000}"
bench="${ASKAR_BENCH:-$root/Benchmarks/askar_bench.py}"
venv="${ASKAR_VENV:-$root/.build-askar-venv}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

if [ ! -f "$bench" ]; then
    echo "error: askar_bench.py not found at $bench (set ASKAR_BENCH)" >&2
    exit 2
fi
# shellcheck source=setup.sh
. "$root/Benchmarks/setup.sh"

cap="${ASKAR_PAGED_CAP:-}"
if [ -z "$cap" ] && [ "$n" -gt 20000 ]; then cap=10000; fi
if [ -n "$cap" ]; then
    echo "note: Askar's offset/limit walk is capped at its first $cap rows" >&2
    sed -e "s/for off in range(0, n, 100):/for off in range(0, min(n, $cap), 100):/" \
        -e "s|\"pages\": (n + 99) // 100|\"pages\": (min(n, $cap) + 99) // 100|" \
        -e "s|\"pages_per_sec\": round(((n + 99) // 100) / el, 1)|\"pages_per_sec\": round(((min(n, $cap) + 99) // 100) / el, 1)|" \
        "$bench" > "$out/askar_bench_capped.py"
    bench="$out/askar_bench_capped.py"
fi
runs="${COMPARE_RUNS:-3}"
for i in $(seq 1 "$runs"); do
    echo "run $i of $runs: Askar, N=$n ..." >&2
    rm -rf "$out/askar" "$out/coffer"
    "$venv/bin/python" "$bench" --n "$n" --fetch-cap 10000 --dir "$out/askar" > "$out/askar-$i.json"
    echo "run $i of $runs: Coffer, N=$n ..." >&2
    "$root/.build/release/coffer" bench wallet --n "$n" --txn-cap "$n" --json --dir "$out/coffer" > "$out/coffer-$i.json"
done

python3 - "$out" "$runs" "${2:-}" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
askars = [json.load(open(f"{out}/askar-{i}.json"))["results"] for i in range(1, runs + 1)]
fulls = [json.load(open(f"{out}/coffer-{i}.json")) for i in range(1, runs + 1)]
coffers = [f["results"] for f in fulls]
plains = [f.get("baseline_plain_sqlite", {}).get("results", {}) for f in fulls]
full = fulls[0]
pairs = {"paged_scan_offset_limit_100": "paged_scan_handle_100"}

def rate(entry, prefer=None):
    if not isinstance(entry, dict):
        return None, None
    for key in ((prefer,) if prefer else ()) + ("rows_per_sec", "pages_per_sec", "ops_per_sec"):
        if entry.get(key) is not None:
            return key, entry[key]
    return None, None

def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

rows = []
askar = askars[0]
for name, a in askar.items():
    if name.startswith("baseline_") or name in ("db_layout", "open", "db_bytes_after_insert", "db_bytes_after_remove_all"):
        continue
    c_name = pairs.get(name, name)
    if coffers[0].get(c_name) is None:
        continue
    if name == "db_bytes_per_record":
        av = median([r.get(name) for r in askars])
        cv = median([r.get(c_name) for r in coffers])
        pv = median([r.get(c_name) for r in plains])
        rows.append((name, "bytes", av, cv, av / cv if cv else None, pv, None, None))
        continue
    unit, _ = rate(a)
    per_run = []
    for ar, cr, pr in zip(askars, coffers, plains):
        _, av = rate(ar.get(name), unit)
        _, cv = rate(cr.get(c_name), unit)
        _, pv = rate(pr.get(c_name), unit)
        per_run.append((av, cv, pv))
    av, cv, pv = (median([r[k] for r in per_run]) for k in range(3))
    if av is None or cv is None:
        continue
    ratios = [c / a for a, c, _ in per_run if a and c]
    rows.append((name, unit, av, cv, cv / av if av else None, pv, cv / pv if pv else None,
                 (min(ratios), max(ratios)) if ratios else None))

if sys.argv[3] == "--json":
    print(json.dumps({"runs": runs, "metrics": {r[0]: {
        "unit": r[1], "askar": r[2], "coffer": r[3], "coffer_vs_askar": r[4], "plain_sqlite": r[5], "coffer_vs_plain": r[6],
        "coffer_vs_askar_per_run": None if r[7] is None else {"min": r[7][0], "max": r[7][1]}} for r in rows}}, indent=1))
    sys.exit(0)
fmt = "{:<36} {:>14} {:>14} {:>10} {:>12} {:>14} {:>10}"
print("medians of %d paired runs" % runs)
print(fmt.format("metric (N=%s)" % full["params"]["n"], "askar", "coffer", "x askar", "runs' range", "plain sqlite", "x plain"))
for name, unit, av, cv, ratio, pv, pratio, spread in rows:
    f = lambda v: "-" if v is None else ("%.0f" % v if v >= 100 else "%.2f" % v)
    rng = "-" if spread is None else "%.1f-%.1f" % spread
    print(fmt.format(name, f(av), f(cv), "-" if ratio is None else "%.1f" % ratio, rng, f(pv), "-" if pratio is None else "%.2f" % pratio))
coffer = coffers[0]
ao, co = askar.get("open", {}), coffer.get("open", {})
print()
print("open: askar argon2i mod %.3f s / int %.3f s; coffer argon2id moderate %.3f s / interactive %.3f s; raw %.4f s vs %.4f s" % (
    ao.get("argon2i_mod_open_s_median", 0), ao.get("argon2i_int_open_s_median", 0),
    co.get("argon2id_moderate_open_s_median", 0), co.get("argon2id_interactive_open_s_median", 0),
    ao.get("raw_open_s_median", 0), co.get("raw_open_s_median", 0)))
print("open times from run 1; db bytes per record: askar %s, coffer %s (x askar = askar/coffer)" % (
    median([r.get("db_bytes_per_record") for r in askars]), median([r.get("db_bytes_per_record") for r in coffers])))
PY
