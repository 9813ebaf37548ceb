"""Who a request is: the admin's bearer token, a ServiceAccount token this server issued
(TokenRequest, `kubectl create token`), or anonymous; then impersonation on top.

ServiceAccount tokens are JWTs as kube-apiserver issues them (issuer, audiences, expiry, the
`kubernetes.io` claim naming the ServiceAccount and its uid), signed with HMAC-SHA256 under a
key kept in the data file, so a token outlives a restart and dies with its ServiceAccount."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

ISSUER = "https://kubernetes.default.svc.cluster.local"
AUDIENCES = [ISSUER]  # kube-apiserver's --api-audiences default: the issuer
ANONYMOUS = "system:anonymous"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
SA_PREFIX = "system:serviceaccount:"
KEY = "serviceaccount-signing-key"


@dataclass
class User:
    name: str
    groups: list[str]
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict)

    def info(self) -> dict[str, Any]:
        """The UserInfo reviews answer with (empty fields omitted)."""
        out: dict[str, Any] = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = self.groups
        if self.extra:
            out["extra"] = self.extra
        return out


# kubeadm's admin.conf identity: the group system:masters is what makes it the superuser.
ADMIN = User("kubernetes-admin", ["system:masters", AUTHENTICATED])
ANONYMOUS_USER = User(ANONYMOUS, [UNAUTHENTICATED])


def service_account_user(namespace: str, name: str, uid: str = "",
                         extra: dict[str, list[str]] | None = None) -> User:
    return User(f"{SA_PREFIX}{namespace}:{name}",
                ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED], uid, extra or {})


class Meta(Protocol):
    def meta_get(self, key: str) -> str | None: ...

    def meta_set(self, key: str, value: str) -> None: ...


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Tokens:
    def __init__(self, meta: Meta) -> None:
        key = meta.meta_get(KEY)
        if key is None:
            key = secrets.token_hex(32)
            meta.meta_set(KEY, key)
        self.key = bytes.fromhex(key)
        self.kid = hashlib.sha256(self.key).hexdigest()[:16]

    def _sign(self, signing_input: str) -> str:
        return _b64(hmac.new(self.key, signing_input.encode(), hashlib.sha256).digest())

    def issue(self, sa: dict[str, Any], audiences: list[str], seconds: int,
              bound: dict[str, Any] | None = None) -> tuple[str, int]:
        """(token, expiry in Unix seconds) for a ServiceAccount object."""
        now = int(time.time())
        meta = sa["metadata"]
        claim: dict[str, Any] = {"namespace": meta.get("namespace", ""),
                                 "serviceaccount": {"name": meta["name"], "uid": meta.get("uid", "")}}
        if bound and bound.get("kind") in ("Pod", "Secret", "Node"):
            claim[bound["kind"].lower()] = {"name": bound.get("name", ""), "uid": bound.get("uid", "")}
        payload = {"aud": audiences, "exp": now + seconds, "iat": now, "nbf": now, "iss": ISSUER,
                   "jti": str(uuid.uuid4()), "kubernetes.io": claim,
                   "sub": f"{SA_PREFIX}{meta.get('namespace', '')}:{meta['name']}"}
        head = _b64(json.dumps({"alg": "HS256", "kid": self.kid}, separators=(",", ":")).encode())
        body = _b64(json.dumps(payload, separators=(",", ":")).encode())
        return f"{head}.{body}.{self._sign(f'{head}.{body}')}", now + seconds

    def verify(self, token: str, audiences: list[str]) -> tuple[dict[str, Any] | None, str]:
        """(claims, "") for a token this server signed, unexpired, for one of the audiences;
        (None, why) otherwise."""
        parts = token.split(".")
        if len(parts) != 3:
            return None, "not a JWT"
        if not hmac.compare_digest(self._sign(f"{parts[0]}.{parts[1]}"), parts[2]):
            return None, "invalid signature"
        try:
            claims = json.loads(_unb64(parts[1]))
        except ValueError:
            return None, "malformed claims"
        if not isinstance(claims, dict) or claims.get("iss") != ISSUER:
            return None, "not issued by this server"
        if int(claims.get("exp", 0)) < time.time():
            return None, "token has expired"
        if not set(claims.get("aud") or []) & set(audiences):
            return None, "token audiences do not match"
        return claims, ""

    def is_ours(self, token: str) -> bool:
        """Whether a token carries this server's signature at all (expired or not)."""
        parts = token.split(".")
        return len(parts) == 3 and hmac.compare_digest(self._sign(f"{parts[0]}.{parts[1]}"), parts[2])
