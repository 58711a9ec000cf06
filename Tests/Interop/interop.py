"""Coffer's keys against real clients: Aries Askar (Ed25519 signatures) and PyNaCl (sealed boxes,
and CoverDrop's wire formats rebuilt from libsodium's primitives).

Coffer is driven through its command line on a fresh wallet. Prints "interop ok" or fails with a
message naming the check.
"""
import base64, calendar, gzip, hashlib, json, os, subprocess, sys, tempfile, time

from aries_askar import Key, KeyAlg
from nacl.exceptions import CryptoError
from nacl.public import Box, PrivateKey, PublicKey, SealedBox
from nacl.secret import SecretBox
from nacl.signing import SigningKey

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b58encode(data: bytes) -> str:
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = ALPHABET[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def b58decode(text: str) -> bytes:
    n = 0
    for c in text:
        n = n * 58 + ALPHABET.index(c)
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    return b"\0" * (len(text) - len(text.lstrip("1"))) + body


coffer = sys.argv[1]
store = tempfile.mkdtemp(prefix="coffer-interop-")
raw_key = base64.b64encode(os.urandom(32)).decode()


def run(*args, wallet=True):
    cmd = [coffer, "--store", store] + (["--raw-key", raw_key] if wallet else []) + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"coffer {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return json.loads(p.stdout)


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


run("wallet", "create")
message = b"interop message \x00\xff"

# 1. Coffer signs, Askar verifies.
verkey = run("wallet", "key", "create", "--kind", "ed25519")["verkey"]
signature = base64.b64decode(run("wallet", "key", "sign", verkey, b64(message))["signature"])
askar_key = Key.from_public_bytes(KeyAlg.ED25519, b58decode(verkey))
assert askar_key.verify_signature(message, signature), "Askar rejected Coffer's Ed25519 signature"
assert not askar_key.verify_signature(message + b"!", signature), "Askar accepted a signature of another message"

# 2. Askar signs, Coffer verifies.
signer = Key.generate(KeyAlg.ED25519)
askar_sig = signer.sign_message(message)
askar_verkey = b58encode(signer.get_public_bytes())
assert run("wallet", "key", "verify", askar_verkey, b64(message), b64(askar_sig), wallet=False)["valid"], \
    "Coffer rejected Askar's Ed25519 signature"

# 3. PyNaCl seals to a Coffer X25519 key, Coffer opens.
x_verkey = run("wallet", "key", "create", "--kind", "x25519")["verkey"]
box = SealedBox(PublicKey(b58decode(x_verkey))).encrypt(message)
opened = base64.b64decode(run("wallet", "key", "open", x_verkey, b64(box))["message"])
assert opened == message, "Coffer did not open PyNaCl's sealed box"

# 4. Coffer seals to a PyNaCl key, PyNaCl opens.
nacl_key = PrivateKey.generate()
coffer_box = base64.b64decode(run("wallet", "key", "seal", b58encode(bytes(nacl_key.public_key)), b64(message), wallet=False)["box"])
assert SealedBox(nacl_key).decrypt(coffer_box) == message, "PyNaCl did not open Coffer's sealed box"

# 5. CoverDrop's wire formats, with PyNaCl as an independent CoverNode and journalist: it opens
#    the item Coffer queued, answers with a signed dead drop Coffer collects, and makes fresh
#    vectors in CoverDrop's layout that Coffer's check-vectors must pass.
deniable_store = tempfile.mkdtemp(prefix="coffer-interop-deniable-")
service = os.path.join(deniable_store, "deniable-dev-service")


def deniable(*args, env=None, check=True):
    p = subprocess.run([coffer, "--store", deniable_store] + list(args), capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    if check and p.returncode != 0:
        sys.exit(f"coffer {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p


def secret(name: str) -> bytes:
    with open(os.path.join(service, name), "rb") as f:
        return f.read()


def padded(text: str) -> bytes:
    z = gzip.compress(text.encode(), compresslevel=6)
    return len(z).to_bytes(2, "big") + z + os.urandom(510 - len(z))


def unpadded(p: bytes) -> str:
    n = int.from_bytes(p[:2], "big")
    return gzip.decompress(p[2:2 + n]).decode()


passphrase = json.loads(deniable("deniable", "init").stdout)["passphrase"]
env = {"P": passphrase}
deniable("--passphrase-env", "P", "deniable", "send", "--to", "alice", "a tip for PyNaCl", env=env)
item = base64.b64decode(json.loads(deniable("deniable", "dequeue").stdout)["item"])
assert len(item) == 773, f"a queue item is {len(item)} bytes, not CoverDrop's 773"

# The CoverNode: a sealed 32-byte key in one of two 80-byte slots, then secretbox under a zero nonce.
key = None
for node in ("covernode_001", "covernode_002"):
    for slot in (0, 1):
        try:
            key = SealedBox(PrivateKey(secret(f"{node}.msg.key"))).decrypt(item[slot * 80:(slot + 1) * 80])
        except CryptoError:
            continue
assert key is not None, "no CoverNode key opened the MultiAnonymousBox"
to_covernode = SecretBox(key).decrypt(item[160:], bytes(24))
assert len(to_covernode) == 597
assert to_covernode[:4] == hashlib.sha256(b"alice").digest()[:4], "the recipient tag is not SHA-256('alice')[:4]"
# The journalist: the AnonymousBox, then reply key, reserved byte and padded text.
to_journalist = SealedBox(PrivateKey(secret("journalist.alice.msg.key"))).decrypt(to_covernode[4:])
assert len(to_journalist) == 545 and to_journalist[32] == 0
reply_key = to_journalist[:32]
assert unpadded(to_journalist[33:]) == "a tip for PyNaCl", "the journalist did not read Coffer's text"

# The journalist answers: a TwoPartyBox (tag, ciphertext, nonce appended) to the reply key, in a
# dead drop of 3 slots signed by a CoverNode identity key over SHA-256(data || seconds, BE).
nonce = os.urandom(24)
answer = Box(PrivateKey(secret("journalist.alice.msg.key")), PublicKey(reply_key)).encrypt(b"\x00" + padded("answered by PyNaCl"), nonce)
slots = [answer.ciphertext + nonce]
for _ in range(2):
    cover = Box(PrivateKey.generate(), PrivateKey.generate().public_key).encrypt(b"\x00" + padded(""), nonce)
    slots.append(cover.ciphertext + nonce)
data = b"".join(slots)
created = int(time.time())
signature = SigningKey(secret("covernode_001.id.seed")).sign(hashlib.sha256(data + created.to_bytes(8, "big", signed=True)).digest()).signature
api = os.path.join(service, "dead-drops-api.json")
published = json.load(open(api)) if os.path.exists(api) else {"dead_drops": []}
next_id = max([d["id"] for d in published["dead_drops"]] + [0]) + 1
published["dead_drops"].append({
    "id": next_id, "created_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + ".25Z",
    "data": base64.b64encode(data).decode().rstrip("="), "signature": signature.hex()})
json.dump(published, open(api, "w"))
# The start routine fetches dead drops at most hourly (CoverDrop's cadence): fetch the new one now.
deniable("deniable", "start", "--fetch-dead-drops", env=env)
mailbox = json.loads(deniable("--passphrase-env", "P", "deniable", "unlock", env=env).stdout)["mailbox"]
assert any(m["direction"] == "received" and m["peer"] == "alice" and m["text"] == "answered by PyNaCl" for m in mailbox), \
    f"Coffer did not collect PyNaCl's reply: {mailbox}"

# Fresh vectors in CoverDrop's layout, made by PyNaCl with its own keys and messages.
vectors = tempfile.mkdtemp(prefix="coffer-interop-vectors-")


def write(group, name, content):
    os.makedirs(os.path.join(vectors, group), exist_ok=True)
    with open(os.path.join(vectors, group, name), "wb" if isinstance(content, bytes) else "w") as f:
        f.write(content)


msg = os.urandom(997)
r = PrivateKey.generate()
write("anonymous_box", "01_recipient_pk", bytes(r.public_key))
write("anonymous_box", "02_recipient_sk", bytes(r))
write("anonymous_box", "03_message", msg)
write("anonymous_box", "04_anonymous_box", SealedBox(r.public_key).encrypt(msg))
s, r = PrivateKey.generate(), PrivateKey.generate()
for name, value in [("01_sender_pk", bytes(s.public_key)), ("02_sender_sk", bytes(s)), ("03_recipient_pk", bytes(r.public_key)),
                    ("04_recipient_sk", bytes(r)), ("05_message", msg)]:
    write("two_party_box", name, value)
n = os.urandom(24)
write("two_party_box", "06_two_party_box", Box(s, r.public_key).encrypt(msg, n).ciphertext + n)
r1, r2, k = PrivateKey.generate(), PrivateKey.generate(), os.urandom(32)
for name, value in [("01_recipient_1_pk", bytes(r1.public_key)), ("02_recipient_1_sk", bytes(r1)), ("03_recipient_2_pk", bytes(r2.public_key)),
                    ("04_recipient_2_sk", bytes(r2)), ("05_message", msg)]:
    write("multi_anonymous_box", name, value)
write("multi_anonymous_box", "06_multi_anonymous_box",
      SealedBox(r1.public_key).encrypt(k) + SealedBox(r2.public_key).encrypt(k) + SecretBox(k).encrypt(msg, bytes(24)).ciphertext)
sk = SigningKey.generate()
write("signature", "01_pk", bytes(sk.verify_key))
write("signature", "02_sk", bytes(sk))
write("signature", "03_message", msg)
write("signature", "04_signature", sk.sign(msg).signature)
pk = bytes(PrivateKey.generate().public_key)
write("certificate_data", "01_pk", pk)
write("certificate_data", "02_not_valid_after", "2031-05-06T07:08:09+00:00")
stamp = calendar.timegm((2031, 5, 6, 7, 8, 9, 0, 0, 0))
write("certificate_data", "03_timestamp_bytes", stamp.to_bytes(8, "big"))
write("certificate_data", "04_certificate_data", pk + stamp.to_bytes(8, "big"))
checked = deniable("deniable", "check-vectors", vectors, check=False)
assert checked.returncode == 0, f"check-vectors refused PyNaCl's vectors: {checked.stdout} {checked.stderr}"
result = json.loads(checked.stdout)
assert all(result[g] == "pass" for g in ("anonymous_box", "two_party_box", "multi_anonymous_box", "signature", "certificate_data")), result
bad = bytearray(open(os.path.join(vectors, "signature", "04_signature"), "rb").read())
bad[0] ^= 1
write("signature", "04_signature", bytes(bad))
assert deniable("deniable", "check-vectors", vectors, check=False).returncode == 5, "a broken signature did not fail check-vectors"

print("interop ok: Askar verifies Coffer's signatures and Coffer Askar's; PyNaCl and Coffer open each other's sealed boxes; "
      "PyNaCl reads Coffer's CoverDrop messages, Coffer collects PyNaCl's reply, and PyNaCl's fresh CoverDrop vectors pass")
