"""cosign-compatible key pairs: generate, encrypt, load, sign and check signatures.

The private key file is what ``cosign generate-key-pair`` writes: a PEM block
``ENCRYPTED SIGSTORE PRIVATE KEY`` (older cosign: ``ENCRYPTED COSIGN PRIVATE KEY``) whose
body is the JSON of go-securesystemslib's ``encrypted`` package — scrypt derives a 32-byte
key from the password, nacl secretbox seals the PKCS#8 DER of the private key. The public
key is a PEM ``PUBLIC KEY`` (SubjectPublicKeyInfo).

Signatures are ASN.1 DER ECDSA over the SHA-2 digest that matches the curve (P-256 with
SHA-256, as cosign does), or RSA PKCS#1 v1.5 with SHA-256 for RSA public keys.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
from dataclasses import dataclass
from typing import Any

import nacl.exceptions
import nacl.secret
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from lockgate import boundedjson
from lockgate.errors import AuthError, UsageError, VerificationError

SIGSTORE_PEM_TYPE = "ENCRYPTED SIGSTORE PRIVATE KEY"
COSIGN_PEM_TYPE = "ENCRYPTED COSIGN PRIVATE KEY"
PASSWORD_VARIABLES = ("LOCKGATE_PASSWORD", "COSIGN_PASSWORD")

#: the scrypt parameter sets go-securesystemslib accepts (legacy, standard, OWASP); anything
#: else is refused so a hostile key file cannot make us spend unbounded memory
_SCRYPT_PARAMS = ({"N": 32768, "r": 8, "p": 1}, {"N": 65536, "r": 8, "p": 1}, {"N": 131072, "r": 8, "p": 1})
_DEFAULT_SCRYPT = _SCRYPT_PARAMS[1]
_SALT_SIZE = 32

PublicKey = ec.EllipticCurvePublicKey | rsa.RSAPublicKey
PrivateKey = ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class KeyPair:
    """A freshly generated key pair as file contents: the encrypted private key and the public key."""

    private_pem: bytes
    public_pem: bytes


def password_from_env(environ: dict[str, str] | None = None) -> bytes | None:
    """The key password from ``LOCKGATE_PASSWORD`` or ``COSIGN_PASSWORD`` (set but empty counts)."""
    env = os.environ if environ is None else environ
    for name in PASSWORD_VARIABLES:
        if name in env:
            return env[name].encode()
    return None


def generate_key_pair(password: bytes) -> KeyPair:
    """A new ECDSA P-256 key pair, the private half encrypted with ``password``."""
    key = ec.generate_private_key(ec.SECP256R1())
    return KeyPair(
        private_pem=encrypt_private_key(key, password), public_pem=public_key_pem(key.public_key())
    )


def public_key_pem(key: PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def encrypt_private_key(key: PrivateKey, password: bytes) -> bytes:
    """The PEM file cosign writes for ``key``: scrypt + secretbox around PKCS#8 DER."""
    der = key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    salt = secrets.token_bytes(_SALT_SIZE)
    nonce = secrets.token_bytes(nacl.secret.SecretBox.NONCE_SIZE)
    box = nacl.secret.SecretBox(_derive(password, salt, _DEFAULT_SCRYPT))
    sealed = box.encrypt(der, nonce).ciphertext
    # key order and compact separators as Go's encoding/json writes the struct
    body = {
        "kdf": {"name": "scrypt", "params": dict(_DEFAULT_SCRYPT), "salt": _b64(salt)},
        "cipher": {"name": "nacl/secretbox", "nonce": _b64(nonce)},
        "ciphertext": _b64(sealed),
    }
    return _pem(SIGSTORE_PEM_TYPE, json.dumps(body, separators=(",", ":")).encode())


def load_private_key(data: bytes, password: bytes, *, source: str = "the key file") -> PrivateKey:
    """Decrypt a cosign private key file. A wrong password is an ``AuthError`` naming the file."""
    pem_type, body = _unpem(data, source)
    if pem_type not in (SIGSTORE_PEM_TYPE, COSIGN_PEM_TYPE):
        raise UsageError(f"{source} is a PEM {pem_type!r} block, not an encrypted cosign private key")
    try:
        doc = boundedjson.json_value(body, source, max_bytes=len(body))
        kdf, cipher = doc["kdf"], doc["cipher"]
        salt, nonce = _unb64(kdf["salt"]), _unb64(cipher["nonce"])
        sealed = _unb64(doc["ciphertext"])
        params = kdf["params"]
    except (ValueError, KeyError, TypeError, boundedjson.LimitExceeded) as exc:
        raise UsageError(f"{source} is not a valid encrypted cosign key ({exc.__class__.__name__})") from None
    if kdf.get("name") != "scrypt" or cipher.get("name") != "nacl/secretbox":
        raise UsageError(
            f"{source} uses kdf {kdf.get('name')!r} / cipher {cipher.get('name')!r}; "
            "only scrypt with nacl/secretbox is supported"
        )
    if params not in _SCRYPT_PARAMS:
        raise UsageError(f"{source} has unsupported scrypt parameters {params}")
    if len(nonce) != nacl.secret.SecretBox.NONCE_SIZE:
        raise UsageError(f"{source} has a nonce of {len(nonce)} bytes, expected 24")
    try:
        der = nacl.secret.SecretBox(_derive(password, salt, params)).decrypt(sealed, nonce)
    except nacl.exceptions.CryptoError:
        raise AuthError(f"cannot decrypt {source}: wrong password") from None
    key = serialization.load_der_private_key(der, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise UsageError(f"{source} holds a {type(key).__name__}; lockgate signs with ECDSA keys only")
    return key


def load_public_key(data: bytes, *, source: str = "the public key file") -> PublicKey:
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        raise UsageError(f"{source} is not a PEM public key") from None
    if not isinstance(key, ec.EllipticCurvePublicKey | rsa.RSAPublicKey):
        raise UsageError(f"{source} holds a {type(key).__name__}; ECDSA and RSA keys are supported")
    return key


def sign(key: PrivateKey, data: bytes) -> bytes:
    """An ASN.1 DER ECDSA signature over ``data``, hashed as cosign hashes for this curve."""
    return key.sign(data, ec.ECDSA(_hash_for(key.curve)))


def check_signature(key: PublicKey, signature: bytes, data: bytes) -> None:
    """Return if ``signature`` over ``data`` was made by ``key``; raise ``VerificationError`` if not."""
    try:
        if isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(signature, data, ec.ECDSA(_hash_for(key.curve)))
        else:
            key.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        raise VerificationError("the signature was not made by the given key") from None


def key_id(key: PublicKey) -> str:
    """A short fingerprint for messages: sha256 of the SubjectPublicKeyInfo DER."""
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(der).hexdigest()[:16]


def _hash_for(curve: ec.EllipticCurve) -> hashes.HashAlgorithm:
    if isinstance(curve, ec.SECP384R1):
        return hashes.SHA384()
    if isinstance(curve, ec.SECP521R1):
        return hashes.SHA512()
    return hashes.SHA256()


def _derive(password: bytes, salt: bytes, params: dict[str, Any]) -> bytes:
    n, r, p = int(params["N"]), int(params["r"]), int(params["p"])
    return hashlib.scrypt(password, salt=salt, n=n, r=r, p=p, maxmem=256 * r * n + (1 << 20), dklen=32)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: object) -> bytes:
    if not isinstance(text, str):
        raise TypeError("expected a base64 string")
    return base64.b64decode(text, validate=True)


def _pem(pem_type: str, body: bytes) -> bytes:
    encoded = base64.b64encode(body).decode()
    lines = [encoded[i : i + 64] for i in range(0, len(encoded), 64)]
    return "\n".join([f"-----BEGIN {pem_type}-----", *lines, f"-----END {pem_type}-----", ""]).encode()


def _unpem(data: bytes, source: str) -> tuple[str, bytes]:
    text = data.decode("ascii", errors="replace")
    begin = text.find("-----BEGIN ")
    if begin < 0:
        raise UsageError(f"{source} is not a PEM file")
    header_end = text.find("-----", begin + 11)
    pem_type = text[begin + 11 : header_end]
    end = text.find(f"-----END {pem_type}-----", header_end)
    if header_end < 0 or end < 0:
        raise UsageError(f"{source} has an unterminated PEM block")
    try:
        return pem_type, base64.b64decode("".join(text[header_end + 5 : end].split()), validate=True)
    except ValueError:
        raise UsageError(f"{source} has a PEM block that is not valid base64") from None
