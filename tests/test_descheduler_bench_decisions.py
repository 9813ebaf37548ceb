"""The descheduler benchmark's pass, at two small sizes, decides exactly as it did before the
pass was made to grow linearly: the same attempts, in the same order, with the same messages.

The digests were recorded from the pass before that work; a deliberate change of the
descheduler's decisions updates them (and says why in its commit)."""

from __future__ import annotations

import hashlib
import json

import pytest

from bench import descheduler as bench
from kubesched.cluster.cluster import Cluster
from kubesched.descheduler.descheduler import Descheduler
from kubesched.descheduler.policy import load_policy


@pytest.mark.parametrize(("nodes", "hot", "attempts", "evicted", "digest"), [
    (250, 50, 180, 40, "463ef0028af91b688949fa9d96e612de8b96d6e17b024dcd962d5d718eafc6f0"),
    (500, 100, 380, 40, "73bacf1f1813a8150b3c0ba127ef4a375d3dc68d6a89f8244372309688958680"),
])
def test_bench_pass_decides_as_before(nodes: int, hot: int, attempts: int, evicted: int, digest: str) -> None:
    cluster = Cluster()
    for obj in bench._objects(nodes, hot):
        cluster.create(obj)
    cluster.run()
    d = Descheduler(cluster.api, cluster.clock, load_policy(bench.POLICY), [cluster.scheduler.config],
                    cluster.kubelets.usage, indexes=cluster.pod_indexes)
    d.start()
    record = d.run_pass()
    assert (len(record.attempts), record.evicted) == (attempts, evicted)
    text = json.dumps([a.to_json() for a in record.attempts], sort_keys=True)
    assert hashlib.sha256(text.encode()).hexdigest() == digest
