"""Scheme defaults as clients see them: kubectl's generators and the official client read back
the fields kube-apiserver v1.35 fills in, and the writer owns them in managedFields."""

from __future__ import annotations

import json

import yaml
from kubernetes import client, config

from tests.serve.harness import Served


def test_kubectl_create_deployment_reads_back_with_defaults(served: Served) -> None:
    served.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--port=80")
    d = yaml.safe_load(served.kubectl("get", "deploy", "web", "-o", "yaml", "--show-managed-fields"))
    spec = d["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (1, 10, 600)
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    pod_spec = spec["template"]["spec"]
    assert {k: pod_spec[k] for k in ("dnsPolicy", "restartPolicy", "schedulerName", "securityContext",
                                     "terminationGracePeriodSeconds")} == {
        "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
        "securityContext": {}, "terminationGracePeriodSeconds": 30}
    c = pod_spec["containers"][0]
    assert (c["imagePullPolicy"], c["terminationMessagePath"], c["terminationMessagePolicy"]) == \
        ("IfNotPresent", "/dev/termination-log", "File")
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    owned = next(e for e in d["metadata"]["managedFields"] if e["manager"] == "kubectl-create")["fieldsV1"]
    assert {"f:progressDeadlineSeconds", "f:revisionHistoryLimit", "f:strategy"} <= set(owned["f:spec"])


def test_apply_does_not_take_ownership_of_defaults(served: Served) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api"},
               "spec": {"selector": {"app": "api"}, "ports": [{"port": 80, "targetPort": 8080}]}}
    served.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(service))
    stored = json.loads(served.kubectl("get", "service", "api", "-o", "json", "--show-managed-fields"))
    assert (stored["spec"]["type"], stored["spec"]["sessionAffinity"], stored["spec"]["ipFamilyPolicy"]) == \
        ("ClusterIP", "None", "SingleStack")
    assert stored["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 8080}]
    owned = next(e for e in stored["metadata"]["managedFields"] if e["manager"] == "kubectl")["fieldsV1"]
    assert "f:type" not in owned["f:spec"]
    # applying the same intent again is no spec change: the defaults are no difference
    served.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(service))
    again = json.loads(served.kubectl("get", "service", "api", "-o", "json"))
    assert (again["spec"], again["metadata"]["generation"]) == (stored["spec"], stored["metadata"]["generation"])


def test_official_client_sees_defaults_on_create_and_replace(served: Served) -> None:
    api_client = config.new_client_from_config(config_file=served.kubeconfig)
    try:
        batch = client.BatchV1Api(api_client)
        body = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
                "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                    "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}
        created = batch.create_namespaced_cron_job("default", body)
        assert (created.spec.concurrency_policy, created.spec.suspend, created.spec.successful_jobs_history_limit,
                created.spec.failed_jobs_history_limit) == ("Allow", False, 3, 1)
        container = created.spec.job_template.spec.template.spec.containers[0]
        assert (container.image_pull_policy, container.termination_message_policy) == ("Always", "File")
        # a replace that leaves the defaults out gets them back, and is no spec change
        body["metadata"]["resourceVersion"] = created.metadata.resource_version
        replaced = batch.replace_namespaced_cron_job("tick", "default", body)
        assert replaced.spec.concurrency_policy == "Allow"
        assert replaced.metadata.generation == created.metadata.generation
        apps = client.AppsV1Api(api_client)
        sts = apps.create_namespaced_stateful_set("default", {
            "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"containers": [{"name": "c", "image": "postgres:17"}]}}}})
        assert (sts.spec.pod_management_policy, sts.spec.update_strategy.rolling_update.partition,
                sts.spec.persistent_volume_claim_retention_policy.when_deleted) == ("OrderedReady", 0, "Retain")
    finally:
        api_client.close()
