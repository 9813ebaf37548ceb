"""The authentication and authorization filters kube-apiserver runs before a handler, and the
handlers that answer about them: TokenRequest (`serviceaccounts/token`), TokenReview,
SelfSubjectReview, and the access reviews (`kubectl auth can-i`).

Without an admin token `serve` is open, as it always was: a request is the admin unless it
carries a ServiceAccount token this server issued, so an operator's RBAC can still be tried."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from kubesched.apiserver.errors import APIError
from kubesched.server import protobuf, rbac
from kubesched.server import status as st
from kubesched.server.authn import (
    ADMIN,
    ANONYMOUS,
    ANONYMOUS_USER,
    AUDIENCES,
    AUTHENTICATED,
    SA_PREFIX,
    UNAUTHENTICATED,
    Tokens,
    User,
    service_account_user,
)
from kubesched.server.requestinfo import Attributes, request_info

AUTHZ = "authorization.k8s.io"
AUTHN = "authentication.k8s.io"
MIN_TOKEN_SECONDS = 600
DEFAULT_TOKEN_SECONDS = 3600


def _json(obj: dict[str, Any], code: int = 200) -> web.Response:
    return web.Response(body=json.dumps(obj, separators=(",", ":")).encode(), status=code,
                        content_type="application/json")


def _status(answer: dict[str, Any]) -> web.Response:
    return _json(answer, answer["code"])


def forbidden(a: Attributes, reason: str = "") -> dict[str, Any]:
    """403 in upstream's words: `pods "p" is forbidden: User "u" cannot delete resource "pods"
    in API group "" in the namespace "ns"`."""
    if not a.resource_request:
        message = f'forbidden: User "{a.user}" cannot {a.verb} path "{a.path}"'
        return st.status(403, "Forbidden", message + (f": {reason}" if reason else ""), details={})
    resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    where = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
    why = f'User "{a.user}" cannot {a.verb} resource "{resource}" in API group "{a.group}" {where}'
    qualified = f"{a.resource}.{a.group}" if a.group else a.resource
    head = f'{qualified} "{a.name}"' if a.name else qualified
    details: dict[str, Any] = {"kind": a.resource}
    if a.name:
        details["name"] = a.name
    if a.group:
        details["group"] = a.group
    return st.status(403, "Forbidden", f"{head} is forbidden: {why}" + (f": {reason}" if reason else ""),
                     details=details)


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _review(kind: str, group: str, spec: dict[str, Any], status: dict[str, Any],
            metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"kind": kind, "apiVersion": f"{group}/v1", "metadata": {"creationTimestamp": None, **(metadata or {})},
            "spec": spec, "status": status}


class Gate:
    """Authenticates, impersonates and authorizes each request, and answers the auth APIs."""

    def __init__(self, engine: Any, token: str | None) -> None:
        self.engine = engine
        self.token = token
        self.store = engine.store
        self.tokens = Tokens(engine.meta)
        self.authorizer = rbac.Authorizer(self.store)
        self._bootstrap()

    # ---- policy ----------------------------------------------------------------------------

    def _bootstrap(self) -> None:
        """Create the bootstrap roles and bindings that are missing (kube-apiserver's
        `rbac/bootstrap-roles` post-start hook), then aggregate."""
        for obj in rbac.bootstrap_objects():
            if self.store.get(obj["kind"], "", obj["metadata"]["name"]) is None:
                self.engine.cluster.create(json.loads(json.dumps(obj)))
        self.reconcile()

    def reconcile(self) -> None:
        """The ClusterRole aggregation controller's pass."""
        for role in rbac.aggregate(self.store):
            self.engine.api.update(role)

    def authorize_attributes(self, asked: dict[str, Any]) -> tuple[bool, str]:
        """RBAC's answer to what admission policies' `authorizer` asks (see policycel.Authorize)."""
        return self.authorizer.authorize(Attributes(
            asked.get("user", ""), list(asked.get("groups") or ()), asked.get("verb", ""),
            resource_request=bool(asked.get("resource_request", True)), namespace=asked.get("namespace", ""),
            group=asked.get("group", ""), version="*", resource=asked.get("resource", ""),
            subresource=asked.get("subresource", ""), name=asked.get("name", ""), path=asked.get("path", "")))

    # ---- authentication --------------------------------------------------------------------

    def _service_account(self, claims: dict[str, Any]) -> tuple[User | None, str]:
        k8s = claims.get("kubernetes.io") or {}
        ns, sa = k8s.get("namespace", ""), (k8s.get("serviceaccount") or {})
        current = self.store.get("ServiceAccount", ns, sa.get("name", ""))
        if current is None or current["metadata"].get("uid", "") != sa.get("uid", ""):
            return None, f'service account {ns}/{sa.get("name", "")} has been deleted'
        extra = {"authentication.kubernetes.io/credential-id": [f"JTI={claims.get('jti', '')}"]}
        for bound in ("pod", "node"):
            if bound in k8s:
                extra[f"authentication.kubernetes.io/{bound}-name"] = [k8s[bound]["name"]]
                extra[f"authentication.kubernetes.io/{bound}-uid"] = [k8s[bound]["uid"]]
        return service_account_user(ns, sa["name"], sa.get("uid", ""), extra), ""

    def authenticate_token(self, token: str, audiences: list[str]) -> tuple[User | None, str]:
        if self.token is not None and token == self.token:
            return ADMIN, ""
        claims, why = self.tokens.verify(token, audiences)
        if claims is None:
            return None, why
        return self._service_account(claims)

    def authenticate(self, request: web.Request) -> User | None:
        header = request.headers.get("Authorization", "")
        bearer = header[7:].strip() if header.lower().startswith("bearer ") else None
        if self.token is None:  # open: the admin, unless a ServiceAccount token says otherwise
            if bearer and self.tokens.is_ours(bearer):
                return self.authenticate_token(bearer, AUDIENCES)[0]
            return ADMIN
        if bearer is None:
            return ANONYMOUS_USER
        return self.authenticate_token(bearer, AUDIENCES)[0]

    # ---- impersonation ---------------------------------------------------------------------

    def _impersonate(self, user: User, request: web.Request) -> User | dict[str, Any]:
        """The user the Impersonate-* headers ask for, once the `impersonate` verb allows each
        part; a Status to answer with otherwise."""
        headers = request.headers
        name = headers.get("Impersonate-User")
        groups = headers.getall("Impersonate-Group", [])
        uid = headers.get("Impersonate-Uid")
        extra = {k[len("Impersonate-Extra-"):].lower(): headers.getall(k)
                 for k in set(headers) if k.lower().startswith("impersonate-extra-")}
        if name is None:
            if groups or uid or extra:
                return st.status(500, "InternalError", "Internal error occurred: requested "
                                 f"{{Groups: {groups}, UID: {uid or ''}}} without impersonating a user")
            return user
        checks: list[Attributes] = []
        if name.startswith(SA_PREFIX) and name.count(":") == 3:
            ns, sa = name[len(SA_PREFIX):].split(":")
            checks.append(Attributes(user.name, user.groups, "impersonate", namespace=ns, resource="serviceaccounts",
                                     name=sa))
        else:
            checks.append(Attributes(user.name, user.groups, "impersonate", resource="users", name=name))
        checks += [Attributes(user.name, user.groups, "impersonate", resource="groups", name=g) for g in groups]
        if uid:
            checks.append(Attributes(user.name, user.groups, "impersonate", resource="uids", name=uid))
        for key, values in extra.items():
            checks += [Attributes(user.name, user.groups, "impersonate", group=AUTHN, resource="userextras",
                                  subresource=key, name=v) for v in values]
        for a in checks:
            a.extra, a.uid = user.extra, user.uid
            if not self.authorizer.authorize(a)[0]:
                return forbidden(a)
        groups = list(groups)
        if name.startswith(SA_PREFIX) and name.count(":") == 3 and not groups:
            ns = name.split(":")[2]
            groups = ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]
        marker = UNAUTHENTICATED if name == ANONYMOUS else AUTHENTICATED
        if marker not in groups:
            groups.append(marker)
        return User(name, groups, uid or "", extra)

    # ---- the filter chain ------------------------------------------------------------------

    async def filter(self, request: web.Request) -> web.Response | None:
        """None to go on to the handler; the answer otherwise (401, 403, or an auth API's)."""
        user = self.authenticate(request)
        if user is None:
            return _status(st.status(401, "Unauthorized", "Unauthorized"))
        impersonated = self._impersonate(user, request)
        if isinstance(impersonated, dict):
            return _status(impersonated)
        user = impersonated
        request["user"] = user
        a = request_info(request.method, request.path, request.query)
        a.user, a.groups, a.uid, a.extra = user.name, user.groups, user.uid, user.extra
        allowed, _ = self.authorizer.authorize(a)
        if not allowed:
            return _status(forbidden(a))
        if a.resource_request and a.verb == "create":
            return await self._handle(request, a, user)
        return None

    def after(self, request: web.Request) -> None:
        """A write to a ClusterRole may change what aggregated roles hold."""
        if request.method != "GET" and "/clusterroles" in request.path:
            self.reconcile()

    # ---- the auth APIs ---------------------------------------------------------------------

    async def _handle(self, request: web.Request, a: Attributes, user: User) -> web.Response | None:
        key = (a.group, a.resource, a.subresource)
        handlers = {
            ("", "serviceaccounts", "token"): self._token_request,
            (AUTHN, "tokenreviews", ""): self._token_review,
            (AUTHN, "selfsubjectreviews", ""): self._self_subject_review,
            (AUTHZ, "selfsubjectaccessreviews", ""): self._access_review,
            (AUTHZ, "subjectaccessreviews", ""): self._access_review,
            (AUTHZ, "localsubjectaccessreviews", ""): self._access_review,
            (AUTHZ, "selfsubjectrulesreviews", ""): self._rules_review,
        }
        handler = handlers.get(key)
        if handler is None or a.version != "v1":
            return None
        raw = await request.read()
        try:
            if raw and "protobuf" in request.headers.get("Content-Type", ""):
                body: Any = protobuf.decode_body(raw)
            else:
                body = json.loads(raw or b"{}")
        except APIError as e:
            return _status(st.from_error(e))
        except ValueError as e:
            return _status(st.bad_request(f"json parse error: {e}"))
        if not isinstance(body, dict):
            return _status(st.bad_request("expected an object"))
        return handler(a, user, body)

    def _token_request(self, a: Attributes, user: User, body: dict[str, Any]) -> web.Response:
        sa = self.store.get("ServiceAccount", a.namespace, a.name)
        if sa is None:
            return _status(st.status(404, "NotFound", f'serviceaccounts "{a.name}" not found',
                                     details={"name": a.name, "kind": "serviceaccounts"}))
        spec = dict(body.get("spec") or {})
        seconds = int(spec.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS)
        if seconds < MIN_TOKEN_SECONDS:
            message = (f'TokenRequest.authentication.k8s.io "{a.name}" is invalid: spec.expirationSeconds: '
                       f"Invalid value: {seconds}: may not specify a duration less than 10 minutes")
            return _status(st.status(422, "Invalid", message, details={
                "name": a.name, "group": AUTHN, "kind": "TokenRequest",
                "causes": [{"reason": "FieldValueInvalid", "message": f"Invalid value: {seconds}: may not specify "
                            "a duration less than 10 minutes", "field": "spec.expirationSeconds"}]}))
        audiences = spec.get("audiences") or list(AUDIENCES)
        bound = spec.get("boundObjectRef")
        token, expiry = self.tokens.issue(sa, audiences, seconds, bound)
        spec.update(audiences=audiences, expirationSeconds=seconds, boundObjectRef=bound)
        meta = {"name": a.name, "namespace": a.namespace, "creationTimestamp": _rfc3339(time.time())}
        answer = _review("TokenRequest", AUTHN, spec, {"token": token,
                                                       "expirationTimestamp": _rfc3339(expiry)}, meta)
        return _json(answer, 201)

    def _token_review(self, a: Attributes, user: User, body: dict[str, Any]) -> web.Response:
        spec = body.get("spec") or {}
        audiences = spec.get("audiences") or list(AUDIENCES)
        found, why = self.authenticate_token(str(spec.get("token", "")), audiences)
        status: dict[str, Any] = {"authenticated": True, "user": found.info(), "audiences": audiences} \
            if found else {"user": {}, "error": why or "invalid bearer token"}
        return _json(_review("TokenReview", AUTHN, spec, status), 201)

    def _self_subject_review(self, a: Attributes, user: User, body: dict[str, Any]) -> web.Response:
        return _json({"kind": "SelfSubjectReview", "apiVersion": f"{AUTHN}/v1",
                      "metadata": {"creationTimestamp": None}, "status": {"userInfo": user.info()}}, 201)

    def _access_review(self, a: Attributes, user: User, body: dict[str, Any]) -> web.Response:
        spec = body.get("spec") or {}
        kind = {"selfsubjectaccessreviews": "SelfSubjectAccessReview", "subjectaccessreviews": "SubjectAccessReview",
                "localsubjectaccessreviews": "LocalSubjectAccessReview"}[a.resource]
        if kind == "SelfSubjectAccessReview":
            who = user
        else:
            if not spec.get("user") and not spec.get("groups"):
                return _status(st.status(422, "Invalid", f'{kind}.{AUTHZ} "" is invalid: spec.user: Invalid value: '
                                         '"": at least one of user or group must be specified'))
            who = User(spec.get("user", ""), list(spec.get("groups") or []), spec.get("uid", ""),
                       spec.get("extra") or {})
        res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if (res is None) == (non is None):
            return _status(st.status(422, "Invalid", f'{kind}.{AUTHZ} "" is invalid: spec.resourceAttributes: '
                                     'Invalid value: "null": exactly one of nonResourceAttributes or '
                                     "resourceAttributes must be specified"))
        if res is not None:
            if kind == "LocalSubjectAccessReview" and res.get("namespace", "") != a.namespace:
                return _status(st.status(400, "BadRequest", f"spec.resourceAttributes.namespace must match "
                                         f"namespace: {a.namespace}"))
            asked = Attributes(who.name, who.groups, res.get("verb", ""), namespace=res.get("namespace", ""),
                               group=res.get("group", ""), version=res.get("version", ""),
                               resource=res.get("resource", ""), subresource=res.get("subresource", ""),
                               name=res.get("name", ""))
        else:
            non = non or {}
            asked = Attributes(who.name, who.groups, non.get("verb", ""), resource_request=False,
                               path=non.get("path", ""))
        allowed, reason = self.authorizer.authorize(asked)
        status: dict[str, Any] = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        meta = {"namespace": a.namespace} if kind == "LocalSubjectAccessReview" else {}
        return _json(_review(kind, AUTHZ, spec, status, meta), 201)

    def _rules_review(self, a: Attributes, user: User, body: dict[str, Any]) -> web.Response:
        spec = body.get("spec") or {}
        resource_rules, non_resource_rules = [], []
        for rule in self.authorizer.rules_for(user.name, user.groups, spec.get("namespace", "")):
            if rule.get("nonResourceURLs"):
                non_resource_rules.append({"verbs": rule.get("verbs") or [], "nonResourceURLs": rule["nonResourceURLs"]})
            else:
                out = {"verbs": rule.get("verbs") or [], "apiGroups": rule.get("apiGroups") or [],
                       "resources": rule.get("resources") or []}
                if rule.get("resourceNames"):
                    out["resourceNames"] = rule["resourceNames"]
                resource_rules.append(out)
        status = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": False}
        return _json(_review("SelfSubjectRulesReview", AUTHZ, spec, status), 201)
