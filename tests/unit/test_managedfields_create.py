"""A create's managedFields: the writer owns every field it set, whatever objects of the same shape
were created before (the set is remembered per shape)."""

from kubesched.server.managedfields import record_update

NOW = "2026-01-01T00:00:00Z"


def _pod(name: str, container: str, labels: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": [{"name": container, "image": f"img-{name}"}]}}


def _fields(obj: dict) -> dict:
    [entry] = obj["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["time"]) == ("kubectl", "Update", NOW)
    return entry["fieldsV1"]


def test_pods_of_one_shape_own_the_same_fields_and_each_its_own_container_and_labels() -> None:
    first = _fields(record_update(None, _pod("a", "app", {"tier": "web"}), "kubectl", NOW))
    assert first == {"f:metadata": {"f:labels": {".": {}, "f:tier": {}}},
                     "f:spec": {"f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}}}}}
    assert _fields(record_update(None, _pod("b", "app", {"tier": "db"}), "kubectl", NOW)) == first
    other = _fields(record_update(None, _pod("c", "sidecar", {"zone": "a"}), "kubectl", NOW))
    assert other == {"f:metadata": {"f:labels": {".": {}, "f:zone": {}}},
                     "f:spec": {"f:containers": {'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}}}}}


def test_a_field_null_or_set_is_owned_and_an_absent_one_is_not() -> None:
    pod = _pod("d", "app", {})
    pod["spec"]["priority"] = 5
    assert "f:priority" in _fields(record_update(None, pod, "kubectl", NOW))["f:spec"]
    pod = _pod("e", "app", {})
    pod["spec"]["priority"] = None
    assert "f:priority" in _fields(record_update(None, pod, "kubectl", NOW))["f:spec"]
    assert "f:priority" not in _fields(record_update(None, _pod("f", "app", {}), "kubectl", NOW))["f:spec"]


def test_each_create_gets_a_set_of_its_own() -> None:
    a = record_update(None, _pod("g", "app", {}), "kubectl", NOW)
    b = record_update(None, _pod("h", "app", {}), "kubectl", NOW)
    _fields(a)["f:spec"].clear()
    assert _fields(b)["f:spec"]
