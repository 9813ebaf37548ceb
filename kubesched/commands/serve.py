"""`kubesched serve` and `kubesched advance`: the cluster in a box, and moving its clock."""

from __future__ import annotations

import asyncio
import base64
import gc
import json
import logging
import signal
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import click
import yaml
from rich.console import Console

from kubesched.api.features import FeatureGates
from kubesched.input.commandline import bad_input_exits, feature_gates_option

DEFAULT_PORT = 8080


def kubeconfig(server: str, token: str | None, ca_pem: bytes | None = None) -> dict:
    """A kubeconfig with one context, `kubesched`, so `kubectl --kubeconfig FILE` works at once."""
    user: dict = {"token": token} if token else {}
    cluster: dict = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {"apiVersion": "v1", "kind": "Config", "current-context": "kubesched", "preferences": {},
            "clusters": [{"name": "kubesched", "cluster": cluster}],
            "users": [{"name": "kubesched", "user": user}],
            "contexts": [{"name": "kubesched", "context": {"cluster": "kubesched", "user": "kubesched",
                                                          "namespace": "default"}}]}


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--data", default="kubesched.db", show_default=True, metavar="FILE",
              help="SQLite file the cluster lives in (created if missing); ':memory:' keeps nothing.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=int, help="Port (0: any free one).")
@click.option("--speed", default=1.0, show_default=True, type=float,
              help="Virtual seconds per wall-clock second; 0 stops the clock (it moves by `advance` only).")
@click.option("--token", default=None,
              help="Require this bearer token on every request (served over TLS: clients send tokens only there).")
@click.option("--tls/--no-tls", default=None,
              help="Serve HTTPS (default: when --token is given) with --tls-cert-file or a self-signed certificate.")
@click.option("--tls-cert-file", default=None, metavar="FILE", help="Serving certificate (PEM).")
@click.option("--tls-private-key-file", default=None, metavar="FILE", help="Its private key (PEM).")
@click.option("--kubeconfig-out", "kubeconfig_out", default=None, metavar="FILE",
              help="Write a kubeconfig for this server to FILE.")
@click.option("--max-body", default=3 * 1024 * 1024, show_default=True, type=int,
              help="Largest request body accepted, in bytes.")
@feature_gates_option
def serve(paths: tuple[str, ...], data: str, host: str, port: int, speed: float, token: str | None,
          tls: bool | None, tls_cert_file: str | None, tls_private_key_file: str | None,
          kubeconfig_out: str | None, max_body: int, feature_gates: FeatureGates | None) -> None:
    """Serve a Kubernetes API (kubectl, client libraries, operators) whose scheduler, kubelets and
    controllers are kubesched's, in real time (or SPEED times faster). PATHS (optional) seed a new
    data file with a snapshot or scenario, and give the scheduler, kubelet and descheduler
    configurations."""
    from kubesched.server.app import Server
    from kubesched.server.engine import Engine, ServeOptions
    from kubesched.store.sqlite import StoreFileError

    err = Console(stderr=True)
    if speed < 0:
        err.print("--speed must not be negative")
        sys.exit(2)
    try:
        with bad_input_exits():
            engine = Engine(ServeOptions(paths, data, speed, feature_gates))
    except StoreFileError as e:
        err.print(str(e), markup=False, highlight=False)
        sys.exit(2)
    for w in engine.warnings:
        err.print(f"warning: {w}", markup=False, highlight=False, soft_wrap=True)
    engine.started()
    _tune_gc()
    _tune_switching()
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    certificate = None
    if tls or (tls is None and (token or tls_cert_file)):
        from kubesched.server.tls import Certificate, self_signed

        if bool(tls_cert_file) != bool(tls_private_key_file):
            err.print("--tls-cert-file and --tls-private-key-file go together")
            sys.exit(2)
        certificate = Certificate(tls_cert_file, tls_private_key_file) if tls_cert_file and tls_private_key_file \
            else self_signed(host)
    with asyncio.Runner(loop_factory=_event_loop_factory()) as runner:
        runner.run(_serve(Server(engine, token, max_body), host, port, token, kubeconfig_out, err, certificate))


def _event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed (every platform but Windows): `serve` runs all
    its HTTP on the loop's one thread beside the engine, and libuv's loop, socket reads and writes
    in C take about a tenth less of a pod create's CPU than asyncio's own loop in Python."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _tune_gc() -> None:
    """What start-up built (schemas, models, the components' state) lives as long as the
    process: frozen, the collector's full passes no longer walk it. A request allocates hundreds
    of containers that mostly die young, so young collections run ten times less often than
    Python's default; together they halve the collector's share of a pod create."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def _tune_switching() -> None:
    """An answer waits until its write is committed, and the group-commit thread takes the GIL
    back after each SQLite call of a commit (beginning it, each table's rows, committing); while
    the loop thread is busy, each take waits for Python's switch interval, 5 ms by default, so a
    write reached the disk some 25-40 ms after it was made. At 1 ms the loop thread gives way
    sooner, only when the committer asks."""
    sys.setswitchinterval(0.001)


async def _serve(server: object, host: str, port: int, token: str | None, kubeconfig_out: str | None,
                 err: Console, certificate: object = None) -> None:
    from aiohttp import web

    from kubesched.server.app import Server

    assert isinstance(server, Server)
    runner = web.AppRunner(server.app(), handle_signals=False, access_log=None)
    await runner.setup()
    from kubesched.server.tls import Certificate

    ssl_context = certificate.context() if isinstance(certificate, Certificate) else None
    site = web.TCPSite(runner, host, port, reuse_address=True, ssl_context=ssl_context)
    await site.start()
    sockets = site._server.sockets if site._server else []  # type: ignore[union-attr]
    bound = sockets[0].getsockname()[1] if sockets else port
    url = f"{'https' if ssl_context else 'http'}://{host}:{bound}"
    server.engine.advertise(host, bound)
    if kubeconfig_out:  # whole or not at all: a client may be waiting for the file to appear
        partial = Path(kubeconfig_out + ".tmp")
        ca = certificate.pem() if isinstance(certificate, Certificate) else None
        partial.write_text(yaml.safe_dump(kubeconfig(url, token, ca), sort_keys=False))
        partial.replace(kubeconfig_out)
    err.print(f"serving the Kubernetes API on {url}" + (f" (kubeconfig: {kubeconfig_out})" if kubeconfig_out else ""),
              markup=False, highlight=False)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()
    server.engine.close()


@click.command()
@click.argument("duration")
@click.option("--server", "server", default=None, metavar="URL", help="The server (default: from the kubeconfig).")
@click.option("--kubeconfig", "kubeconfig_path", default=None, metavar="FILE",
              help="Take the server and token from this kubeconfig's current context.")
@click.option("--token", default=None, help="Bearer token.")
def advance(duration: str, server: str | None, kubeconfig_path: str | None, token: str | None) -> None:
    """Jump a running `serve`'s virtual time ahead by DURATION (e.g. 10m), running everything
    that falls due on the way; prints the new time."""
    if server is None:
        server, token = _from_kubeconfig(kubeconfig_path, token)
    request = urllib.request.Request(server.rstrip("/") + "/kubesched.io/clock/advance",
                                     data=json.dumps({"by": duration}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            clock = json.loads(answer.read())
    except urllib.error.HTTPError as e:
        click.echo(json.loads(e.read() or b"{}").get("message") or str(e), err=True)
        sys.exit(1)
    except (urllib.error.URLError, OSError) as e:
        click.echo(f"cannot reach {server}: {e}", err=True)
        sys.exit(1)
    click.echo(f"{clock['time']} ({clock['seconds']:g}s of virtual time)")


def _from_kubeconfig(path: str | None, token: str | None) -> tuple[str, str | None]:
    import os

    path = path or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or str(Path.home() / ".kube" / "config")
    try:
        config = yaml.safe_load(Path(path).read_text()) or {}
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next((u.get("user") or {} for u in config.get("users") or [] if u["name"] == context.get("user")), {})
    except (OSError, KeyError, StopIteration, TypeError, yaml.YAMLError) as e:
        raise click.UsageError(f"no server given and none found in kubeconfig {path}: {e}") from None
    return cluster["server"], token or user.get("token")
