"""Times Aries Askar's raw-key Store.open at two store sizes, for Benchmarks/compare-launch.sh.

The stores hold records of the same shape as `coffer bench launch` makes (type "credential",
200-byte values, an encrypted schema_id tag and a plaintext ~seq tag). Prints one JSON object:
{"raw_open_s_median_small": ..., "raw_open_s_median_large": ..., "records_small": ..., "records_large": ...}.
Usage: python askar_open.py --dir DIR [--small N] [--large N] [--repeats R]
"""
import argparse
import asyncio
import json
import os
import statistics
import time

from aries_askar import Store


async def fill(path, raw_key, n):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    store = await Store.provision(f"sqlite://{path}", "raw", raw_key, recreate=True)
    for start in range(0, n, 10000):
        async with store.transaction() as txn:
            for i in range(start, min(n, start + 10000)):
                await txn.insert("credential", f"cred-{i}", b"v" * 200, {"schema_id": f"schema-{i % 10}", "~seq": str(i)})
            await txn.commit()
    await store.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=100000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    raw_key = Store.generate_raw_key()
    paths = {"small": os.path.join(args.dir, "small.db"), "large": os.path.join(args.dir, "large.db")}
    await fill(paths["small"], raw_key, args.small)
    await fill(paths["large"], raw_key, args.large)
    times = {"small": [], "large": []}
    for round_ in range(args.repeats):
        # Alternate which size goes first, so neither always follows the other.
        for label in (("small", "large") if round_ % 2 == 0 else ("large", "small")):
            t0 = time.perf_counter()
            store = await Store.open(f"sqlite://{paths[label]}", "raw", raw_key)
            times[label].append(time.perf_counter() - t0)
            await store.close()
    print(json.dumps({
        "records_small": args.small, "records_large": args.large,
        "raw_open_s_median_small": round(statistics.median(times["small"]), 6),
        "raw_open_s_median_large": round(statistics.median(times["large"]), 6),
    }))


asyncio.run(main())
