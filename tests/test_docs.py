"""Every example the documentation shows runs, and prints what the documentation says it prints.

A ```sh block in README.md, docs/*.md or examples/*/README.md is run as one bash script (so an
`export` or a server started with `&` carries to the next line), from a scratch directory that sees
the repository's examples/, tests/ and deploy/, with this checkout's `kubesched` first on the PATH.
A ```text block right after it shows output: its first line must appear in what the script
printed (whitespace-insensitive, since tables wrap to the terminal). A block whose first line is a
comment starting `# illustrative:` needs what a test cannot have (a real cluster, a data set not in
the repository, minutes of benchmarks); that comment tells the reader so, and the block is only
checked to name real kubesched commands. A block of `make` targets is checked with `make -n` in
the checkout (`make test` would run this suite inside itself), and `make demo` is run for real.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubesched.commands.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("examples/*/README.md"))]
ILLUSTRATIVE = "# illustrative:"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)


@dataclass
class Example:
    page: Path
    line: int
    script: str
    output: str | None  # the first line of the ```text block that follows, if any

    @property
    def illustrative(self) -> bool:
        return self.script.lstrip().startswith(ILLUSTRATIVE)

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def examples(page: Path) -> list[Example]:
    text = page.read_text()
    blocks = [(m.group(1), m.group(2), m.start(), m.end()) for m in FENCE.finditer(text)]
    found = []
    for i, (lang, body, start, end) in enumerate(blocks):
        if lang != "sh":
            continue
        output = None
        if i + 1 < len(blocks):
            next_lang, next_body, next_start, _ = blocks[i + 1]
            if next_lang == "text" and not text[end:next_start].strip():
                output = next((ln for ln in next_body.splitlines() if ln.strip()), None)
        found.append(Example(page, text.count("\n", 0, start) + 1, body, output))
    return found


ALL = [e for page in PAGES for e in examples(page)]


def _words(text: str) -> str:
    return " ".join(text.split())


def _commands(script: str) -> list[list[str]]:
    """Each command line of a script as words, continuations joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", script)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"\s#.*$", "", line).strip()
        if line and not line.startswith("#"):
            out.append(line.split())
    return out


def test_the_docs_have_examples() -> None:
    """The pages are found and hold both runnable and illustrative examples (a broken fence
    pattern would silently make every other test here pass)."""
    assert len(PAGES) > 10
    assert sum(not e.illustrative for e in ALL) >= 10
    assert any(e.illustrative for e in ALL)


@pytest.mark.parametrize("example", [e for e in ALL if e.illustrative], ids=str)
def test_illustrative_examples_name_real_commands(example: Example) -> None:
    """What cannot run here still names kubesched commands that exist."""
    known = set(cli_main.list_commands(None))  # type: ignore[arg-type]
    for words in _commands(example.script):
        if words[0].endswith("kubesched"):
            assert words[1] in known, f"{example}: no command `kubesched {words[1]}`"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory that looks like the repository to a reader's relative paths, where examples
    may write their files."""
    base = tmp_path_factory.mktemp("docs")
    for name in ("examples", "tests", "deploy"):
        (base / name).symlink_to(ROOT / name)
    return base


def _is_make(example: Example) -> bool:
    return all(words[0] == "make" for words in _commands(example.script))


@pytest.mark.parametrize("example", [e for e in ALL if not e.illustrative and _is_make(e)], ids=str)
def test_make_targets_exist(example: Example) -> None:
    for words in _commands(example.script):
        run = subprocess.run([*words, "-n"], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, f"{example}: {' '.join(words)}: {run.stderr}"


def test_make_demo() -> None:
    """The first thing a new user runs: it simulates the quick-start example and every
    expectation in it holds."""
    run = subprocess.run(["make", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Scenario quickstart: ran to 10m of virtual time" in run.stdout
    assert "Expectations: 3 held, 0 failed" in run.stdout


_RUNS: dict[str, subprocess.CompletedProcess[str]] = {}  # script -> its run: a block shown twice runs once


def _run(script: str, scratch: Path) -> subprocess.CompletedProcess[str]:
    if script not in _RUNS:
        work = Path(tempfile.mkdtemp(dir=scratch.parent))
        for link in scratch.iterdir():
            (work / link.name).symlink_to(link.resolve())
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        env.pop("KUBECONFIG", None)
        # Servers an example starts in the background are stopped when it ends.
        wrapped = "set -eo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + script
        _RUNS[script] = subprocess.run(["bash", "-c", wrapped], cwd=work, env=env, capture_output=True, text=True,
                                       timeout=60)
    return _RUNS[script]


@pytest.mark.parametrize("example", [e for e in ALL if not e.illustrative and not _is_make(e)], ids=str)
def test_example_runs(example: Example, scratch: Path) -> None:
    run = _run(example.script, scratch)
    printed = run.stdout + run.stderr
    assert run.returncode == 0, f"{example} exited {run.returncode}:\n{printed[-3000:]}"
    if example.output is not None:
        assert _words(example.output) in _words(printed), \
            f"{example}: the documented output\n  {example.output}\nis not in what it printed:\n{printed[:3000]}"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(page: Path) -> None:
    """Every relative link names a file that exists, and a heading in it when it has an anchor."""
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"\w+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.relative_to(ROOT)}: {target} does not exist"
        if anchor and linked.suffix == ".md":
            anchors = {_anchor(h) for h in re.findall(r"^#+ (.*)$", linked.read_text(), re.M)}
            assert anchor in anchors, f"{page.relative_to(ROOT)}: no heading #{anchor} in {path or page.name}"
