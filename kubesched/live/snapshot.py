"""`kubesched snapshot`: read a live cluster, read-only, into the `kind: List` that `simulate` takes.

It holds what the README's `kubectl get ... -A -o yaml` recipe would, plus Namespaces, Services
(the scheduler's default topology spreading reads them), ReplicationControllers and CSIDrivers:
every kind kubesched acts on. `--all-kinds` adds what the server lists besides, which kubesched
only keeps. Objects are the server's JSON as it is (no typed models: they drop unknown fields),
without `managedFields`, which nothing downstream reads and which often doubles an export's size.

The List records when the cluster was read (annotation `kubesched.io/snapshot-time`), and
`simulate` takes that as virtual time 0: the newest timestamp in the objects is only a lower
bound of it (a quiet cluster's objects may all be old), and a kubelet's clock running ahead would
otherwise move it.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import click
import yaml

from kubesched.api.kinds import SIMULATED
from kubesched.api.loader import SNAPSHOT_TIME, CDumper
from kubesched.api.objects import format_time, parse_time
from kubesched.api.restmapping import RESOURCES
from kubesched.apiserver.errors import APIError, TooManyRequests
from kubesched.input.scenario import CREATE_ORDER
from kubesched.live.connection import Connection, Unreachable

PAGE = 500  # items per list request, as kubectl's --chunk-size
RETRIES = 5  # for 429 (the connection retries 5xx and lost connections itself) and expired continues
BACKOFF = 0.5
MAX_BACKOFF = 8.0
# `kubesched serve` runs a clock of its own (stopped, faster, or paused while it was down): its
# time, not this machine's, is the moment of a snapshot of it. Other servers answer 404 or 403.
SERVE_CLOCK = "/kubesched.io/clock"
# Never exported with --all-kinds: credentials, records of the past rather than state, and what
# an aggregated API computes on each request (metrics-server's usage).
NEVER = frozenset({("", "Secret"), ("", "Event"), ("events.k8s.io", "Event"), ("", "ComponentStatus")})
COMPUTED_GROUPS = frozenset({"metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io"})


@dataclass(frozen=True)
class Kind:
    kind: str
    api_version: str  # "v1", "apps/v1"
    plural: str
    namespaced: bool

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def path(self, namespace: str | None) -> str:
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        return f"{base}/namespaces/{namespace}/{self.plural}" if namespace else f"{base}/{self.plural}"


def _order(kind: str) -> int:
    return CREATE_ORDER.index(kind) if kind in CREATE_ORDER else len(CREATE_ORDER)


# What kubesched acts on or reads, in the order `simulate` creates them (namespaces and classes
# first, pods last), which is also the order a reader looks for them.
USED: tuple[Kind, ...] = tuple(sorted(
    (Kind(r.kind, r.api_version, r.plural, r.namespaced) for r in RESOURCES
     if r.stored and r.stored_as is None and r.kind in SIMULATED | {"Service"}),
    key=lambda k: _order(k.kind)))


def _get(conn: Connection, path: str, query: dict[str, Any] | None = None) -> dict[str, Any]:
    """A GET, retried with backoff while the server sheds load (429)."""
    delay = BACKOFF
    for attempt in range(RETRIES + 1):
        try:
            return conn.request("GET", path, query=query)
        except TooManyRequests:
            if attempt == RETRIES:
                raise
        time.sleep(delay * (1 + random.random() * 0.2))
        delay = min(delay * 2, MAX_BACKOFF)
    raise AssertionError("unreachable")


def list_objects(conn: Connection, kind: Kind, namespace: str | None = None, selector: str | None = None,
                 page_size: int = PAGE) -> list[dict[str, Any]]:
    """Every object of `kind` (in `namespace`, matching `selector`), page by page; each with its
    kind and apiVersion (list items lack them) and without managedFields. A continue token that
    expired (410) while paging starts the list over, so no page comes from another moment."""
    for _ in range(RETRIES + 1):
        query: dict[str, Any] = {"limit": page_size}
        if selector:
            query["labelSelector"] = selector
        items: list[dict[str, Any]] = []
        try:
            while True:
                page = _get(conn, kind.path(namespace), query)
                items.extend(_exported(item, kind) for item in page.get("items") or ())
                token = (page.get("metadata") or {}).get("continue")
                if not token:
                    return items
                query["continue"] = token
        except APIError as e:
            if e.code != 410 or "continue" not in query:
                raise
    raise Unreachable(f"listing {kind.plural}: the list kept expiring while it was read")


def _exported(item: dict[str, Any], kind: Kind) -> dict[str, Any]:
    (item.get("metadata") or {}).pop("managedFields", None)
    head = {"apiVersion": item.get("apiVersion") or kind.api_version, "kind": item.get("kind") or kind.kind}
    return head | {k: v for k, v in item.items() if k not in head}


def discovered(conn: Connection, warn: Callable[[str], None]) -> list[Kind]:
    """Every kind the server lists (each group at its preferred version), for --all-kinds; a
    group whose discovery fails (an aggregated API that is down) is skipped with a warning."""
    answers = [("v1", _get(conn, "/api/v1"))]
    for group in _get(conn, "/apis").get("groups") or ():
        if group.get("name") in COMPUTED_GROUPS:
            continue
        version = (group.get("preferredVersion") or (group.get("versions") or [{}])[0]).get("groupVersion")
        if not version:
            continue
        try:
            answers.append((version, _get(conn, f"/apis/{version}")))
        except (APIError, Unreachable) as e:
            warn(f"skipped {version}: {e}")
    kinds = []
    for version, answer in answers:
        for r in answer.get("resources") or ():
            if "/" in r.get("name", "/") or "list" not in (r.get("verbs") or ()):
                continue
            kind = Kind(r["kind"], version, r["name"], bool(r.get("namespaced")))
            if (kind.group, kind.kind) not in NEVER:
                kinds.append(kind)
    return kinds


def export_time(conn: Connection, items: Iterable[dict[str, Any]]) -> datetime:
    """The cluster's now, at the end of the reading: serve's own clock if it is one, else this
    machine's; never before an object the snapshot holds was created (a clock behind the server's)."""
    now = datetime.now(UTC).replace(microsecond=0)
    try:
        clock = conn.request("GET", SERVE_CLOCK, retry=False)
        if clock.get("kind") == "Clock" and isinstance(clock.get("time"), str):
            now = parse_time(clock["time"])
    except (APIError, Unreachable, ValueError):
        pass
    created = []
    for item in items:
        stamp = (item.get("metadata") or {}).get("creationTimestamp")
        if isinstance(stamp, str):
            try:
                created.append(parse_time(stamp))
            except ValueError:
                continue
    return max([now, *created])


def take(conn: Connection, namespaces: tuple[str, ...] = (), selector: str | None = None,
         all_kinds: bool = False, warn: Callable[[str], None] = print) -> dict[str, Any]:
    """The snapshot: a v1 List of the cluster's objects, stamped with when it was read.
    `namespaces` (none: all) and `selector` narrow the namespaced kinds; cluster-scoped ones
    (nodes, classes, volumes, namespaces) are always whole, as a simulation needs them."""
    kinds = list(USED)
    if all_kinds:
        have = {(k.group, k.kind) for k in kinds}
        kinds += [k for k in discovered(conn, warn) if (k.group, k.kind) not in have]
    items: list[dict[str, Any]] = []
    for kind in kinds:
        scopes: tuple[str | None, ...] = namespaces if kind.namespaced and namespaces else (None,)
        try:
            for ns in scopes:
                items.extend(list_objects(conn, kind, ns, selector if kind.namespaced else None))
        except APIError as e:
            if e.code == 404:  # the server does not serve this kind: it has none of it
                continue
            if kind in USED:
                raise
            warn(f"skipped {kind.plural}.{kind.api_version}: {e}")
    if namespaces:
        found = {o["metadata"].get("name") for o in items if o["kind"] == "Namespace"}
        for ns in namespaces:
            if ns not in found:
                warn(f'namespace "{ns}" not found')
    stamp = format_time(export_time(conn, items), 0)
    return {"apiVersion": "v1", "kind": "List", "metadata": {"annotations": {SNAPSHOT_TIME: stamp}},
            "items": items}


def render(snapshot: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(snapshot, indent=2, ensure_ascii=False) + "\n"
    return yaml.dump(snapshot, Dumper=CDumper, sort_keys=False, allow_unicode=True, width=1 << 16)


def _write(text: str, output: str) -> None:
    """Whole or not at all: a failed run leaves an earlier snapshot in place."""
    if output == "-":
        sys.stdout.write(text)
        return
    partial = f"{output}.tmp"
    with open(partial, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(partial, output)


def _summary(items: list[dict[str, Any]]) -> str:
    counts = Counter(o["kind"] for o in items)
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items(), key=lambda kv: (_order(kv[0]), kv[0])))


@click.command()
@click.option("--kubeconfig", default=None, metavar="FILE",
              help="Cluster to read (default: $KUBECONFIG or ~/.kube/config; in a pod, its service account).")
@click.option("--context", default=None, help="Kubeconfig context (default: the current one).")
@click.option("--output", "-o", default="-", show_default=True, metavar="FILE",
              help="Where to write: a file (JSON if it ends in .json, else YAML), '-' for stdout, "
                   "or 'yaml' / 'json' for stdout in that format.")
@click.option("--namespace", "-n", "namespaces", multiple=True, metavar="NS",
              help="Only this namespace's objects (repeatable); cluster-scoped kinds are always whole.")
@click.option("--all-namespaces", "-A", "all_namespaces", is_flag=True,
              help="Objects in every namespace (the default).")
@click.option("--selector", "-l", default=None, metavar="SELECTOR",
              help="Only namespaced objects with these labels (e.g. app=web,tier!=db).")
@click.option("--all-kinds", is_flag=True,
              help="Also every other kind the server lists (ConfigMaps, RBAC, custom resources, ...), which "
                   "kubesched keeps as they are; never Secrets or Events.")
def snapshot(kubeconfig: str | None, context: str | None, output: str, namespaces: tuple[str, ...],
             all_namespaces: bool, selector: str | None, all_kinds: bool) -> None:
    """Write what kubesched needs of a live cluster (read-only) as a `kind: List` that
    `kubesched simulate` takes unchanged, stamped with when it was read."""
    if namespaces and all_namespaces:
        raise click.UsageError("--namespace and --all-namespaces exclude each other")
    fmt = "json" if output == "json" or output.endswith(".json") else "yaml"

    def warn(message: str) -> None:
        click.echo(f"warning: {message}", err=True)

    try:
        conn = Connection(kubeconfig, context)
    except Exception as e:  # the client raises ConfigException, OSError, ValueError, ... for a bad kubeconfig
        click.echo(f"error: cannot load the kubeconfig: {e}", err=True)
        sys.exit(1)
    try:
        snap = take(conn, tuple(dict.fromkeys(namespaces)), selector, all_kinds, warn)
    except (APIError, Unreachable) as e:
        click.echo(f"error: {getattr(e, 'message', None) or e}", err=True)
        sys.exit(1)
    finally:
        conn.close()
    _write(render(snap, fmt), "-" if output in ("json", "yaml") else output)
    where = "stdout" if output in ("-", "json", "yaml") else output
    click.echo(f"{len(snap['items'])} objects ({_summary(snap['items'])}) read at "
               f"{snap['metadata']['annotations'][SNAPSHOT_TIME]}, written to {where}", err=True)
