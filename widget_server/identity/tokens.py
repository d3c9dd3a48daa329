"""Verifying a visitor's identity token: a JWT (RFC 7519) the site signs, checked with PyJWT.

The algorithms a token may use are fixed by the configured key, never read from the token
(RFC 8725 §2.1, §3.1): HS256 with IDENTITY_SECRET; RS256 or ES256, as the key is RSA or
P-256, with IDENTITY_PUBLIC_KEY_FILE or a key of IDENTITY_JWKS_URL. So `alg: none` and a token
signed with HMAC over the RSA public key (the HS/RS confusion, RFC 8725 §2.1) are refused.
`sub` and `exp` are required; `exp` may be at most IDENTITY_MAX_AGE after `iat` (or after now,
without `iat`), so a leaked token cannot be one that lives for years. A refusal's message says
what is wrong with the token, never the token, the secret or the key.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from ..settings import ConfigError
from ..settings.areas import IdentitySettings
from ..wire.errors import IDENTITY_EXPIRED, IDENTITY_INVALID, IDENTITY_KEYS_UNAVAILABLE
from .identity import EMAIL_MAX_CHARS, NAME_MAX_CHARS, SUBJECT_MAX_CHARS, Identity, claim_text

# A JWT of a few claims is a few hundred characters; this bounds the work a request can ask for
# before any signature is checked (the header is decoded first, the JWKS looked up by its kid).
TOKEN_MAX_CHARS = 8192
# RFC 7519 §4.1.4: "some small leeway, usually no more than a few minutes, to account for clock
# skew" between the site's servers and this one.
LEEWAY_SECONDS = 30
# The JWKS: fetched with a short timeout (a request waits for it), kept this long, and its
# keys kept by kid (PyJWKClient's caches), so a site's key rotation is seen within minutes.
JWKS_TIMEOUT_SECONDS = 5.0
JWKS_LIFESPAN_SECONDS = 300.0

HS256 = ("HS256",)
RS256 = ("RS256",)
ES256 = ("ES256",)


def looks_like_jwt(token: str) -> bool:
    """A JWS in compact form is three base64url parts joined by dots (RFC 7515 §7.1); a
    conversation's token (`secrets.token_urlsafe`) has no dot, so the two never mix up."""
    return token.count(".") == 2


def _algorithms_for(key: object) -> tuple[str, ...]:
    """The one algorithm a public key may verify: RS256 for RSA, ES256 for P-256."""
    if isinstance(key, rsa.RSAPublicKey):
        return RS256
    if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        return ES256
    return ()


def load_public_key(path: str) -> tuple[Any, tuple[str, ...]]:
    """IDENTITY_PUBLIC_KEY_FILE's key and its algorithm; a ConfigError naming the file when it
    cannot be read or is not an RSA or P-256 public key (a private key is refused too: this
    server never needs one)."""
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as error:
        raise ConfigError(f"IDENTITY_PUBLIC_KEY_FILE: cannot read {path!r}: {error.strerror}") from None
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        raise ConfigError(
            f"IDENTITY_PUBLIC_KEY_FILE: {path!r} is not a PEM public key (-----BEGIN PUBLIC KEY-----)"
        ) from None
    algorithms = _algorithms_for(key)
    if not algorithms:
        raise ConfigError(f"IDENTITY_PUBLIC_KEY_FILE: {path!r} is neither an RSA key (RS256) nor a P-256 key (ES256)")
    return key, algorithms


class IdentityVerifier:
    """Verifies identity tokens with the configured key (IdentitySettings). `configured` is
    false when no key source is set: every token is then refused."""

    def __init__(self, settings: IdentitySettings, *, now: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self._now = now
        self._key: Any = None
        self._algorithms: tuple[str, ...] = ()
        self._jwks: jwt.PyJWKClient | None = None
        if settings.secret:
            self._key, self._algorithms = settings.secret, HS256
        elif settings.public_key_file:
            self._key, self._algorithms = load_public_key(settings.public_key_file)
        elif settings.jwks_url:
            self._jwks = jwt.PyJWKClient(
                settings.jwks_url,
                cache_keys=True,
                cache_jwk_set=True,
                lifespan=JWKS_LIFESPAN_SECONDS,
                timeout=JWKS_TIMEOUT_SECONDS,
            )

    @property
    def configured(self) -> bool:
        return self._key is not None or self._jwks is not None

    def verify(self, token: str) -> Identity:
        """The token's identity; 401 `identity_invalid` or `identity_expired` (503
        `identity_keys_unavailable` when the JWKS cannot be fetched)."""
        if not self.configured:
            raise IDENTITY_INVALID("This server accepts no identity tokens: no identity key is configured.")
        if len(token) > TOKEN_MAX_CHARS:
            raise IDENTITY_INVALID(f"The identity token is longer than {TOKEN_MAX_CHARS} characters.")
        if not looks_like_jwt(token):
            raise IDENTITY_INVALID("The identity token is not a JWT (three base64url parts joined by dots).")
        key, algorithms = self._key_for(token)
        settings = self.settings
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=list(algorithms),
                options={"require": ["sub", "exp"], "verify_aud": bool(settings.audience)},
                audience=settings.audience or None,
                issuer=settings.issuer or None,
                leeway=LEEWAY_SECONDS,
            )
        except jwt.ExpiredSignatureError:
            raise IDENTITY_EXPIRED("The identity token has expired: ask the site for a new one.") from None
        except jwt.InvalidTokenError as error:
            raise IDENTITY_INVALID(_reason(error, algorithms)) from None
        self._check_lifetime(claims)
        return _identity(claims)

    def _key_for(self, token: str) -> tuple[Any, Sequence[str]]:
        if self._jwks is None:
            return self._key, self._algorithms
        try:
            found = self._jwks.get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError:
            raise IDENTITY_KEYS_UNAVAILABLE(
                "The site's identity keys (IDENTITY_JWKS_URL) could not be fetched. Try again shortly.", retry_after=5
            ) from None
        except (jwt.PyJWKClientError, jwt.PyJWKError, jwt.DecodeError):
            raise IDENTITY_INVALID("The identity token's key (its kid) is not one of the site's keys.") from None
        algorithms = _algorithms_for(found.key)
        if not algorithms:
            raise IDENTITY_INVALID("The identity token's key is neither an RSA key (RS256) nor a P-256 key (ES256).")
        return found.key, algorithms

    def _check_lifetime(self, claims: dict[str, Any]) -> None:
        """`exp` at most IDENTITY_MAX_AGE after `iat`, or after now without `iat` (RFC 8725 §3.10:
        a token's acceptance is bounded by the verifier, not only by its issuer)."""
        start = claims.get("iat")
        if not isinstance(start, (int, float)) or isinstance(start, bool):
            start = self._now()
        lifetime = float(claims["exp"]) - float(start)
        most = self.settings.max_age_seconds
        if lifetime > most + LEEWAY_SECONDS:
            raise IDENTITY_INVALID(
                f"The identity token lives {int(lifetime)} s; this server accepts at most {int(most)} s "
                "(IDENTITY_MAX_AGE): ask the site for a shorter-lived one."
            )


def _reason(error: jwt.InvalidTokenError, algorithms: Sequence[str]) -> str:
    """What is wrong with a token, in words that name no secret and echo no claim's value."""
    if isinstance(error, jwt.InvalidAlgorithmError):
        return f"The identity token's algorithm is not accepted: this server accepts only {', '.join(algorithms)}."
    if isinstance(error, jwt.InvalidSignatureError):
        return "The identity token's signature does not match the site's key."
    if isinstance(error, jwt.MissingRequiredClaimError):
        return f'The identity token has no "{error.claim}" claim; "sub" and "exp" are required.'
    if isinstance(error, jwt.InvalidIssuerError):
        return "The identity token's \"iss\" is not this site's issuer (IDENTITY_ISSUER)."
    if isinstance(error, jwt.InvalidAudienceError):
        return 'The identity token\'s "aud" does not name this chat (IDENTITY_AUDIENCE).'
    if isinstance(error, jwt.ImmatureSignatureError):
        return 'The identity token is not valid yet ("nbf" or "iat" is in the future).'
    if isinstance(error, jwt.exceptions.InvalidSubjectError):
        return 'The identity token\'s "sub" must be a string.'
    if isinstance(error, jwt.DecodeError):
        return "The identity token is not a well-formed JWT."
    return "The identity token is not valid."


def _identity(claims: dict[str, Any]) -> Identity:
    subject = claims.get("sub")
    # A subject names an account exactly: refused, never cleaned, when it is not printable text.
    if not isinstance(subject, str) or not subject or len(subject) > SUBJECT_MAX_CHARS or not subject.isprintable():
        raise IDENTITY_INVALID(f'The identity token\'s "sub" must be 1 to {SUBJECT_MAX_CHARS} printable characters.')
    name = claim_text(claims.get("name"), most=NAME_MAX_CHARS)
    if name is None:
        raise IDENTITY_INVALID(f'The identity token\'s "name" must be a string of at most {NAME_MAX_CHARS} characters.')
    email = claim_text(claims.get("email"), most=EMAIL_MAX_CHARS)
    if email is None:
        raise IDENTITY_INVALID(
            f'The identity token\'s "email" must be a string of at most {EMAIL_MAX_CHARS} characters.'
        )
    return Identity(subject, name, email)
