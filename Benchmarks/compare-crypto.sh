#!/usr/bin/env bash
# Runs the crypto calls of `coffer bench sdk` and the same libsodium calls from a small C program
# in one run, and prints C rate / Coffer rate per operation (target: at most 1.5).
# Usage: Benchmarks/compare-crypto.sh [CALLS] [MESSAGE_BYTES]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
calls="${1:-20000}"
bytes="${2:-100}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cc -O2 -o "$out/crypto_bench" "$root/Benchmarks/crypto_bench.c" $(pkg-config --cflags --libs libsodium)
echo "building coffer (release) ..." >&2
(cd "$root" && swift build -c release --product coffer >&2)
"$out/crypto_bench" "$calls" "$bytes" > "$out/c.json"
"$root/.build/release/coffer" bench sdk --calls "$calls" --message-bytes "$bytes" --json > "$out/coffer.json"
python3 - "$out/c.json" "$out/coffer.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
coffer = json.load(open(sys.argv[2]))["results"]
print(f"{'operation':<18}{'C libsodium/s':>16}{'Coffer/s':>14}{'C / Coffer':>12}")
for k in ("sign_per_sec", "verify_per_sec", "seal_per_sec", "open_per_sec"):
    print(f"{k:<18}{c[k]:>16.0f}{coffer[k]:>14.0f}{c[k] / coffer[k]:>12.2f}")
print(f"state machine round trips/s: {coffer['state_machine_round_trips_per_sec']:.0f} over {coffer['machines']} machines")
for op, c_key, w_key in (("sign", "c_sign_key_in_memory_per_sec", "wallet_sign_held_key_per_sec"),
                         ("open sealed", "c_seal_open_key_in_memory_per_sec", "wallet_open_sealed_held_key_per_sec")):
    print(f"wallet-held {op}: {coffer[w_key]:.0f}/s vs libsodium C, key in memory, {coffer[c_key]:.0f}/s: C / wallet = {coffer[c_key] / coffer[w_key]:.2f}")
PY
