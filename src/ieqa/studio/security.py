"""Tokens, CSRF and form ids of the studio.

* **Invite tokens** (one per rater) and the **admin token** are 144-bit random strings
  (:func:`new_token`). Opening ``/invite/TOKEN`` (``/admin/login?token=TOKEN``) sets an
  HttpOnly, SameSite=Lax cookie holding the token (Lax, not Strict: an invite link
  clicked in a mail must work, and Strict would drop the cookie on the redirect that
  follows a cross-site click); every later request is
  authenticated by that cookie (the admin pages also accept ``Authorization: Bearer``).
  Tokens are compared in constant time (:func:`hmac.compare_digest`), an invite token
  with every rater's (:meth:`ieqa.studio.store.Store.rater_by_token`).
* **CSRF**: every form carries ``csrf = HMAC(secret, "csrf" | session token)``
  (:func:`csrf_token`); a POST whose field does not match its cookie's token is refused
  (403). Another site can neither read the value nor compute it.
* **Form ids** (idempotency keys): each rendered form carries ``submission =
  nonce.HMAC(secret, rater | item | nonce)`` (:func:`new_form_id`); the server accepts
  only ids it issued for that rater and item (:func:`check_form_id`), and records each at
  most once (a UNIQUE key in the store), so a double click or a retry is a no-op.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = ["check_csrf", "check_form_id", "csrf_token", "new_form_id", "new_token"]


def new_token() -> str:
    """A fresh random token (URL-safe, 24 characters)."""
    return secrets.token_urlsafe(18)


def _mac(secret: str, *parts: str) -> str:
    msg = "\x1f".join(parts).encode()
    return hmac.new(secret.encode(), msg, hashlib.sha256).hexdigest()[:40]


def csrf_token(secret: str, session_token: str) -> str:
    """The CSRF token of a session (rater or admin cookie value)."""
    return _mac(secret, "csrf", session_token)


def check_csrf(secret: str, session_token: str, given: str | None) -> bool:
    """True when ``given`` is the session's CSRF token (constant-time comparison)."""
    return bool(given) and hmac.compare_digest(csrf_token(secret, session_token), str(given))


def new_form_id(secret: str, rater: str, item: int) -> str:
    """A new idempotency key for one rendering of ``rater``'s form for ``item``."""
    nonce = secrets.token_urlsafe(12)
    return f"{nonce}.{_mac(secret, 'form', rater, str(item), nonce)}"


def check_form_id(secret: str, rater: str, item: int, form_id: str | None) -> bool:
    """True when ``form_id`` was issued by :func:`new_form_id` for ``rater`` and ``item``."""
    if not form_id or form_id.count(".") != 1 or len(form_id) > 100:
        return False
    nonce, mac = form_id.split(".")
    return hmac.compare_digest(_mac(secret, "form", rater, str(item), nonce), mac)
