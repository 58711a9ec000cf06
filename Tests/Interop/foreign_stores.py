"""Source stores for Coffer's import tests: Aries Askar stores written by the real Askar (PyPI
`aries-askar`), and libindy wallets written by a generator that follows libindy's format.

    foreign_stores.py askar OUTDIR          Askar stores and OUTDIR/askar.json (what Askar reads back)
    foreign_stores.py indy OUTDIR NAME KDF N  a libindy wallet OUTDIR/NAME.db with N records, and
                                            OUTDIR/NAME.json (its key and records)

libindy's format (indy-sdk `indy-wallet`), as this generator writes it: table `metadata` holds JSON
{"keys": [bytes], "master_key_salt": [bytes]?}; `keys` is nonce ‖ ChaCha20-Poly1305-IETF of the
MessagePack array of seven 32-byte keys (type, name, value, item HMAC, tag name, tag value, tag
HMAC) under the master key (the raw key, or Argon2i of the passphrase). Types and names are sealed
under a nonce that is the first 12 bytes of HMAC-SHA256(item HMAC key, plaintext); tag names and
encrypted tag values likewise with the tag HMAC key; each value under its own random key, itself
sealed (random nonce) under the value key. Plaintext tags keep their value as text and their name,
without its leading `~`, sealed.
"""
import asyncio, hashlib, hmac, json, os, sqlite3, sys, time

from nacl.bindings import crypto_aead_chacha20poly1305_ietf_encrypt as seal_ietf
from nacl import pwhash

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b58encode(data: bytes) -> str:
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = ALPHABET[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


# ---------------------------------------------------------------- Askar, written by Askar itself

def askar_records(profile):
    """The records of one profile: non-ASCII ids and values, ~ tags, lists, expiring records.
    (Tags stay ASCII: Askar's Python binding sends them as escaped JSON, which its FFI refuses.)"""
    recs = []
    for i in range(40):
        tags = {"e": f"v{i % 4}", "~n": f"{i:03d}", "~w": ["a", "b"] if i % 5 == 0 else f"w{i % 3}"}
        if i % 7 == 0:
            tags["m"] = ["x", "y", "z"]
        recs.append({"type": "credential" if i % 2 else "connection", "id": f"{profile}-rec-{i}-é✓",
                     "value": f'{{"n":{i},"text":"välue ☃ {profile}"}}', "tags": tags,
                     "expiry_ms": 86_400_000 if i % 9 == 0 else None})
    recs.append({"type": "ünicode-type ✓", "id": "ид-1", "value": "значение 🙂", "tags": {"~": "tilde alone"},
                 "expiry_ms": None})
    recs.append({"type": "credential", "id": f"{profile}-empty-value", "value": "", "tags": {}, "expiry_ms": None})
    return recs


QUERIES = [
    {"e": "v1"},
    {"~n": {"$gt": "020"}},
    {"~n": {"$lte": "005"}},
    {"~n": {"$like": "01%"}},
    {"m": "y"},
    {"~w": "a"},
    {"e": {"$in": ["v0", "v3"]}},
    {"$or": [{"e": "v2"}, {"~n": "001"}]},
    {"$not": {"e": "v0"}},
    {"e": {"$neq": "v1"}},
    {"$and": [{"e": "v0"}, {"~n": {"$gte": "010"}}]},
]


async def make_askar(out):
    from aries_askar import Key, KeyAlg, Store
    stores = []

    async def fill(store, profile_name, recs):
        async with store.session(profile_name) as s:
            for r in recs:
                await s.insert(r["type"], r["id"], r["value"].encode(), r["tags"], expiry_ms=r["expiry_ms"])
            # Already expired when the import runs: Askar stops returning it, Coffer must not import it.
            await s.insert("credential", f"{profile_name}-expired", b"gone", {"e": "v1"}, expiry_ms=1)

    async def readback(store, profile_name, recs, queries):
        await asyncio.sleep(0.01)
        got = []
        async with store.session(profile_name) as s:
            for e in await s.fetch_all():
                got.append({"type": e.category, "id": e.name, "value": e.value.decode(),
                            "tags": {k: sorted(v) if isinstance(v, (set, list)) else v for k, v in e.tags.items()},
                            "expires": any(r["id"] == e.name and r["type"] == e.category and r["expiry_ms"] for r in recs)})
            answers = []
            for q in queries:
                for t in ("credential", "connection"):
                    ids = sorted(e.name for e in await s.fetch_all(t, q))
                    answers.append({"type": t, "query": q, "ids": ids})
        return got, answers

    # 1. A raw key, two profiles.
    raw_key = Store.generate_raw_key()
    path = os.path.join(out, "askar-raw.db")
    store = await Store.provision(f"sqlite://{path}", "raw", raw_key, recreate=True)
    default = await store.get_default_profile()
    second = await store.create_profile("second")
    recs_a, recs_b = askar_records("default"), askar_records("second")
    await fill(store, default, recs_a)
    await fill(store, second, recs_b)
    got_a, answers_a = await readback(store, default, recs_a, QUERIES)
    got_b, _ = await readback(store, second, recs_b, [])
    await store.close()
    stores.append({"file": "askar-raw.db", "key": raw_key, "profile": None, "profileName": default, "records": got_a,
                   "queries": answers_a})
    stores.append({"file": "askar-raw.db", "key": raw_key, "profile": "second", "profileName": "second", "records": got_b})

    # 2. A passphrase through Argon2i (interactive), and a key held by Askar's key manager.
    path = os.path.join(out, "askar-argon2i.db")
    store = await Store.provision(f"sqlite://{path}", "kdf:argon2i:int", "pässphrase ✓", recreate=True)
    default = await store.get_default_profile()
    recs = askar_records("argon")[:12]
    await fill(store, default, recs)
    async with store.session() as s:
        await s.insert_key("a-signing-key", Key.generate(KeyAlg.ED25519))
    got, _ = await readback(store, default, recs, [])
    await store.close()
    stores.append({"file": "askar-argon2i.db", "key": "pässphrase ✓", "profile": None, "profileName": default,
                   "records": got, "keyEntries": 1})

    # 3. No store key (`none`): the profile key is stored as is; the key given is not used.
    path = os.path.join(out, "askar-none.db")
    store = await Store.provision(f"sqlite://{path}", "none", None, recreate=True)
    default = await store.get_default_profile()
    recs = askar_records("none")[:10]
    await fill(store, default, recs)
    got, _ = await readback(store, default, recs, [])
    await store.close()
    stores.append({"file": "askar-none.db", "key": "unused", "profile": None, "profileName": default, "records": got})

    with open(os.path.join(out, "askar.json"), "w") as f:
        json.dump({"stores": stores}, f, ensure_ascii=False)


# ---------------------------------------------------------------- libindy, from its format

def searchable(data: bytes, key: bytes, hmac_key: bytes) -> bytes:
    nonce = hmac.new(hmac_key, data, hashlib.sha256).digest()[:12]
    return nonce + seal_ietf(data, None, nonce, key)


def not_searchable(data: bytes, key: bytes) -> bytes:
    nonce = os.urandom(12)
    return nonce + seal_ietf(data, None, nonce, key)


def msgpack_keys(keys):
    return bytes([0x90 | len(keys)]) + b"".join(bytes([0xC4, 32]) + k for k in keys)


INDY_SCHEMA = """
CREATE TABLE metadata (id INTEGER NOT NULL, value NOT NULL, PRIMARY KEY(id));
CREATE TABLE items(id INTEGER NOT NULL, type NOT NULL, name NOT NULL, value NOT NULL, key NOT NULL, PRIMARY KEY(id));
CREATE UNIQUE INDEX ux_items_type_name ON items(type, name);
CREATE TABLE tags_encrypted(name NOT NULL, value NOT NULL, item_id INTEGER NOT NULL, PRIMARY KEY(name, item_id),
    FOREIGN KEY(item_id) REFERENCES items(id) ON DELETE CASCADE ON UPDATE CASCADE);
CREATE INDEX ix_tags_encrypted_name ON tags_encrypted(name);
CREATE INDEX ix_tags_encrypted_value ON tags_encrypted(value);
CREATE INDEX ix_tags_encrypted_item_id ON tags_encrypted(item_id);
CREATE TABLE tags_plaintext(name NOT NULL, value NOT NULL, item_id INTEGER NOT NULL, PRIMARY KEY(name, item_id),
    FOREIGN KEY(item_id) REFERENCES items(id) ON DELETE CASCADE ON UPDATE CASCADE);
CREATE INDEX ix_tags_plaintext_name ON tags_plaintext(name);
CREATE INDEX ix_tags_plaintext_value ON tags_plaintext(value);
CREATE INDEX ix_tags_plaintext_item_id ON tags_plaintext(item_id);
"""


def indy_records(n):
    for i in range(n):
        t = ["Indy::Did", "Indy::Key", "credential", "Indy::Schema ✓"][i % 4]
        tags = {"e": f"v{i % 4}", "~n": f"{i:06d}"}
        if i % 3 == 0:
            tags["ünï"] = "çödé"
        rid = f"id-{i}-ü"
        if i == 1:
            # U+0000 inside an id and a plaintext (~) tag value, which libindy keeps as TEXT: the
            # import must keep every byte after it.
            rid = "id-1-ü\x00after nul"
            tags["~z"] = "before\x00after"
        yield {"type": t, "id": rid, "value": f'{{"n":{i},"v":"välue {i} ☃"}}', "tags": tags}


def make_indy(out, name, kdf, n):
    keys = [os.urandom(32) for _ in range(7)]
    type_key, name_key, value_key, item_hmac, tag_name_key, tag_value_key, tag_hmac = keys
    if kdf == "raw":
        master = os.urandom(32)
        key_text = b58encode(master)
        metadata = {"keys": None}
    else:
        salt = os.urandom(32)  # libindy keeps a longer salt; the first 16 bytes are used
        key_text = "indy pässphrase ✓"
        ops, mem = ((pwhash.argon2i.OPSLIMIT_MODERATE, pwhash.argon2i.MEMLIMIT_MODERATE) if kdf == "argon2i-mod"
                    else (pwhash.argon2i.OPSLIMIT_INTERACTIVE, pwhash.argon2i.MEMLIMIT_INTERACTIVE))
        master = pwhash.argon2i.kdf(32, key_text.encode(), salt[:16], opslimit=ops, memlimit=mem)
        metadata = {"keys": None, "master_key_salt": list(salt)}
    metadata["keys"] = list(not_searchable(msgpack_keys(keys), master))
    path = os.path.join(out, f"{name}.db")
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.executescript(INDY_SCHEMA)
    db.execute("INSERT INTO metadata(value) VALUES (?)", (json.dumps(metadata).encode(),))
    expected = []
    sealed_names = {}

    def tag_name(text):
        if text not in sealed_names:
            sealed_names[text] = searchable(text.encode(), tag_name_key, tag_hmac)
        return sealed_names[text]

    for i, r in enumerate(indy_records(n)):
        item_key = os.urandom(32)
        cur = db.execute("INSERT INTO items(type, name, value, key) VALUES (?, ?, ?, ?)", (
            searchable(r["type"].encode(), type_key, item_hmac), searchable(r["id"].encode(), name_key, item_hmac),
            not_searchable(r["value"].encode(), item_key), not_searchable(item_key, value_key)))
        item = cur.lastrowid
        for k, v in r["tags"].items():
            if k.startswith("~"):
                db.execute("INSERT INTO tags_plaintext(name, value, item_id) VALUES (?, ?, ?)", (tag_name(k[1:]), v, item))
            else:
                db.execute("INSERT INTO tags_encrypted(name, value, item_id) VALUES (?, ?, ?)",
                           (tag_name(k), searchable(v.encode(), tag_value_key, tag_hmac), item))
        if n <= 1000:
            expected.append(r)
    db.commit()
    db.close()
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump({"key": key_text, "kdf": kdf, "count": n, "records": expected}, f, ensure_ascii=False)


if __name__ == "__main__":
    if sys.argv[1] == "askar":
        asyncio.run(make_askar(sys.argv[2]))
    elif sys.argv[1] == "indy":
        make_indy(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        sys.exit("usage: foreign_stores.py askar OUTDIR | indy OUTDIR NAME KDF N")
    print("stores ok")
