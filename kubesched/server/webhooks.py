"""MutatingAdmissionWebhook and ValidatingAdmissionWebhook for `serve`: the writes clients make
(create, update, patch, apply, delete, the status subresource) call the webhooks that
MutatingWebhookConfigurations and ValidatingWebhookConfigurations register, as kube-apiserver
v1.35 does (apiserver/pkg/admission/plugin/webhook).

Bindings and evictions (pods/binding, pods/eviction) are sent as CREATEs of those subresources
carrying the Binding or Eviction, whoever makes them; a scale write as an UPDATE of
`<resource>/scale` carrying the autoscaling/v1 Scale (apiserver/scale.py), whose patch sets the
object's replicas. Of the other writes serve's own components
make, the pods the workload controllers create and the autoscaler's scale writes are sent too
(with the loopback identity kube-apiserver's own clients have; the scheduler's bindings carry
system:kube-scheduler): a refused pod is reported as upstream's controllers report it, a
FailedCreate event and a retry, a refused binding as a scheduling failure and a retry, a refused
scale as a FailedRescale event. Their other writes (status, the kubelets'
deletions, leases) are not: the simulated components do not retry a refused write of those as the
real ones do, and a webhook refusing them would stall the simulation.

Configurations are taken in name order, their webhooks in order. A matching webhook gets an
AdmissionReview (v1, or v1beta1 if that is the first its `admissionReviewVersions` lists) with
the requester's userInfo. Mutating webhooks run one after another, each seeing the
previous one's patch, and those with `reinvocationPolicy: IfNeeded` run once more when a later
one changed the object; validating webhooks run after validation. The admissionregistration
kinds themselves are never sent to webhooks, so a broken webhook can always be removed.

A client's write that may call a webhook runs on a turn of its own (server.turns): while the
webhook is called, serve goes on serving, so a webhook that reads from serve (or writes to it)
while it is being called is answered; the write is then stored only if its object did not change
meanwhile (an update or patch without a resourceVersion, or a delete, is judged again on the new
object, as upstream retries them). A component's write calls its webhooks on the engine's
thread, which waits (at most `timeoutSeconds`).
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesched.api.objects import Obj, deep_copy
from kubesched.api.restmapping import RESOURCES, Resource, for_kind
from kubesched.api.served import resource_kind
from kubesched.apiserver.caller import LOOPBACK_USER, POD_ACTIONS, Caller
from kubesched.apiserver.errors import APIError, BadRequest, Forbidden
from kubesched.server import turns, versions, webhookclient
from kubesched.server.patch import json_patch
from kubesched.server.webhookmatch import (
    GVR,
    ConditionError,
    conditions_match,
    namespace_matches,
    object_matches,
    rules_match,
)
from kubesched.store.base import Store, WatchEvent

MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"
ADMISSION_GROUP = "admissionregistration.k8s.io"
REVIEW_VERSIONS = ("v1", "v1beta1")
# Never sent to webhooks (IsExemptAdmissionConfigurationResource).
EXEMPT_RESOURCES = frozenset({"validatingwebhookconfigurations", "mutatingwebhookconfigurations",
                              "validatingadmissionpolicies", "validatingadmissionpolicybindings",
                              "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"})
POD = for_kind("v1", "Pod")
OPTIONS_KINDS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class InternalError(APIError):
    """apierrors.NewInternalError: 500 with `Internal error occurred: ...`."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Internal error occurred: {reason}", [reason])


class WebhookDenied(APIError):
    """The Status a webhook refused with, its message prefixed as webhookerrors.ToStatusErr does."""

    def __init__(self, name: str, status: Any) -> None:
        status = status if isinstance(status, dict) else {}
        denied = f'admission webhook "{name}" denied the request'
        if status.get("message"):
            message = f"{denied}: {status['message']}"
        elif status.get("reason"):
            message = f"{denied}: {status['reason']}"
        else:
            message = f"{denied} without explanation"
        super().__init__(message)
        code = status.get("code")
        self.code = code if isinstance(code, int) and code >= 400 else 400
        self.reason = str(status.get("reason") or "")


class _CallFailed(Exception):
    """ErrCallingWebhook: the call failed; the webhook's failurePolicy decides what follows."""


@dataclass
class _Attributes:
    operation: str
    gvr: GVR
    request_gvr: GVR
    subresource: str
    name: str
    namespace: str
    user: Obj
    dry_run: bool
    options: Obj
    caller: Caller | None
    # The kind a request of a subresource carries when it is not the resource's own: a Binding or
    # an Eviction (of pods), a Scale (of the scaled resource).
    carried: Obj | None = None


def _gvr(r: Resource) -> GVR:
    return GVR(r.group, r.version, r.plural, r.kind, r.namespaced)


def _group_version_kind(gvr: GVR) -> Obj:
    return {"group": gvr.group, "version": gvr.version, "kind": gvr.kind}


def _group_version_resource(gvr: GVR) -> Obj:
    return {"group": gvr.group, "version": gvr.version, "resource": gvr.resource}


class Webhooks:
    """The WebhookAdmission the API server calls in serve."""

    def __init__(self, store: Store, custom: Callable[[str, str], Resource | None]) -> None:
        """`custom` finds a custom resource by apiVersion and kind."""
        self.store = store
        self.custom = custom
        self._configured: dict[str, list[tuple[str, Obj]]] = {}  # by kind; dropped on any change
        store.watch(self._changed, (MUTATING, VALIDATING))

    def _changed(self, _: WatchEvent) -> None:
        self._configured = {}

    def active(self) -> bool:
        """Whether any webhook is registered: a write may then wait on one (see turns)."""
        return bool(self._hooks(MUTATING) or self._hooks(VALIDATING))

    # ---- the two phases ------------------------------------------------------------------------

    def mutate(self, operation: str, obj: Obj | None, old: Obj | None, caller: Caller | None,
               subresource: str = "") -> Obj | None:
        hooks = self._hooks(MUTATING)
        attrs = self._attributes(operation, obj, old, caller, subresource) if hooks else None
        if attrs is None:
            return obj
        current = obj
        invoked: list[str] = []  # IfNeeded webhooks called since the last change
        reinvoke: set[str] = set()
        for key, hook in hooks:
            gvr = self._should_call(hook, attrs, current, old)
            if gvr is None:
                continue
            patched = self._call_mutating(hook, attrs, gvr, current, old)
            if patched is not current and patched != current:
                reinvoke.update(invoked)
                invoked.clear()
            current = patched
            if hook.get("reinvocationPolicy") == "IfNeeded":
                invoked.append(key)
        for key, hook in hooks if reinvoke else ():
            if key in reinvoke and (gvr := self._should_call(hook, attrs, current, old)) is not None:
                current = self._call_mutating(hook, attrs, gvr, current, old)
        return current

    def validate(self, operation: str, obj: Obj | None, old: Obj | None, caller: Caller | None,
                 subresource: str = "") -> None:
        hooks = self._hooks(VALIDATING)
        attrs = self._attributes(operation, obj, old, caller, subresource) if hooks else None
        if attrs is None:
            return
        for _, hook in hooks:
            gvr = self._should_call(hook, attrs, obj, old)
            if gvr is None:
                continue
            try:
                response = self._call(hook, attrs, gvr, obj, old, mutating=False)
            except _CallFailed as e:
                self._failed(hook, str(e))
                continue
            if not response.get("allowed"):
                raise WebhookDenied(str(hook.get("name", "")), response.get("status"))

    # ---- which webhooks ------------------------------------------------------------------------

    def _hooks(self, kind: str) -> list[tuple[str, Obj]]:
        """Every webhook of every configuration of `kind`, configurations in name order."""
        if (known := self._configured.get(kind)) is not None:
            return known
        out: list[tuple[str, Obj]] = []
        self._configured[kind] = out
        configs = sorted(self.store.list(kind), key=lambda c: c["metadata"]["name"])
        for config in configs:
            for i, hook in enumerate(config.get("webhooks") or ()):
                if isinstance(hook, dict):
                    out.append((f"{config['metadata']['name']}/{i}", hook))
        return out

    def _resource_of(self, obj: Obj, caller: Caller | None) -> Resource | None:
        api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
        asked = caller.resource if caller is not None else None
        if asked is not None and asked.kind == kind and (
                asked.api_version == api_version or asked.stored_as == resource_kind(obj)):
            return asked
        return for_kind(api_version, kind) or self.custom(api_version, kind)

    def _attributes(self, operation: str, obj: Obj | None, old: Obj | None, caller: Caller | None,
                    subresource: str) -> _Attributes | None:
        subject = obj if obj is not None else old
        if subject is None:
            return None
        action = subresource in POD_ACTIONS  # a Binding or an Eviction, sent as pods/<subresource>
        if caller is None and not (operation == "CREATE" and (action or not subresource and subject.get("kind") == "Pod")):
            return None  # a component's write other than a pod, binding or eviction (see the module's docstring)
        carries = action or (caller is not None and caller.scale is not None)  # an object of another kind
        if action:
            resource: Resource | None = POD
        elif caller is not None and caller.scale is not None:  # a Scale, of the resource the URL names
            resource = caller.resource
        else:
            resource = self._resource_of(subject, caller)
        if resource is None or (resource.group == ADMISSION_GROUP and resource.plural in EXEMPT_RESOURCES):
            return None
        gvr = _gvr(resource)
        meta = subject.get("metadata") or {}
        options: Obj = {"kind": OPTIONS_KINDS.get(operation, "CreateOptions"), "apiVersion": "meta.k8s.io/v1"}
        if caller is not None:
            options.update(caller.options)
        asked = caller.resource if caller is not None else None
        request_gvr = _gvr(asked) if asked is not None and asked.kind == gvr.kind else gvr
        group, _, version = str(subject.get("apiVersion") or "").rpartition("/")
        carried = {"group": group, "version": version, "kind": str(subject.get("kind") or "")} if carries else None
        return _Attributes(operation, gvr, request_gvr, subresource, str(meta.get("name") or ""),
                           str(meta.get("namespace") or ""), caller.user if caller is not None else LOOPBACK_USER,
                           caller is not None and caller.dry_run, options, caller, carried)

    def _equivalents(self, gvr: GVR) -> list[GVR]:
        """The resource, then the same objects at the other group/versions serve offers."""
        same = [_gvr(r) for r in RESOURCES if r.kind == gvr.kind and r.plural == gvr.resource
                and (r.group, r.version) != (gvr.group, gvr.version)]
        return [gvr, *same]

    def _should_call(self, hook: Obj, attrs: _Attributes, obj: Obj | None, old: Obj | None) -> GVR | None:
        """The resource the webhook is called with, or None when it does not match (ShouldCallHook)."""
        candidates = [attrs.gvr] if hook.get("matchPolicy") == "Exact" else self._equivalents(attrs.gvr)
        gvr = next((c for c in candidates if rules_match(hook, attrs.operation, c, attrs.subresource,
                                                         attrs.namespace)), None)
        if gvr is None:
            return None
        if not namespace_matches(hook, attrs.gvr, attrs.subresource, attrs.namespace, obj, old, self.store):
            return None
        if not object_matches(hook, obj, old):
            return None
        try:
            matched = conditions_match(hook, obj, old, self._request(attrs, gvr, None, None))
        except ConditionError as e:
            if hook.get("failurePolicy") == "Ignore":
                return None
            resource = attrs.gvr.resource + (f".{attrs.gvr.group}" if attrs.gvr.group else "")
            raise Forbidden(f'{resource} "{attrs.name}" is forbidden: failed calling webhook '
                            f'"{hook.get("name", "")}": {e}') from None
        return gvr if matched else None

    # ---- calling -------------------------------------------------------------------------------

    def _request(self, attrs: _Attributes, gvr: GVR, obj: Obj | None, old: Obj | None) -> Obj:
        request: Obj = {"uid": str(uuid.uuid4()), "kind": attrs.carried or _group_version_kind(gvr),
                        "resource": _group_version_resource(gvr)}
        if attrs.subresource:
            request["subResource"] = attrs.subresource
        request["requestKind"] = attrs.carried or _group_version_kind(attrs.request_gvr)
        request["requestResource"] = _group_version_resource(attrs.request_gvr)
        if attrs.subresource:
            request["requestSubResource"] = attrs.subresource
        request["name"] = attrs.name
        if attrs.namespace:
            request["namespace"] = attrs.namespace
        request.update(operation=attrs.operation, userInfo=attrs.user, object=obj, oldObject=old,
                       dryRun=attrs.dry_run, options=attrs.options)
        return request

    @staticmethod
    def _as_version(obj: Obj | None, gvr: GVR) -> Obj | None:
        """The object as the matched group/version shows it (a Binding or Eviction as it is)."""
        if obj is None or obj.get("kind") != gvr.kind:
            return obj
        return versions.convert(obj, f"{gvr.group}/{gvr.version}" if gvr.group else gvr.version)

    def _call(self, hook: Obj, attrs: _Attributes, gvr: GVR, obj: Obj | None, old: Obj | None,
              mutating: bool) -> Obj:
        """One call; the verified response. Raises _CallFailed (failurePolicy applies) or the
        dry-run refusal."""
        name = str(hook.get("name", ""))
        if attrs.dry_run:
            side_effects = hook.get("sideEffects")
            if side_effects is None:
                raise _CallFailed("Webhook SideEffects is nil")
            if side_effects not in ("None", "NoneOnDryRun"):
                raise BadRequest(f'admission webhook "{name}" does not support dry run')
        versions = [v for v in hook.get("admissionReviewVersions") or () if v in REVIEW_VERSIONS]
        if not versions:
            raise _CallFailed("could not create admission objects: webhook does not accept known AdmissionReview "
                              "versions (v1, v1beta1)")
        version = versions[0]
        request = self._request(attrs, gvr, self._as_version(obj, gvr), self._as_version(old, gvr))
        review = {"kind": "AdmissionReview", "apiVersion": f"admission.k8s.io/{version}", "request": request}
        timeout = hook.get("timeoutSeconds")
        timeout = timeout if isinstance(timeout, int) and timeout > 0 else 10
        try:
            target = webhookclient.target(hook.get("clientConfig") or {}, self.store, timeout)
            ca_bundle = (hook.get("clientConfig") or {}).get("caBundle")
            if attrs.caller is None or attrs.caller.resource is None:  # a component's write: on the engine's thread
                answer = webhookclient.post(target, ca_bundle, review, float(timeout))
            else:
                with turns.away():  # serve goes on meanwhile; the webhook may call back into it
                    answer = webhookclient.post(target, ca_bundle, review, float(timeout))
        except webhookclient.CallError as e:
            raise _CallFailed(str(e)) from None
        try:
            response = _verify(answer, request["uid"], version, mutating)
        except ValueError as e:
            raise _CallFailed(f"received invalid webhook response: {e}") from None
        if attrs.caller is not None:  # each text once, as the request's warning recorder keeps them
            warnings = attrs.caller.warnings
            warnings.extend(w for w in dict.fromkeys(str(w) for w in response.get("warnings") or () if w)
                            if w not in warnings)
        return response

    def _call_mutating(self, hook: Obj, attrs: _Attributes, gvr: GVR, obj: Obj | None, old: Obj | None) -> Obj | None:
        """`obj` patched as the webhook answers; `obj` itself when the call failed open or
        returned no patch."""
        name = str(hook.get("name", ""))
        try:
            response = self._call(hook, attrs, gvr, obj, old, mutating=True)
            if not response.get("allowed"):
                raise WebhookDenied(name, response.get("status"))
            if not response.get("patch"):
                return obj
            try:
                ops = json.loads(base64.b64decode(str(response["patch"]), validate=True))
            except (binascii.Error, ValueError) as e:
                raise _CallFailed(f"received undecodable patch in webhook response: {e}") from None
        except _CallFailed as e:
            self._failed(hook, str(e))
            return obj
        if not ops:
            return obj
        if obj is None:
            raise InternalError(f'admission webhook "{name}" attempted to modify the object, which is not '
                                f"supported for this operation")
        try:
            patched = json_patch(deep_copy(self._as_version(obj, gvr) or {}), ops)
        except APIError as e:
            raise InternalError(e.message) from None
        return versions.convert(patched, str(obj.get("apiVersion") or ""))  # back to the version being written

    @staticmethod
    def _failed(hook: Obj, reason: str) -> None:
        """failurePolicy: Ignore goes on without the webhook, Fail (the default) refuses."""
        if hook.get("failurePolicy") != "Ignore":
            raise InternalError(f'failed calling webhook "{hook.get("name", "")}": {reason}')


def _verify(answer: Obj, uid: str, version: str, mutating: bool) -> Obj:
    """The response of a review, checked as VerifyAdmissionResponse does; raises ValueError."""
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ValueError("webhook response was absent")
    if response.get("uid") != uid:
        raise ValueError(f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
    expected = f"admission.k8s.io/{version}"
    if answer.get("apiVersion") != expected or answer.get("kind") != "AdmissionReview":
        raise ValueError(f"expected webhook response of {expected}, Kind=AdmissionReview, got "
                         f"{answer.get('apiVersion', '')}, Kind={answer.get('kind', '')}")
    patch_type = response.get("patchType") or ("JSONPatch" if version == "v1beta1" and response.get("patch") else "")
    if response.get("patch") and not patch_type:
        raise ValueError("webhook returned response.patch but not response.patchType")
    if patch_type and not response.get("patch"):
        raise ValueError("webhook returned response.patchType but not response.patch")
    if patch_type and not mutating:
        raise ValueError("validating webhook may not return response.patch")
    if patch_type and patch_type != "JSONPatch":
        raise ValueError(f'webhook returned invalid response.patchType of "{patch_type}"')
    return response
