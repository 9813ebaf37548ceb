"""deploy/: the manifests a cluster admin applies to run kubesched's scheduler and descheduler.

They are applied with the real kubectl (strict field validation) against `kubesched serve`, which
validates them as kube-apiserver does; the embedded configuration and policy are loaded as the
commands load them; the containers' arguments are parsed by the commands themselves; and the RBAC
rules are checked against every request the live commands make, so a kind added to an informer
without its permission fails here rather than as a 403 in someone's cluster.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml

from kubesched.commands.cli import main
from kubesched.descheduler.policy import load_policy
from kubesched.input.validation import check_config
from kubesched.live.descheduler import DESCHEDULER_KINDS
from kubesched.live.engine import resource_of
from kubesched.live.scheduler import DEFAULT_SCHEDULER, SCHEDULER_KINDS
from kubesched.live.snapshot import USED
from kubesched.sim.runner import load
from tests.serve.harness import Served

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
Obj = dict[str, Any]


def manifests() -> list[Obj]:
    """Every document, in the order `kubectl apply -f deploy/` sends them (file names sorted)."""
    return [doc for path in sorted(DEPLOY.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]


def one(kind: str, name: str) -> Obj:
    [found] = [d for d in manifests() if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def key(obj: Obj) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def assert_stored_as_written(written: Any, stored: Any, path: str) -> None:
    """Every field the manifest sets has the same value on the server; what the server adds
    (defaults, status, metadata) is not compared."""
    if isinstance(written, dict):
        assert isinstance(stored, dict), f"{path}: stored {stored!r}"
        for k, v in written.items():
            assert k in stored, f"{path}.{k}: missing on the server"
            assert_stored_as_written(v, stored[k], f"{path}.{k}")
    elif isinstance(written, list):
        assert isinstance(stored, list) and len(stored) == len(written), f"{path}: stored {stored!r}"
        for i, (w, s) in enumerate(zip(written, stored, strict=True)):
            assert_stored_as_written(w, s, f"{path}[{i}]")
    else:
        assert stored == written, f"{path}: wrote {written!r}, stored {stored!r}"


def test_kubectl_applies_every_manifest_strictly_and_the_server_keeps_them_as_written(served: Served,
                                                                                      tmp_path: Path) -> None:
    docs = manifests()
    kinds = {d["kind"] for d in docs}
    assert {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap",
            "Deployment", "CronJob"} <= kinds

    created = served.kubectl("apply", "--validate=strict", "-f", str(DEPLOY)).splitlines()
    assert len(created) == len(docs) and all(line.endswith(" created") for line in created), created

    stored = {key(obj): obj for obj in json.loads(served.kubectl("get", "-f", str(DEPLOY), "-o", "json"))["items"]}
    for doc in docs:
        assert key(doc) in stored, f"{key(doc)} not stored"
        assert_stored_as_written(doc, stored[key(doc)], "/".join(key(doc)))

    # Applying again changes nothing, and kubectl sees no difference between files and cluster.
    again = served.kubectl("apply", "--validate=strict", "-f", str(DEPLOY)).splitlines()
    assert all(line.endswith(" unchanged") for line in again), again
    assert served.kubectl("diff", "-f", str(DEPLOY)) == ""

    # The validation that accepted them is in force: a misspelt field is refused, naming it.
    bad = one("Deployment", "kubesched-scheduler")
    bad["spec"]["template"]["spec"]["containers"][0]["readinessProbes"] = {}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    refused = served.kubectl("apply", "--validate=strict", "--dry-run=server", "-f", str(tmp_path / "bad.yaml"),
                             check=False)
    assert 'unknown field "spec.template.spec.containers[0].readinessProbes"' in refused, refused


def test_the_embedded_configuration_and_policy_are_valid_for_kubesched(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(one("ConfigMap", "kubesched-scheduler-config")["data"]["config.yaml"])
    scenario = load([str(config)], strict=True)  # InputError if anything is wrong, warnings included
    [loaded] = scenario.scheduler_configs
    assert [p["schedulerName"] for p in check_config(loaded.obj, loaded).profiles] == [DEFAULT_SCHEDULER]

    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(one("ConfigMap", "kubesched-descheduler-policy")["data"]["policy.yaml"])
    policy = load_policy(load([str(policy_file)], strict=True).descheduler_policy)
    [profile] = policy.profiles
    assert profile.plugins["balance"] == ["RemoveDuplicates", "LowNodeUtilization"]
    # A CronJob's pass must end: an interval would keep the process running and, with
    # concurrencyPolicy Forbid, block every later run.
    assert policy.interval <= 0
    assert one("CronJob", "kubesched-descheduler")["spec"]["concurrencyPolicy"] == "Forbid"


def _pod_spec(workload: Obj) -> Obj:
    spec = workload["spec"]
    return (spec["jobTemplate"]["spec"] if workload["kind"] == "CronJob" else spec)["template"]["spec"]


def _parsed(pod: Obj) -> tuple[str, dict[str, Any]]:
    """The command and options the container runs, parsed by kubesched's own CLI (the image's
    entrypoint is `kubesched`)."""
    [container] = pod["containers"]
    assert "command" not in container, "the image's entrypoint is kubesched"
    name, *args = container["args"]
    command = main.get_command(click.Context(main), name)
    assert command is not None, f"kubesched has no {name} command"
    return name, command.make_context(name, args).params


def _mounted(pod: Obj, path: str) -> str:
    """The ConfigMap data the file at `path` comes from (it must be a manifest here)."""
    [container] = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    for mount in container["volumeMounts"]:
        prefix = mount["mountPath"].rstrip("/") + "/"
        if path.startswith(prefix):
            source = volumes[mount["name"]]["configMap"]["name"]
            return one("ConfigMap", source)["data"][path[len(prefix):]]
    raise AssertionError(f"{path} is not mounted")


def test_the_containers_run_the_commands_on_the_mounted_files() -> None:
    scheduler = one("Deployment", "kubesched-scheduler")
    pod = _pod_spec(scheduler)
    name, params = _parsed(pod)
    assert name == "scheduler"
    assert "schedulerName: kubesched" in _mounted(pod, params["config_path"])
    assert params["leader_elect"] and scheduler["spec"]["replicas"] == 2
    [container] = pod["containers"]
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": params["port"], "scheme": "HTTP"}
    assert [p["containerPort"] for p in container["ports"]] == [params["port"]]
    # The scheduler's own pods are kube-scheduler's: kubesched cannot schedule itself.
    assert pod.get("schedulerName", "default-scheduler") != DEFAULT_SCHEDULER
    # The Lease the flags name is the one the Role lets it take, in the namespace the flags name.
    role = one("Role", "kubesched:leader-election")
    assert role["metadata"]["namespace"] == params["lease_namespace"]
    assert any(params["lease_name"] in r.get("resourceNames", ()) and "update" in r["verbs"] for r in role["rules"])

    descheduler = _pod_spec(one("CronJob", "kubesched-descheduler"))
    name, params = _parsed(descheduler)
    assert name == "descheduler" and not params["dry_run"]
    assert "kind: DeschedulerPolicy" in _mounted(descheduler, params["policy_path"])

    for spec in (pod, descheduler):
        [container] = spec["containers"]
        assert spec["securityContext"]["runAsNonRoot"] and spec["securityContext"]["runAsUser"] > 0
        assert container["securityContext"]["readOnlyRootFilesystem"]
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]


class Grants:
    """The RBAC rules a ServiceAccount (or a ClusterRole alone) holds, as the authorizer reads them:
    ClusterRoleBindings everywhere, RoleBindings in their namespace."""

    def __init__(self, rules: list[tuple[str | None, Obj]]) -> None:
        self.rules = rules  # (namespace the rule is limited to or None, rule)

    @classmethod
    def of_service_account(cls, namespace: str, name: str) -> Grants:
        docs = manifests()
        rules: list[tuple[str | None, Obj]] = []
        for binding in (d for d in docs if d["kind"] in ("ClusterRoleBinding", "RoleBinding")):
            if not any(s["kind"] == "ServiceAccount" and s["name"] == name and s["namespace"] == namespace
                       for s in binding["subjects"]):
                continue
            scope = binding["metadata"].get("namespace")
            ref = binding["roleRef"]
            role = next(d for d in docs if d["kind"] == ref["kind"] and d["metadata"]["name"] == ref["name"]
                        and d["metadata"].get("namespace") == (scope if ref["kind"] == "Role" else None))
            rules.extend((scope, rule) for rule in role["rules"])
        return cls(rules)

    def allows(self, verb: str, kind_or_resource: str, namespace: str | None = None, name: str | None = None) -> bool:
        if "/" in kind_or_resource or kind_or_resource.islower():
            group, _, resource = kind_or_resource.rpartition(":")
        else:
            res = resource_of(kind_or_resource)
            group, resource = res.group, res.plural
        for scope, rule in self.rules:
            if (scope is None or scope == namespace) and verb in rule["verbs"] and group in rule["apiGroups"] \
                    and resource in rule["resources"] and (not rule.get("resourceNames") or name in rule["resourceNames"]):
                return True
        return False


def test_rbac_grants_every_request_the_live_commands_make_and_no_more() -> None:
    scheduler = Grants.of_service_account("kubesched", "kubesched-scheduler")
    for kind in SCHEDULER_KINDS:  # one informer each, cluster-wide
        assert scheduler.allows("list", kind) and scheduler.allows("watch", kind), kind
    # What the scheduler writes (kubesched/live/remoteapi.py, leaderelection.py).
    assert scheduler.allows("create", "pods/binding")
    assert scheduler.allows("patch", "pods/status")  # nomination, DisruptionTarget
    assert scheduler.allows("delete", "pods")  # preemption victims
    assert scheduler.allows("update", "persistentvolumes") and scheduler.allows("update", "persistentvolumeclaims")
    # DynamicResources: the claim's finalizer, then its allocation and reservation.
    assert scheduler.allows("update", "resource.k8s.io:resourceclaims")
    assert scheduler.allows("update", "resource.k8s.io:resourceclaims/status")
    assert not scheduler.allows("update", "resource.k8s.io:resourceslices")
    assert scheduler.allows("watch", "resource.k8s.io:devicetaintrules")  # with DRADeviceTaintRules
    assert scheduler.allows("create", "events.k8s.io:events")
    assert scheduler.allows("create", "coordination.k8s.io:leases", "kube-system")
    for verb in ("get", "update"):
        assert scheduler.allows(verb, "coordination.k8s.io:leases", "kube-system", "kubesched")
        assert not scheduler.allows(verb, "coordination.k8s.io:leases", "kube-system", "kube-scheduler")
    assert not scheduler.allows("create", "coordination.k8s.io:leases", "default")
    assert not scheduler.allows("update", "pods") and not scheduler.allows("update", "nodes")

    descheduler = Grants.of_service_account("kubesched", "kubesched-descheduler")
    for kind in DESCHEDULER_KINDS:
        assert descheduler.allows("list", kind) and descheduler.allows("watch", kind), kind
    assert descheduler.allows("create", "pods/eviction") and descheduler.allows("create", "events.k8s.io:events")
    assert not descheduler.allows("delete", "pods")  # evictions only, so budgets always apply

    role = one("ClusterRole", "kubesched:snapshot")
    snapshot = Grants([(None, rule) for rule in role["rules"]])
    for kind in USED:
        assert snapshot.allows("list", kind.kind), kind.kind
    assert not any(set(rule["verbs"]) - {"get", "list"} for rule in role["rules"]), "snapshot is read-only"

    for grants in (scheduler, descheduler, snapshot):
        assert not grants.allows("get", "secrets") and not grants.allows("list", "secrets")
