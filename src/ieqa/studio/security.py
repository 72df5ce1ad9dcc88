"""Tokens, CSRF and form ids of the studio.

* **Invite tokens** (one per rater) and the **admin token** are 144-bit random strings
  (:func:`new_token`). Opening ``/invite/TOKEN`` (``/admin/login?token=TOKEN``) sets an
  HttpOnly, SameSite=Lax cookie holding the token (Lax, not Strict: an invite link
  clicked in a mail must work, and Strict would drop the cookie on the redirect that
  follows a cross-site click); every later request is
  authenticated by that cookie (the admin pages also accept ``Authorization: Bearer``).
  Tokens are compared in constant time (:func:`hmac.compare_digest`), an invite token
  with every rater's (:meth:`ieqa.studio.store.Store.rater_by_token`).
* **One study, its own cookies**: the cookie names carry the study id
  (:func:`study_id_of`, from the study's secret), so two studies served from one host
  (on two ports: cookies do not tell ports apart) never sign each other's raters out.
* **CSRF**: every form carries ``csrf = HMAC(secret, "csrf" | study id | session token)``
  (:func:`csrf_token`); a POST whose field does not match its cookie's token is refused
  (403). Another site can neither read the value nor compute it.
* **Form ids** (idempotency keys): each rendered form carries ``submission =
  nonce.T.HMAC(secret, rater | item | nonce | T)`` with ``T`` the time it was rendered
  (ms, :func:`new_form_id`); the server accepts only ids it issued for that rater and
  item (:func:`check_form_id`, which returns ``T``: how long the answer took is measured
  by the server, a client cannot shorten it) and records each at most once (a UNIQUE key
  in the store), so a double click or a retry is a no-op.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

__all__ = ["check_csrf", "check_form_id", "cookie_names", "csrf_token", "new_form_id", "new_token",
           "study_id_of"]


def new_token() -> str:
    """A fresh random token (URL-safe, 24 characters)."""
    return secrets.token_urlsafe(18)


def study_id_of(secret: str) -> str:
    """A study's public id (10 hex digits): a hash of its secret, stable for the file."""
    return hashlib.sha256(f"ieqa-studio-id:{secret}".encode()).hexdigest()[:10]


def cookie_names(study_id: str) -> tuple[str, str]:
    """``(rater cookie, admin cookie)`` of a study: ``ieqa_<id>_rater``, ``ieqa_<id>_admin``."""
    return f"ieqa_{study_id}_rater", f"ieqa_{study_id}_admin"


def _mac(secret: str, *parts: str) -> str:
    msg = "\x1f".join(parts).encode()
    return hmac.new(secret.encode(), msg, hashlib.sha256).hexdigest()[:40]


def csrf_token(secret: str, session_token: str, purpose: str = "csrf") -> str:
    """The CSRF token of a session (rater or admin cookie value) for one ``purpose``
    (``csrf`` for the forms; ``switch`` for the invite confirmation, also bound to the
    new invite token)."""
    return _mac(secret, purpose, study_id_of(secret), session_token)


def check_csrf(secret: str, session_token: str, given: str | None, purpose: str = "csrf") -> bool:
    """True when ``given`` is the session's CSRF token (constant-time comparison)."""
    return bool(given) and hmac.compare_digest(csrf_token(secret, session_token, purpose), str(given))


def new_form_id(secret: str, rater: str, item: int, now: float | None = None) -> str:
    """A new idempotency key for one rendering of ``rater``'s form for ``item`` at time
    ``now`` (seconds since the epoch; default: now)."""
    nonce = secrets.token_urlsafe(12)
    shown = str(int(round((time.time() if now is None else now) * 1000)))
    return f"{nonce}.{shown}.{_mac(secret, 'form', rater, str(item), nonce, shown)}"


def check_form_id(secret: str, rater: str, item: int, form_id: str | None) -> float | None:
    """When ``form_id`` was issued by :func:`new_form_id` for ``rater`` and ``item``: the
    time it was rendered (seconds since the epoch); else None."""
    if not form_id or form_id.count(".") != 2 or len(form_id) > 120:
        return None
    nonce, shown, mac = form_id.split(".")
    if not (shown.isdigit() and len(shown) <= 16):
        return None
    if not hmac.compare_digest(_mac(secret, "form", rater, str(item), nonce, shown), mac):
        return None
    return int(shown) / 1000
