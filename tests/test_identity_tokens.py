"""Verifying a visitor's identity token (widget_server/identity/tokens.py; docs/security.md,
"Known visitors"): HS256, RS256 and ES256 keys, a JWKS served by a real loopback HTTP server,
and every way a token is refused: forged, expired, too long-lived, missing claims, `alg: none`,
the HS/RS confusion, another issuer or audience. The settings' own checks at start-up too."""

from __future__ import annotations

import base64
import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from widget_server.errors import ApiError
from widget_server.identity.identity import Identity
from widget_server.identity.tokens import TOKEN_MAX_CHARS, IdentityVerifier, looks_like_jwt
from widget_server.settings import ConfigError, load_settings
from widget_server.testing import IDENTITY_TEST_SECRET, mint_identity_token

SECRET = IDENTITY_TEST_SECRET


def verifier(**settings: Any) -> IdentityVerifier:
    return IdentityVerifier(load_settings(settings, environ={}).identity)


def refusal(check: IdentityVerifier, token: str) -> ApiError:
    with pytest.raises(ApiError) as caught:
        check.verify(token)
    return caught.value


def assert_refused(check: IdentityVerifier, token: str, code: str, words: str) -> ApiError:
    error = refusal(check, token)
    assert (error.status, error.code) == (401 if code != "identity_keys_unavailable" else 503, code)
    assert words in error.message, error.message
    return error


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def public_pem(key: Any) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def pem_file(tmp_path, key: Any, name: str = "identity.pem") -> str:
    path = tmp_path / name
    path.write_bytes(public_pem(key))
    return str(path)


# -- valid tokens --------------------------------------------------------------------------


def test_an_hs256_token_gives_its_subject_name_and_email():
    token = mint_identity_token("user-42", secret=SECRET, name="Ada Lovelace", email="ada@example.com")
    assert looks_like_jwt(token)
    assert verifier(IDENTITY_SECRET=SECRET).verify(token) == Identity("user-42", "Ada Lovelace", "ada@example.com")


def test_name_and_email_are_optional_plain_text_on_one_line():
    check = verifier(IDENTITY_SECRET=SECRET)
    assert check.verify(mint_identity_token("u", secret=SECRET)) == Identity("u", "", "")
    # Markup stays text (the console writes it as a text node); controls and line breaks go.
    token = mint_identity_token("u", secret=SECRET, name="<img src=x onerror=alert(1)>\r\nAda\x07")
    assert check.verify(token).name == "<img src=x onerror=alert(1)> Ada"


def test_rs256_and_es256_with_a_pem_public_key(tmp_path, rsa_key, ec_key):
    rs = verifier(IDENTITY_PUBLIC_KEY_FILE=pem_file(tmp_path, rsa_key, "rsa.pem"))
    assert rs.verify(mint_identity_token("r", algorithm="RS256", key=rsa_key)).subject == "r"
    es = verifier(IDENTITY_PUBLIC_KEY_FILE=pem_file(tmp_path, ec_key, "ec.pem"))
    assert es.verify(mint_identity_token("e", algorithm="ES256", key=ec_key)).subject == "e"
    # The key decides the algorithm: an ES256 token for the RSA key is refused, and the reverse.
    assert_refused(rs, mint_identity_token("e", algorithm="ES256", key=ec_key), "identity_invalid", "only RS256")
    assert_refused(es, mint_identity_token("r", algorithm="RS256", key=rsa_key), "identity_invalid", "only ES256")


def test_the_issuer_and_audience_are_checked_when_set():
    check = verifier(IDENTITY_SECRET=SECRET, IDENTITY_ISSUER="https://shop.example", IDENTITY_AUDIENCE="chat")
    good = mint_identity_token("u", secret=SECRET, issuer="https://shop.example", audience="chat")
    assert check.verify(good).subject == "u"
    other_issuer = mint_identity_token("u", secret=SECRET, issuer="https://evil.example", audience="chat")
    assert_refused(check, other_issuer, "identity_invalid", '"iss"')
    other_audience = mint_identity_token("u", secret=SECRET, issuer="https://shop.example", audience="mail")
    assert_refused(check, other_audience, "identity_invalid", '"aud"')
    no_issuer = mint_identity_token("u", secret=SECRET, audience="chat")
    assert_refused(check, no_issuer, "identity_invalid", '"iss"')
    # Unset, they are not checked: a token naming an audience passes.
    assert verifier(IDENTITY_SECRET=SECRET).verify(other_audience).subject == "u"


# -- refused tokens ------------------------------------------------------------------------


def test_a_forged_signature_is_refused():
    forged = mint_identity_token("admin", secret="another-secret-of-thirty-two-bytes-or-more")
    error = assert_refused(verifier(IDENTITY_SECRET=SECRET), forged, "identity_invalid", "signature")
    assert SECRET not in error.message and forged not in error.message
    # A payload changed after signing: the signature no longer matches.
    header, payload, signature = mint_identity_token("alice", secret=SECRET).split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["sub"] = "bob"
    changed = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert_refused(verifier(IDENTITY_SECRET=SECRET), f"{header}.{changed}.{signature}", "identity_invalid", "signature")


def test_an_expired_token_is_identity_expired():
    expired = mint_identity_token("u", secret=SECRET, expires_in=-120)
    assert_refused(verifier(IDENTITY_SECRET=SECRET), expired, "identity_expired", "expired")


def test_a_token_living_longer_than_max_age_is_refused():
    check = verifier(IDENTITY_SECRET=SECRET, IDENTITY_MAX_AGE=600)
    assert check.verify(mint_identity_token("u", secret=SECRET, expires_in=600)).subject == "u"
    assert_refused(
        check, mint_identity_token("u", secret=SECRET, expires_in=7200), "identity_invalid", "IDENTITY_MAX_AGE"
    )
    # Without `iat`, counted from now.
    now = int(time.time())
    no_iat = jwt.encode({"sub": "u", "exp": now + 7200}, SECRET, algorithm="HS256")
    assert_refused(check, no_iat, "identity_invalid", "IDENTITY_MAX_AGE")
    assert check.verify(jwt.encode({"sub": "u", "exp": now + 300}, SECRET, algorithm="HS256")).subject == "u"
    # An old `iat` does not stretch it: exp − iat is what counts.
    old = jwt.encode({"sub": "u", "iat": now - 86400, "exp": now + 300}, SECRET, algorithm="HS256")
    assert_refused(check, old, "identity_invalid", "IDENTITY_MAX_AGE")


@pytest.mark.parametrize("missing", ["sub", "exp"])
def test_sub_and_exp_are_required(missing):
    now = int(time.time())
    claims = {"sub": "u", "exp": now + 60}
    del claims[missing]
    token = jwt.encode(claims, SECRET, algorithm="HS256")
    assert_refused(verifier(IDENTITY_SECRET=SECRET), token, "identity_invalid", f'"{missing}"')


def test_alg_none_is_refused():
    now = int(time.time())
    unsigned = jwt.encode({"sub": "admin", "exp": now + 60}, None, algorithm="none")
    assert unsigned.endswith(".")
    assert_refused(verifier(IDENTITY_SECRET=SECRET), unsigned, "identity_invalid", "only HS256")


def test_an_hs256_token_signed_with_the_rsa_public_key_is_refused(tmp_path, rsa_key):
    """RFC 8725 §2.1: a verifier that let the token pick the algorithm would check this HMAC
    with the public key's PEM as the secret, and anyone can read a public key."""
    check = verifier(IDENTITY_PUBLIC_KEY_FILE=pem_file(tmp_path, rsa_key))
    header = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()).rstrip(b"=")
    claims = {"sub": "admin", "exp": int(time.time()) + 60}
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=")
    import hashlib
    import hmac

    signing_input = header + b"." + payload
    mac = hmac.new(public_pem(rsa_key), signing_input, hashlib.sha256).digest()
    confused = (signing_input + b"." + base64.urlsafe_b64encode(mac).rstrip(b"=")).decode()
    assert_refused(check, confused, "identity_invalid", "only RS256")


@pytest.mark.parametrize(
    "claims,words",
    [
        ({"sub": 42}, '"sub"'),
        ({"sub": ""}, '"sub"'),
        ({"sub": "x" * 201}, '"sub"'),
        ({"sub": "line\nbreak"}, '"sub"'),
        ({"name": ["Ada"]}, '"name"'),
        ({"name": "A" * 201}, '"name"'),
        ({"email": "a" * 250 + "@x.io"}, '"email"'),
    ],
)
def test_claims_are_bounded_text(claims, words):
    token = mint_identity_token("u", secret=SECRET, claims=claims)
    assert_refused(verifier(IDENTITY_SECRET=SECRET), token, "identity_invalid", words)


@pytest.mark.parametrize("token", ["", "not-a-jwt", "a.b.c", "x" * (TOKEN_MAX_CHARS + 1), "é.é.é"])
def test_garbage_is_a_clear_refusal(token):
    error = refusal(verifier(IDENTITY_SECRET=SECRET), token)
    assert (error.status, error.code) == (401, "identity_invalid")


def test_without_a_key_every_token_is_refused():
    token = mint_identity_token("u", secret=SECRET)
    assert_refused(verifier(), token, "identity_invalid", "no identity key is configured")


# -- a JWKS served over HTTP ------------------------------------------------------------------


def jwk_of(key: Any, kid: str) -> dict[str, Any]:
    algorithm = jwt.algorithms.RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else jwt.algorithms.ECAlgorithm
    jwk: dict[str, Any] = json.loads(algorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "use": "sig"}


class JwksServer:
    """A JWKS document on a real loopback HTTP server; `fetches` counts its requests."""

    def __init__(self, keys: list[dict[str, Any]]) -> None:
        self.keys = keys
        self.fetches = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.fetches += 1
                body = json.dumps({"keys": outer.keys}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/.well-known/jwks.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def jwks(rsa_key, ec_key) -> Iterator[JwksServer]:
    server = JwksServer([jwk_of(rsa_key, "rsa-1"), jwk_of(ec_key, "ec-1")])
    yield server
    server.stop()


def test_jwks_keys_are_chosen_by_kid_and_cached(jwks, rsa_key, ec_key):
    check = verifier(IDENTITY_JWKS_URL=jwks.url)
    assert check.verify(mint_identity_token("r", algorithm="RS256", key=rsa_key, kid="rsa-1")).subject == "r"
    assert check.verify(mint_identity_token("e", algorithm="ES256", key=ec_key, kid="ec-1")).subject == "e"
    assert check.verify(mint_identity_token("r2", algorithm="RS256", key=rsa_key, kid="rsa-1")).subject == "r2"
    assert jwks.fetches == 1  # kept (PyJWKClient's cache), not fetched per token


def test_jwks_refusals(jwks, rsa_key, ec_key):
    check = verifier(IDENTITY_JWKS_URL=jwks.url)
    unknown = mint_identity_token("r", algorithm="RS256", key=rsa_key, kid="retired")
    assert_refused(check, unknown, "identity_invalid", "kid")
    # The key's kind decides: an ES256 header on the RSA key's kid is refused.
    wrong_alg = mint_identity_token("e", algorithm="ES256", key=ec_key, kid="rsa-1")
    assert_refused(check, wrong_alg, "identity_invalid", "only RS256")
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = mint_identity_token("r", algorithm="RS256", key=other_key, kid="rsa-1")
    assert_refused(check, forged, "identity_invalid", "signature")
    # HS256 signed with the RSA key's public JWK as text: refused, whatever the secret.
    confused = jwt.encode(
        {"sub": "a", "exp": int(time.time()) + 60}, "x" * 40, algorithm="HS256", headers={"kid": "rsa-1"}
    )
    assert_refused(check, confused, "identity_invalid", "only RS256")


def test_an_unreachable_jwks_is_a_retryable_503(rsa_key):
    server = JwksServer([])
    url = server.url
    server.stop()  # nothing listens there now
    check = verifier(IDENTITY_JWKS_URL=url)
    error = assert_refused(
        check,
        mint_identity_token("r", algorithm="RS256", key=rsa_key, kid="rsa-1"),
        "identity_keys_unavailable",
        "fetched",
    )
    assert error.retry_after


# -- the settings, checked at start ----------------------------------------------------------


@pytest.mark.parametrize(
    "settings,words",
    [
        ({"IDENTITY_REQUIRED": "1"}, "IDENTITY_REQUIRED: identity tokens cannot be verified without a key"),
        ({"IDENTITY_SECRET": SECRET, "IDENTITY_JWKS_URL": "https://x.example/jwks"}, "one identity key source only"),
        ({"IDENTITY_SECRET": "short-but-secret"}, "IDENTITY_SECRET: too short (16 bytes)"),
        ({"IDENTITY_JWKS_URL": "http://keys.example/jwks"}, "not an https URL"),
        ({"IDENTITY_MAX_AGE": "0"}, "IDENTITY_MAX_AGE"),
    ],
)
def test_identity_settings_are_checked_at_start(settings, words):
    with pytest.raises(ConfigError) as caught:
        load_settings(settings, environ={})
    assert words in str(caught.value)
    assert "short-but-secret" not in str(caught.value)  # a secret is never printed


def test_a_public_key_file_must_be_a_readable_rsa_or_p256_public_key(tmp_path, rsa_key):
    with pytest.raises(ConfigError, match="cannot read"):
        verifier(IDENTITY_PUBLIC_KEY_FILE=str(tmp_path / "missing.pem"))
    private = tmp_path / "private.pem"
    private.write_bytes(
        rsa_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    with pytest.raises(ConfigError, match="not a PEM public key"):
        verifier(IDENTITY_PUBLIC_KEY_FILE=str(private))
    p384 = ec.generate_private_key(ec.SECP384R1())
    with pytest.raises(ConfigError, match="neither an RSA key"):
        verifier(IDENTITY_PUBLIC_KEY_FILE=pem_file(tmp_path, p384, "p384.pem"))


def test_mint_identity_token_signs_what_the_verifier_reads():
    token = mint_identity_token("u", secret=SECRET, issuer="iss", audience="aud", expires_in=30, claims={"extra": 1})
    claims = jwt.decode(token, SECRET, algorithms=["HS256"], audience="aud")
    assert claims["sub"] == "u" and claims["iss"] == "iss" and claims["exp"] - claims["iat"] == 30
    with pytest.raises(ValueError, match="RS256 needs key"):
        mint_identity_token("u", algorithm="RS256")


def test_the_secret_is_not_in_the_settings_repr():
    identity = load_settings({"IDENTITY_SECRET": SECRET}, environ={}).identity
    assert identity.secret == SECRET
    assert SECRET not in repr(identity) and "secret='<set>'" in repr(identity)
