#!/usr/bin/env bash
# compare-askar.sh --postgres [N] [--json]: Askar 0.5.0's PostgreSQL backend and Coffer's on one
# private local PostgreSQL cluster, the same workload and N, then the concurrent workload (16 tasks
# on 16 profiles) on both. Environment: COMPARE_RUNS (default 3; medians), COMPARE_PROFILES (16),
# COMPARE_OPS (500 per task), ASKAR_BENCH, ASKAR_VENV, POSTGRES_BIN (see postgres.sh).
# COFFER_POOL: the pool Coffer's concurrent workload runs on (default: twice this machine's cores,
# the size docs/server.md recommends). Askar gets one connection per task (at least 10): each of
# its sessions holds a pool connection from entry to exit, so with fewer, tasks would run in turn
# instead of together. Coffer's calls lease a connection per statement, so its 16 tasks run
# together on any pool, queueing for a connection inside the timed call. Coffer's concurrent
# workload also runs on Askar's pool size, reported as concurrent_profiles_mixed_same_pool.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-2000}"
bench="${ASKAR_BENCH:-$root/Benchmarks/askar_bench.py}"
venv="${ASKAR_VENV:-$root/.build-askar-venv}"
runs="${COMPARE_RUNS:-3}"
profiles="${COMPARE_PROFILES:-16}"
ops="${COMPARE_OPS:-500}"
out="$(mktemp -d)"
# shellcheck source=postgres.sh
. "$root/Benchmarks/postgres.sh"
trap 'postgres_stop; rm -rf "$out"' EXIT

# shellcheck source=setup.sh
. "$root/Benchmarks/setup.sh"
version="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("aries-askar"))')"
if [ "$version" != "0.5.0" ]; then
    echo "note: the venv has aries-askar $version; the published comparison used 0.5.0 (pip install aries-askar==0.5.0)" >&2
fi
postgres_start
coffer="$root/.build/release/coffer"
# The pool askar_bench.py gives Askar: as many connections as concurrent tasks, at least 10.
pool=$(( profiles > 10 ? profiles : 10 ))
coffer_pool="${COFFER_POOL:-$(( $(nproc) * 2 ))}"

# Whether this coffer has the backend: a build without it refuses a postgres:// URL with exit 2
# before doing anything (nobody needs to listen at the URL for that answer).
coffer_side=1
if ! probe="$("$coffer" bench wallet --n 10 --json --wallet-url "postgres://probe@127.0.0.1:1/probe" 2>&1 >/dev/null)" \
    && printf '%s' "$probe" | grep -q "built without the PostgreSQL trait"; then
    coffer_side=0
    echo "note: $coffer was built without the PostgreSQL trait (swift build -c release --traits PostgreSQL --product coffer);" \
        "printing Askar's numbers alone" >&2
fi

run_askar() {
    echo "run $1 of $runs: Askar on PostgreSQL, N=$n ..." >&2
    echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    "$venv/bin/python" "$bench" --n "$n" --fetch-cap 10000 --dir "$out/askar" --postgres-url "$POSTGRES_URL_BASE" \
        --concurrent-profiles "$profiles" --concurrent-ops "$ops" > "$out/askar-$1.json"
    cut -d' ' -f1-3 /proc/loadavg > "$out/load-askar-$1"
}
run_coffer() {
    [ "$coffer_side" = 1 ] || return 0
    echo "run $1 of $runs: Coffer on PostgreSQL, N=$n ..." >&2
    echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    postgres_create_database "coffer_bench_$1"
    "$coffer" bench wallet --n "$n" --txn-cap "$n" --json --skip-baseline --dir "$out/coffer" \
        --wallet-url "$POSTGRES_URL_BASE/coffer_bench_$1?max_connections=$pool" > "$out/coffer-$1.json"
    # The concurrent workload on a database of its own, in a process of its own, as askar_bench.py
    # gives Askar's a store of its own (recreated): neither side's concurrent phase meets the dead
    # rows, autovacuum or warm pool the single-task workload left behind.
    # min_connections = the pool's size: its pool opens its connections before the clock starts
    # (and readies them, as opening a wallet does with min_connections); coffer then
    # holds them all at once, each after checking a profile on it, as each of askar_bench.py's
    # tasks enters its session (which takes a pool connection and checks the profile on it) before
    # it times an operation (docs/benchmarks.md).
    postgres_create_database "coffer_concurrent_$1"
    "$coffer" bench wallet --n "$n" --json --skip-baseline --dir "$out/coffer" --only-concurrent \
        --wallet-url "$POSTGRES_URL_BASE/coffer_concurrent_$1?max_connections=$coffer_pool&min_connections=$coffer_pool" \
        --concurrent-profiles "$profiles" --concurrent-ops "$ops" > "$out/coffer-concurrent-$1.json"
    postgres_create_database "coffer_same_pool_$1"
    "$coffer" bench wallet --n "$n" --json --skip-baseline --dir "$out/coffer" --only-concurrent \
        --wallet-url "$POSTGRES_URL_BASE/coffer_same_pool_$1?max_connections=$pool&min_connections=$pool" \
        --concurrent-profiles "$profiles" --concurrent-ops "$ops" > "$out/coffer-same-pool-$1.json"
    python3 - "$out/coffer-$1.json" "$out/coffer-concurrent-$1.json" "$out/coffer-same-pool-$1.json" "$coffer_pool" "$pool" <<'MERGE'
import json, sys
whole, concurrent, same = (json.load(open(path)) for path in sys.argv[1:4])
whole["results"]["concurrent_profiles_mixed"] = dict(concurrent["results"]["concurrent_profiles_mixed"], pool=int(sys.argv[4]))
whole["results"]["concurrent_profiles_mixed_same_pool"] = dict(same["results"]["concurrent_profiles_mixed"], pool=int(sys.argv[5]))
json.dump(whole, open(sys.argv[1], "w"))
MERGE
    cut -d' ' -f1-3 /proc/loadavg > "$out/load-coffer-$1"
}
# The order alternates (odd runs Askar first, even runs Coffer first), so neither side always
# meets the server warm, or the autovacuum and checkpoints the other side's writes start.
for i in $(seq 1 "$runs"); do
    if [ $((i % 2)) = 1 ]; then
        run_askar "$i"
        run_coffer "$i"
    else
        run_coffer "$i"
        run_askar "$i"
    fi
done

python3 - "$out" "$runs" "$coffer_side" "${2:-}" <<'PY'
import json, os, statistics, sys
out, runs, coffer_side, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
askars = [json.load(open(f"{out}/askar-{i}.json")) for i in range(1, runs + 1)]
coffers = [json.load(open(f"{out}/coffer-{i}.json")) for i in range(1, runs + 1)] if coffer_side else []
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
per_run = []  # (name, [(askar, coffer, ratio) per run])
def ratio(av, cv, latency):
    if not av or not cv:
        return None
    return av / cv if latency else cv / av
for name, a in askars[0]["results"].items():
    if name.startswith("baseline_") or name == "open" or not isinstance(a, dict):
        continue
    unit, _ = rate(a)
    avs = [rate(r["results"].get(name), unit)[1] for r in askars]
    cvs = [rate(r["results"].get(pairs.get(name, name)), unit)[1] for r in coffers] if coffers else []
    av, cv = median(avs), median(cvs) if coffers else None
    rows.append((name, unit, av, cv, ratio(av, cv, False)))
    per_run.append((name, [(x, y, ratio(x, y, False)) for x, y in zip(avs, cvs)]))
    if name == "concurrent_profiles_mixed":
        # Coffer's run on its own pool, then on Askar's pool size: both against Askar's one run.
        for cname in (name, name + "_same_pool") if coffers else (name,):
            if cname != name:
                cvs = [rate(r["results"].get(cname), unit)[1] for r in coffers]
                cv = median(cvs)
                rows.append((cname, unit, av, cv, ratio(av, cv, False)))
                per_run.append((cname, [(x, y, ratio(x, y, False)) for x, y in zip(avs, cvs)]))
            for extra in ("p50_us", "p99_us", "read_p99_us", "write_p99_us"):
                eavs = [r["results"][name].get(extra) for r in askars]
                ecvs = [r["results"].get(cname, {}).get(extra) for r in coffers] if coffers else []
                eav, ecv = median(eavs), median(ecvs) if coffers else None
                rows.append((cname + "." + extra, "us", eav, ecv, ratio(eav, ecv, True)))
                per_run.append((cname + "." + extra, [(x, y, ratio(x, y, True)) for x, y in zip(eavs, ecvs)]))
loads = []
for i in range(1, runs + 1):
    loads.append(tuple(open(f"{out}/load-{side}-{i}").read().strip() if os.path.exists(f"{out}/load-{side}-{i}") else "-"
                       for side in ("askar", "coffer")))

if mode == "--json":
    print(json.dumps({"backend": "postgres", "runs": runs, "n": askars[0]["params"]["n"],
                      "askar_version": askars[0].get("askar_version"), "coffer_ran": coffer_side,
                      "metrics": {r[0]: {"unit": r[1], "askar": r[2], "coffer": r[3], "coffer_vs_askar": r[4]} for r in rows},
                      "per_run": {name: [{"askar": a, "coffer": c, "coffer_vs_askar": x} for a, c, x in v] for name, v in per_run},
                      "load_after": [{"askar": a, "coffer": c} for a, c in loads]},
                     indent=1))
    sys.exit(0)
print("PostgreSQL, medians of %d runs, N=%s, askar %s%s" % (runs, askars[0]["params"]["n"], askars[0].get("askar_version"),
      "" if coffer_side else " (coffer: not built with the PostgreSQL trait)"))
fmt = "{:<44} {:>10} {:>14} {:>14} {:>9}"
print(fmt.format("metric", "unit", "askar", "coffer", "x askar"))
f = lambda v: "-" if v is None else ("%.0f" % v if v >= 100 else "%.2f" % v)
for name, unit, av, cv, ratio in rows:
    print(fmt.format(name, unit, f(av), f(cv), "-" if ratio is None else "%.1f" % ratio))
print("(latency rows: x askar = askar/coffer, above 1 means coffer is faster)")
if coffers:
    print()
    print("per run (odd runs Askar first, even runs Coffer first): askar / coffer / x askar")
    print("{:<44}".format("metric") + "".join("{:>30}".format("run %d" % (i + 1)) for i in range(runs)))
    for name, values in per_run:
        print("{:<44}".format(name) + "".join("{:>30}".format("%s / %s / %s" % (f(a), f(c), "-" if x is None else "%.2f" % x))
                                             for a, c, x in values))
    print("load average (1, 5, 15 min) after each side:")
    for i, (a, c) in enumerate(loads):
        print("  run %d: askar %s; coffer %s" % (i + 1, a, c))
PY
