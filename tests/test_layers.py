"""The layers point one way: an import-graph check over kubesched/.

Every `kubesched` import is counted, at module level, inside functions and under TYPE_CHECKING
alike (a deferred or type-only import still ties the importer to the imported module's layer and
is one edit away from a runtime import). The rule:

- Layers, bottom up (a layer is one or more top-level packages or modules of kubesched):

    api (and gosort)   object helpers, quantities, selectors, validation
    store              object store with resourceVersion and watch, its shared indexes
    runtime            clocks, drivers and the workqueue that drives reconciles
    apiserver          API semantics
    components         scheduler, kubelet, controllers, kubectl, descheduler (peers)
    input              reading files, Lists, scenarios; each component's configuration checked
                       by that component's own checks, so it sits above the components
    cluster            the one composition root, and the recorder a run reports through
    sim, trace         the runner, results, reports, capacity, compare; trace conversion
    server             `serve`
    live               the components on a real cluster
    commands           the click commands and what each one draws

- A module imports its own package and anything in a lower layer, never a higher one.
- Packages of one layer do not import each other, except PEERS: the descheduler fits pods with
  the scheduler's plugins and cache (upstream's nodeFit uses the scheduler's predicates) and reads
  what the kubelets report as usage (as upstream reads metrics-server, fed by the kubelets).
- No two modules import each other, directly or through others (a cycle), at any level.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "kubesched"

LAYERS: list[tuple[str, ...]] = [
    ("api", "gosort"),
    ("store",),
    ("runtime",),
    ("apiserver",),
    ("scheduler", "kubelet", "controllers", "kubectl", "descheduler"),
    ("input",),
    ("cluster",),
    ("sim", "trace"),
    ("server",),
    ("live",),
    ("commands",),
]
PEERS: dict[str, set[str]] = {"descheduler": {"scheduler", "kubelet"}}

LEVEL = {package: i for i, packages in enumerate(LAYERS) for package in packages}


def _module_name(path: Path) -> str:
    parts = ["kubesched", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in ROOT.rglob("*.py")}


def _imports(name: str, path: Path) -> set[str]:
    """The kubesched modules `name` imports (`from package import module` names the module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "kubesched")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "kubesched":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
    found.discard(name)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _package(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_every_package_has_a_layer() -> None:
    packages = {_package(m) for m in MODULES} - {""}
    assert sorted(packages - set(LEVEL)) == []


def test_imports_point_down() -> None:
    wrong = []
    for importer, targets in GRAPH.items():
        src = _package(importer)
        for target in targets:
            dst = _package(target)
            if not src or not dst or src == dst:
                continue
            if LEVEL[dst] > LEVEL[src]:
                wrong.append(f"{importer} -> {target} (up)")
            elif LEVEL[dst] == LEVEL[src] and dst not in PEERS.get(src, set()):
                wrong.append(f"{importer} -> {target} (sideways)")
    assert sorted(wrong) == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    graph: dict[str, set[str]] = defaultdict(set, {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert _cycles(dict(graph)) == [["a", "b", "c"]]
