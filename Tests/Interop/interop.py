"""Coffer's keys against real clients: Aries Askar (Ed25519 signatures) and PyNaCl (sealed boxes).

Coffer is driven through its command line on a fresh wallet. Prints "interop ok" or fails with a
message naming the check.
"""
import base64, json, os, subprocess, sys, tempfile

from aries_askar import Key, KeyAlg
from nacl.public import PrivateKey, PublicKey, SealedBox

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

print("interop ok: Askar verifies Coffer's signatures and Coffer Askar's; PyNaCl and Coffer open each other's sealed boxes")
