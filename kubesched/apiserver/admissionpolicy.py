"""The ValidatingAdmissionPolicy admission plugin (admission/plugin/policy/validating): every
policy with a binding that selects the request runs its CEL validations, once per parameter
object the binding refers to, and the binding's validationActions say what a failure does:
`Deny` refuses the request, `Warn` adds a warning to the answer, `Audit` (kube-apiserver's audit
log, which is not kept here) nothing.

A refusal is worded as upstream's: `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy
'<policy>' with binding '<binding>' denied request: <message>`, with the validation's `reason`
deciding the code (Invalid, 422, when it gives none). A policy or binding takes effect as soon as
it is stored (kube-apiserver's informers take a moment), and its status says it has been
observed. Writes by the components inside the process are judged too, as their writes are
upstream, with the loopback identity admission webhooks see too (caller.py); `authorizer` asks
the caller's authorizer (serve's RBAC).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kubesched.api import policycel, policytypes
from kubesched.api.crd import definition as crd_definition
from kubesched.api.fieldschema import model_of
from kubesched.api.policymatch import MatchError, Request, matches
from kubesched.api.restmapping import RESOURCES, for_kind, lookup
from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.api.served import resource_kind
from kubesched.apiserver.caller import LOOPBACK_USER, POD_ACTIONS, Caller
from kubesched.apiserver.customresources import CustomResources
from kubesched.apiserver.errors import APIError
from kubesched.store.base import Store, WatchEvent

Obj = dict[str, Any]
POLICY = "ValidatingAdmissionPolicy"
BINDING = "ValidatingAdmissionPolicyBinding"
_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}
MAX_MESSAGE_BYTES = 5 * 1024
MAX_TYPES_TO_CHECK = 10  # celconfig.MaxEvaluatedMessageExpressionSizeBytes
_OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}




class PolicyDenied(APIError):
    """A refusal: admission.NewForbidden's message, with the code and reason of the validation."""

    def __init__(self, message: str, reason: str, name: str) -> None:
        super().__init__(message, [message.partition(" is forbidden: ")[2]])
        self.reason = reason
        self.code = _CODES.get(reason, 422)
        self.name = name


@dataclass
class Attributes:
    """One request as admission sees it: matching's view and the rest the CEL `request` holds."""

    match: Request
    kind: dict[str, str]  # group, version and kind of the objects it carries
    caller: Caller | None
    equivalents: list[Request]  # the request at the other group/versions serving its objects
    # The request as it was made, when a policy sees it at an equivalent resource (its
    # requestResource and requestKind), and its kind.
    requested: Request | None = None
    requested_kind: dict[str, str] | None = None


@dataclass
class _Decision:
    deny: bool
    message: str
    reason: str = ""
    audit: bool = False  # an auditAnnotation that failed: it denies whatever the binding's actions


class ValidatingAdmissionPolicies:
    def __init__(self, store: Store, custom: CustomResources) -> None:
        self.store = store
        self.custom = custom
        # An object at another group/version of its resource; serve plugs in the conversions of
        # the kinds whose versions differ in shape (Events, HorizontalPodAutoscalers).
        self.convert: Callable[[Obj, str], Obj] = _with_api_version
        self._bindings: dict[str, list[Obj]] | None = None  # by policy name; rebuilt after any change
        store.watch(self._changed, (POLICY, BINDING))

    def observe(self, policy: Obj) -> None:
        """The status upstream's type-checking controller writes once it has read a policy's
        generation (observed at once here): the warnings of its expressions' type checking."""
        warnings = self._type_warnings(policy.get("spec") or {})
        policy["status"] = {"observedGeneration": policy["metadata"].get("generation", 1),
                            "typeChecking": {"expressionWarnings": warnings} if warnings else {}}

    def _type_warnings(self, spec: Obj) -> list[Obj]:
        """TypeChecker.Check: each validation's expression and messageExpression checked against
        every kind the policy's rules name, with its variables typed by their expressions."""
        types = self._types_to_check(spec)
        if not types:
            return []
        params = self._param_type(spec.get("paramKind"))
        variables = [(str(v.get("name")), policycel.parsed(str(v.get("expression") or "")))
                     for v in spec.get("variables") or () if isinstance(v, dict)]
        environments = [(gvk, policytypes.Environment(typ, params, variables)) for gvk, typ in types]
        warnings = []
        for i, validation in enumerate(spec.get("validations") or ()):
            if not isinstance(validation, dict):
                continue
            for key in ("expression", "messageExpression"):
                text = str(validation.get(key) or "")
                tree = policycel.parsed(text) if text.strip() else None
                if tree is None:
                    continue
                found = [f"{g}/{v}, Kind={k}: {issues}\n" for (g, v, k), environment in environments
                         if (issues := environment.check(tree, text)) is not None]
                if found:
                    warnings.append({"fieldRef": f"spec.validations[{i}].{key}", "warning": "\n".join(found)})
        return warnings

    def _types_to_check(self, spec: Obj) -> list[tuple[tuple[str, str, str], policytypes.Type]]:
        """typesToCheck: the kinds the rules name without wildcards (subresources left out), at most
        MAX_TYPES_TO_CHECK, in group, version, kind order; those without a schema are skipped."""
        found: dict[tuple[str, str, str], policytypes.Type] = {}
        count = 0
        for rule in (spec.get("matchConstraints") or {}).get("resourceRules") or ():
            if not isinstance(rule, dict):
                continue
            groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
            resources = [r for r in rule.get("resources") or () if "*" not in str(r) and "/" not in str(r)]
            if any("*" in str(x) for x in (*groups, *versions)) or not (groups and versions and resources):
                continue
            for group in sorted(map(str, groups)):
                for version in sorted(map(str, versions)):
                    for resource in sorted(map(str, resources)):
                        for kind, typ in self._kinds_for(group, version, resource):
                            found[(group, version, kind)] = typ
                            count += 1
                            if count == MAX_TYPES_TO_CHECK:
                                return sorted(found.items())
        return sorted(found.items())

    def _kinds_for(self, group: str, version: str, resource: str) -> list[tuple[str, policytypes.Type]]:
        """The kind a resource serves and its type, when its schema is known."""
        res = lookup(group, version, resource)
        if res is not None:
            model = model_of(res.api_version, res.kind)
            return [(res.kind, policytypes.model_type(model))] if model is not None else []
        for crd in self.store.list(crd_definition.KIND):
            if crd_definition.group(crd) == group and crd_definition.plural(crd) == resource \
                    and version in crd_definition.served_versions(crd):
                schema = crd_definition.schema(crd, version)
                return [(crd_definition.kind(crd), policytypes.schema_type(schema))] if schema else []
        return []

    def _param_type(self, param_kind: Any) -> policytypes.Type | None:
        if not isinstance(param_kind, dict):
            return None
        api_version, kind = str(param_kind.get("apiVersion") or ""), str(param_kind.get("kind") or "")
        if (model := model_of(api_version, kind)) is not None:
            return policytypes.model_type(model)
        crd = self.custom.definition_of({"apiVersion": api_version, "kind": kind})
        schema = crd_definition.schema(crd, api_version.rpartition("/")[2]) if crd is not None else None
        return policytypes.schema_type(schema) if schema else None

    def _changed(self, _: WatchEvent) -> None:
        self._bindings = None

    def _by_policy(self) -> dict[str, list[Obj]]:
        if self._bindings is None:
            by: dict[str, list[Obj]] = {}
            for b in sorted(self.store.list(BINDING), key=lambda o: o["metadata"]["name"]):
                by.setdefault(str((b.get("spec") or {}).get("policyName") or ""), []).append(b)
            self._bindings = by
        return self._bindings

    def active(self) -> bool:
        """Whether any policy is bound."""
        return bool(self._by_policy())

    def validate(self, operation: str, obj: Obj | None, old: Obj | None, caller: Caller | None,
                 subresource: str = "") -> None:
        """Run every bound policy that selects the request (`obj` None for a DELETE, `old` for a
        CREATE); raises PolicyDenied for the first denial, adds Warn's warnings to `caller`."""
        by_policy = self._by_policy()
        if not by_policy:
            return
        attrs = self._attributes(operation, obj, old, caller, subresource)
        if attrs is None:
            return
        denied: list[tuple[Obj, Obj | None, _Decision]] = []
        for policy in sorted(self.store.list(POLICY), key=lambda o: o["metadata"]["name"]):
            bindings = by_policy.get(policy["metadata"]["name"])
            if bindings:
                denied += self._run(policy, bindings, attrs)
        if denied:
            policy, binding, decision = denied[0]
            where = f" with binding '{binding['metadata']['name']}'" if binding is not None else ""
            message = f"ValidatingAdmissionPolicy '{policy['metadata']['name']}'{where} denied request: " \
                      f"{decision.message}"
            req = attrs.match
            name = req.name or "Unknown"
            resource = f"{req.resource}.{req.group}" if req.group else req.resource
            raise PolicyDenied(f'{resource} "{name}" is forbidden: {message}', decision.reason or "Invalid", name)

    def _attributes(self, operation: str, obj: Obj | None, old: Obj | None, caller: Caller | None,
                    subresource: str) -> Attributes | None:
        """The request's resource, as the URL named it (the REST mapping or a
        CustomResourceDefinition naming the object's own otherwise); None for a kind no resource
        serves (nothing can select it)."""
        subject = obj if obj is not None else old
        assert subject is not None
        api_version, kind = str(subject.get("apiVersion") or ""), str(subject.get("kind") or "")
        group, _, version = api_version.rpartition("/")
        crd = self.custom.definition_of(subject)
        asked = caller.resource if caller is not None else None
        if subresource in POD_ACTIONS:  # a Binding or Eviction is a request of pods/<subresource>
            plural = "pods"
            gvk = {"group": group, "version": version, "kind": kind}
            group, version = "", "v1"
        elif caller is not None and caller.scale is not None and asked is not None:
            # a Scale is a request of <resource>/scale, the resource the URL names
            gvk = {"group": group, "version": version, "kind": kind}
            group, version, plural = asked.group, asked.version, asked.plural
        else:
            if asked is not None and asked.kind == kind and asked.api_version != api_version:
                # served at another group/version than stored: seen as the request's
                group, version, api_version = asked.group, asked.version, asked.api_version
                obj, old = self._converted(obj, api_version), self._converted(old, api_version)
            if crd is not None:
                plural = crd_definition.plural(crd)
            elif (res := for_kind(api_version, kind)) is not None:
                plural = res.plural
            else:
                return None
            gvk = {"group": group, "version": version, "kind": kind}
        meta = subject.get("metadata") or {}
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or "")
        if group == "" and kind == "Namespace":
            namespace = name if operation != "CREATE" else ""
        req = Request(operation, group, version, plural, subresource, name, namespace, obj, old)
        return Attributes(req, gvk, caller, self._equivalents(req, kind, crd))

    def _run(self, policy: Obj, bindings: list[Obj], attrs: Attributes) -> list[tuple[Obj, Obj | None, _Decision]]:
        spec = policy.get("spec") or {}
        fail = spec.get("failurePolicy", "Fail") != "Ignore"
        out: list[tuple[Obj, Obj | None, _Decision]] = []

        def config_error(message: str, binding: Obj | None) -> None:
            if fail:
                prefix = "failed to configure binding" if binding is not None else "failed to configure policy"
                out.append((policy, binding, _Decision(True, f"{prefix}: {message}")))

        constraints = spec.get("matchConstraints")
        if not isinstance(constraints, dict):
            config_error("policy contained no match constraints, a required field", None)
            return out
        try:
            matched = matches(constraints, attrs.match, self._namespace(attrs.match), attrs.equivalents)
        except MatchError as e:
            config_error(str(e), None)
            return out
        if matched is None:
            return out
        seen = self._as_matched(attrs, matched)
        for binding in bindings:
            bspec = binding.get("spec") or {}
            try:
                if isinstance(bspec.get("matchResources"), dict) and matches(
                        bspec["matchResources"], attrs.match, self._namespace(attrs.match), attrs.equivalents) is None:
                    continue
                params = self._params(spec.get("paramKind"), bspec.get("paramRef"), attrs.match.namespace)
            except (MatchError, _ConfigError) as e:
                config_error(str(e), binding)
                continue
            actions = bspec.get("validationActions") or []
            for param in params:
                for decision in self._evaluate(spec, seen, param, fail):
                    if not decision.deny:
                        continue
                    if "Deny" in actions or decision.audit:
                        out.append((policy, binding, decision))
                    if "Warn" in actions and attrs.caller is not None and not decision.audit:
                        attrs.caller.warnings.append(
                            f"Validation failed for ValidatingAdmissionPolicy '{policy['metadata']['name']}' "
                            f"with binding '{binding['metadata']['name']}': {decision.message}")
        return out

    def _as_matched(self, attrs: Attributes, matched: Request) -> Attributes:
        """The request as the policy sees it: at the equivalent group/version its rules named,
        the objects converted to it (the request's own resource stays its requestResource)."""
        if matched is attrs.match:
            return attrs
        api_version = f"{matched.group}/{matched.version}" if matched.group else matched.version
        view = replace(matched, object=self._converted(matched.object, api_version),
                       old_object=self._converted(matched.old_object, api_version))
        return Attributes(view, {**attrs.kind, "group": matched.group, "version": matched.version}, attrs.caller, [],
                          attrs.match, attrs.kind)

    def _converted(self, obj: Obj | None, api_version: str) -> Obj | None:
        return None if obj is None else self.convert(obj, api_version)

    def _equivalents(self, req: Request, kind: str, crd: Obj | None) -> list[Request]:
        """The request at the other group/versions serving the same objects: a definition's other
        served versions, or the built-in resources of the same name and kind."""
        if req.subresource:
            return []
        if crd is not None:
            others = [(req.group, v) for v in crd_definition.served_versions(crd) if v != req.version]
        else:
            others = [(r.group, r.version) for r in RESOURCES if r.plural == req.resource and r.kind == kind
                      and (r.group, r.version) != (req.group, req.version)]
        return [replace(req, group=g, version=v) for g, v in others]

    def _namespace(self, req: Request) -> Obj | None:
        if not req.namespace or req.is_namespace:
            return None
        return self.store.get("Namespace", "", req.namespace)

    # ---- parameters ----------------------------------------------------------------------------

    def _param_store(self, param_kind: Obj) -> tuple[str, bool] | None:
        """The store kind of a paramKind and whether it is namespaced; None if nothing serves it."""
        api_version, kind = str(param_kind.get("apiVersion") or ""), str(param_kind.get("kind") or "")
        res = for_kind(api_version, kind)
        if res is not None:
            return res.store_kind, res.namespaced
        crd = self.custom.definition_of({"apiVersion": api_version, "kind": kind})
        if crd is None:
            return None
        return resource_kind({"apiVersion": api_version, "kind": kind}), crd_definition.namespaced(crd)

    def _params(self, param_kind: Any, ref: Any, namespace: str) -> list[Obj | None]:
        """generic.CollectParams: the parameter objects a binding's paramRef names (none at all
        is refused when its parameterNotFoundAction is Deny); [None] without a paramKind or ref."""
        if not isinstance(param_kind, dict) or not isinstance(ref, dict):
            return [None]
        found = self._param_store(param_kind)
        if found is None:
            raise _ConfigError(f"paramKind kind `&ParamKind{{APIVersion:{param_kind.get('apiVersion', '')},"
                               f"Kind:{param_kind.get('kind', '')},}}` not known")
        store_kind, namespaced = found
        ns = ""
        if namespaced:
            ns = str(ref.get("namespace") or namespace)
            if not ns:
                raise _ConfigError("cannot use namespaced paramRef in policy binding that matches cluster-scoped "
                                   "resources")
        elif ref.get("namespace"):
            raise _ConfigError("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
        params: list[Obj | None]
        if ref.get("name"):
            param = self.store.get(store_kind, ns, str(ref["name"]))
            params = [param] if param is not None else []
        elif isinstance(ref.get("selector"), dict):
            try:
                selector = LabelSelector.compile(ref["selector"])
            except SelectorError as e:
                raise _ConfigError(str(e)) from None
            params = [o for o in self.store.list(store_kind, ns if namespaced else None)
                      if selector.matches((o.get("metadata") or {}).get("labels") or {})]
        else:
            raise _ConfigError("one of name or selector must be provided")
        if not params and ref.get("parameterNotFoundAction") == "Deny":
            raise _ConfigError("no params found for policy binding with `Deny` parameterNotFoundAction")
        return params

    # ---- evaluation ----------------------------------------------------------------------------

    def _evaluate(self, spec: Obj, attrs: Attributes, param: Obj | None, fail: bool) -> list[_Decision]:
        """validator.Validate for one parameter: matchConditions, then each validation."""
        req = attrs.match
        activation: dict[str, Any] = {
            "object": policycel.to_cel(req.object), "oldObject": policycel.to_cel(req.old_object),
            "request": policycel.to_cel(_admission_request(attrs)), "params": policycel.to_cel(param),
            "namespaceObject": policycel.to_cel(_namespace_object(self._namespace(req))),
        }
        variables = [(str(v.get("name")), str(v.get("expression"))) for v in spec.get("variables") or ()
                     if isinstance(v, dict)]
        activation["variables"] = policycel.Variables(variables, lambda: activation)
        caller = attrs.caller
        activation["authorizer"] = policycel.Authorizer(caller.authorize if caller else None,
                                                        caller.user if caller else {})
        errors: list[str] = []
        for condition in spec.get("matchConditions") or ():
            try:
                result = policycel.evaluate(str(condition.get("expression")), activation)
            except policycel.PolicyCELError as e:
                errors.append(str(e))
                continue
            if policycel.is_bool(result, False):
                return []
        if errors:
            if not fail:
                return []
            return [_Decision(True, errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")]
        decisions = []
        for validation in spec.get("validations") or ():
            expression = str(validation.get("expression"))
            try:
                result = policycel.evaluate(expression, activation)
            except policycel.PolicyCELError as e:
                decisions.append(_Decision(fail, str(e)))
                continue
            if policycel.is_bool(result, True):
                continue
            decisions.append(_Decision(True, _message(validation, activation), str(validation.get("reason") or "")))
        return decisions + _audit_annotations(spec, activation, fail)


class _ConfigError(Exception):
    pass


def _audit_annotations(spec: Obj, activation: dict[str, Any], fail: bool) -> list[_Decision]:
    """auditAnnotations: a value (a string, or null for none) goes to kube-apiserver's audit event,
    which serve does not keep; one that fails to evaluate (under failurePolicy Fail) or is of
    another type denies the request, as upstream's dispatcher does."""
    out = []
    for annotation in spec.get("auditAnnotations") or ():
        if not isinstance(annotation, dict):
            continue
        expression = str(annotation.get("valueExpression") or "")
        try:
            value = policycel.evaluate(expression.strip(), activation)
        except policycel.PolicyCELError as e:
            if fail:
                out.append(_Decision(True, str(e), audit=True))
            continue
        if value is not None and not isinstance(value, str):
            out.append(_Decision(True, f"valueExpression '{expression}' resulted in unsupported return type: "
                                       f"{policycel.type_name(value)}. Return type must be either string or null.",
                                 audit=True))
    return out


def _with_api_version(obj: Obj, api_version: str) -> Obj:
    return obj if obj.get("apiVersion") == api_version else {**obj, "apiVersion": api_version}


def _message(validation: Obj, activation: dict[str, Any]) -> str:
    """messageExpression's string (trimmed; not if empty, multi-line or too long), else message,
    else the failed expression."""
    if isinstance(validation.get("messageExpression"), str):
        try:
            said = policycel.evaluate(validation["messageExpression"], activation)
        except policycel.PolicyCELError:
            said = None
        if isinstance(said, str):
            text = said.strip()
            if text and "\n" not in text and len(text.encode()) <= MAX_MESSAGE_BYTES:
                return text
    if str(validation.get("message") or "").strip():
        return str(validation["message"]).strip()
    return f"failed expression: {str(validation.get('expression')).strip()}"


def _admission_request(attrs: Attributes) -> Obj:
    """The AdmissionRequest CEL's `request` is (cel.CreateAdmissionRequest), empty fields omitted."""
    req = attrs.match
    caller = attrs.caller
    resource = {"group": req.group, "version": req.version, "resource": req.resource}
    asked = attrs.requested or req
    out: Obj = {"uid": str(uuid.uuid4()), "kind": attrs.kind, "resource": resource,
                "requestKind": attrs.requested_kind or attrs.kind,
                "requestResource": {"group": asked.group, "version": asked.version, "resource": asked.resource},
                "operation": req.operation,
                "userInfo": dict(caller.user) if caller is not None else dict(LOOPBACK_USER),
                "dryRun": bool(caller and caller.dry_run)}
    if req.subresource:
        out["subResource"] = out["requestSubResource"] = req.subresource
    if req.name:
        out["name"] = req.name
    if req.namespace:
        out["namespace"] = req.namespace
    if req.operation in _OPTIONS:
        out["options"] = {"kind": _OPTIONS[req.operation], "apiVersion": "meta.k8s.io/v1",
                          **(caller.options if caller is not None else {})}
    return out


_NAMESPACE_META = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                   "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "finalizers")


def _namespace_object(ns: Obj | None) -> Obj | None:
    """namespaceObject: the request's Namespace with the metadata policies may read, spec and status."""
    if ns is None:
        return None
    meta = ns.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in _NAMESPACE_META if k in meta}, "spec": ns.get("spec") or {},
            "status": ns.get("status") or {}}
