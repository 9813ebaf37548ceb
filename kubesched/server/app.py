"""The HTTP side of `serve`: kube-apiserver's URL layout, content negotiation and error answers
on aiohttp, in front of the engine's one thread (the asyncio loop's).

Every request runs to completion on the loop without awaiting in between, so the engine is never
entered twice at once; only watches await, between the lines they send, and answers, until the
writes they show are durable (group commit: many requests' writes share one fsync). Before a
request the clock catches up with the wall clock, after it the driver runs the components'
reactions.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import re
from typing import Any

from aiohttp import web

from kubesched.api.duration import parse_duration
from kubesched.api.jsonbytes import dumps_object
from kubesched.api.restmapping import Resource, gated_off, lookup
from kubesched.apiserver.errors import APIError
from kubesched.server import discovery, openapi, openapi_v2, protobuf, turns
from kubesched.server import status as st
from kubesched.server.authz import Gate
from kubesched.server.custom import CustomResource
from kubesched.server.durability import Durability, DurabilityError
from kubesched.server.engine import Engine
from kubesched.server.rest import Request
from kubesched.server.watch import Lines, Watch

log = logging.getLogger("kubesched.serve")

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's --max-request-bytes default (3 MiB)
BOOKMARK_INTERVAL = 60.0  # wall seconds between watch bookmarks, as kube-apiserver sends them
MIN_REQUEST_TIMEOUT = 1800  # watches without timeoutSeconds last 30-60 min, as upstream's
CLOCK_PATH = "/kubesched.io/clock"
WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})
_HEADER_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _warning_value(text: str) -> str:
    """One `299 - "text"` entry as net/http writes utilnet.NewWarningHeader's: quotes and
    backslashes escaped, CR and LF as spaces (and, as aiohttp refuses them too, every other
    control character but tab), and what cannot be UTF-8 (a lone surrogate from JSON) as U+FFFD.
    Warnings quote the client's own field names, which may hold anything; a control character
    made aiohttp drop the connection instead of answering."""
    text = _HEADER_CONTROL.sub(" ", text.replace("\\", "\\\\").replace('"', '\\"'))
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return f'299 - "{text}"'


def _json(answer: Any, code: int = 200, warnings: list[str] | None = None) -> web.Response:
    headers = {"Warning": ", ".join(map(_warning_value, warnings))} if warnings else None
    return web.Response(body=dumps_object(answer), status=code,
                        content_type="application/json", headers=headers)


def _status(answer: dict[str, Any]) -> web.Response:
    return _json(answer, answer.get("code", 500))


class Server:
    def __init__(self, engine: Engine, token: str | None = None, max_body: int = MAX_BODY,
                 bookmark_interval: float = BOOKMARK_INTERVAL) -> None:
        self.engine = engine
        self.token = token
        self.max_body = max_body
        self.bookmark_interval = bookmark_interval
        self.watches: set[Watch] = set()
        self.lines = Lines()
        self.gate = Gate(engine, token)
        # Built-in resources the cluster's feature gates leave out, as kube-apiserver leaves them uninstalled.
        self.hidden = gated_off(engine.cluster.feature_gates.enabled)
        self.durability = Durability(engine.store)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_body + 1)
        app.router.add_route("*", "/{tail:.*}", self.dispatch)
        app.on_startup.append(self._start)
        app.on_shutdown.append(self._shutdown)
        return app

    async def _start(self, _: web.Application) -> None:
        self.durability.start()
        self.engine.driver.start()

    async def _shutdown(self, _: web.Application) -> None:
        for w in list(self.watches):
            w.stop()
            w.end()
        await self.engine.driver.stop()

    # ---- dispatch ------------------------------------------------------------------------------

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        response = await self._answer(request)
        if isinstance(response, web.Response):  # not a watch, whose stream has ended already
            try:
                await self.durability.wait()
            except DurabilityError as e:
                return _status(st.status(500, "InternalError", f"Internal error occurred: {e}"))
        return response

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        try:
            if (answer := await self.gate.filter(request)) is not None:
                return answer
            response = await self._route(request)
            self.gate.after(request)
            return response
        except web.HTTPRequestEntityTooLarge:
            return _status(st.status(413, "RequestEntityTooLarge",
                                     f"Request entity too large: limit is {self.max_body}"))
        except web.HTTPException:
            raise  # a redirect
        except APIError as e:
            return _status(st.from_error(e, getattr(e, "resource", None), getattr(e, "name", None)))
        except Exception as e:  # a bug must answer 500, never take the server down
            log.exception("internal error on %s %s", request.method, request.path)
            return _status(st.status(500, "InternalError", f"Internal error occurred: {e}"))
        finally:
            self.engine.driver.kick()

    async def _route(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        method = request.method
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok")
        if path == "/version":
            return _json(discovery.version())
        if path.startswith(CLOCK_PATH):
            return await self._clock(request, path)
        if parts[:1] == ["openapi"]:
            return self._openapi(request, parts)
        if parts in (["api"], ["apis"]):
            custom = self.engine.custom.all()
            if discovery.wants_aggregated(request.headers.get("Accept")):
                aggregated = discovery.aggregated_discovery(parts == ["api"], custom, self.hidden)
                return web.Response(body=json.dumps(aggregated).encode(),
                                    headers={"Content-Type": discovery.AGGREGATED_CONTENT_TYPE, "Vary": "Accept"})
            answer = discovery.api_versions(request.host) if parts == ["api"] else discovery.api_group_list(custom, self.hidden)
            return web.Response(body=json.dumps(answer).encode(), content_type="application/json",
                                headers={"Vary": "Accept"})
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 2:
            if len(parts) == 2:
                found = discovery.api_group(parts[1], self.engine.custom.all(), self.hidden)
                return _json(found) if found is not None else self._not_found()
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return self._not_found()
        if not rest:
            found = discovery.api_resource_list(group, version, self.engine.custom.all(), self.hidden)
            return _json(found) if found is not None else self._not_found()
        if method not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            return _status(st.method_not_allowed())
        return await self._resource(request, group, version, rest)

    def _lookup(self, group: str, version: str, plural: str) -> Resource | None:
        found = lookup(group, version, plural)
        if found is not None and found not in self.hidden:
            return found
        return self.engine.custom.lookup(group, version, plural)

    @staticmethod
    def _not_found() -> web.Response:
        return _status(st.status(404, "NotFound", "the server could not find the requested resource"))

    def _custom_documents(self) -> dict[str, tuple[bytes, str]]:
        """The OpenAPI v3 documents of the group/versions CustomResourceDefinitions serve, by path."""
        by_gv: dict[tuple[str, str], list[Any]] = {}
        for r in self.engine.custom.all():
            by_gv.setdefault((r.group, r.version), []).append(r)
        return {f"apis/{g}/{v}": openapi.custom_document_bytes(openapi.custom_document(g, v, rs))
                for (g, v), rs in sorted(by_gv.items())}

    def _openapi(self, request: web.Request, parts: list[str]) -> web.Response:
        if parts == ["openapi", "v3"]:
            index = openapi.openapi_v3_index()
            for path, (_, digest) in self._custom_documents().items():
                index["paths"][path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
            return _json(index)
        if parts[:2] == ["openapi", "v3"]:
            path = "/".join(parts[2:])
            doc = openapi.openapi_v3_document(path)
            current = openapi.openapi_v3_hash(path)
            if doc is None and (custom := self._custom_documents().get(path)) is not None:
                doc, current = custom
            if doc is not None:
                asked = request.query.get("hash")
                if asked and asked != current:  # an old URL: where the document is now
                    raise web.HTTPMovedPermanently(f"/openapi/v3/{path}?hash={current}")
                headers = {"ETag": f'"{current}"', "Vary": "Accept"}
                if asked:  # a URL naming the content never changes: cache it for good
                    headers["Cache-Control"] = "public, immutable"
                    headers["Expires"] = "Thu, 31 Dec 2099 23:59:59 GMT"
                return web.Response(body=doc, content_type="application/json", headers=headers)
        if parts == ["openapi", "v2"]:
            custom = {name: s for r in self.engine.custom.all() for name, s in openapi.custom_schemas(r, r.schema).items()}
            return web.Response(body=openapi_v2.with_custom(custom), headers={"Content-Type": openapi_v2.PROTOBUF})
        return self._not_found()

    async def _clock(self, request: web.Request, path: str) -> web.Response:
        driver = self.engine.driver
        if path == CLOCK_PATH + "/advance" and request.method == "POST":
            body = await self._body(request)
            try:
                by = parse_duration(str((json.loads(body) if body else {}).get("by", "")))
                driver.advance(by)
            except ValueError as e:
                return _status(st.bad_request(f"advance: {e}"))
        elif path != CLOCK_PATH or request.method != "GET":
            return self._not_found()
        now = driver.pump()
        return _json({"apiVersion": "kubesched.io/v1alpha1", "kind": "Clock", "seconds": now,
                      "time": self.engine.api.timestamp(), "speed": driver.speed})

    async def _body(self, request: web.Request) -> bytes:
        if request.content_length is not None and request.content_length > self.max_body:
            raise web.HTTPRequestEntityTooLarge(max_size=self.max_body, actual_size=request.content_length)
        return await request.read()

    # ---- resources -----------------------------------------------------------------------------

    async def _resource(self, request: web.Request, group: str, version: str, segs: list[str]) -> web.StreamResponse:
        namespace = None
        watch_prefix = segs[0] == "watch"
        if watch_prefix:
            segs = segs[1:]
        if len(segs) >= 3 and segs[0] == "namespaces" and self._lookup(group, version, segs[2]) is not None:
            namespace, segs = segs[1], segs[2:]
        if not segs:
            return self._not_found()
        resource = self._lookup(group, version, segs[0])
        name = segs[1] if len(segs) > 1 else None
        sub = segs[2] if len(segs) > 2 else None
        if resource is None or len(segs) > 3 or (sub is not None and sub not in resource.subresources) \
                or (namespace is not None and not resource.namespaced):
            return self._not_found()
        if resource.namespaced and name is not None and namespace is None:
            return self._not_found()
        query = dict(request.query)
        method = request.method
        accept = request.headers.get("Accept", "")
        table = "as=Table" in accept
        if table and query.get("includeObject", "Metadata") not in ("", "None", "Metadata", "Object"):
            return _status(st.bad_request(
                f'Unable to convert to Table as requested: includeObject: Unsupported value: '
                f'"{query["includeObject"]}": supported values: "Metadata", "None", "Object"'))
        if method == "GET":
            verb = "get" if name else ("watch" if watch_prefix or query.get("watch") in ("true", "1") else "list")
        elif method == "POST":
            verb = "create"
            if name is not None and sub not in ("binding", "eviction"):
                return _status(st.method_not_allowed())
        elif name is None and method != "DELETE":
            return _status(st.method_not_allowed())
        else:
            verb = {"PUT": "update", "PATCH": "patch", "DELETE": "delete" if name else "deletecollection"}[method]
        if (verb in ("get", "update", "patch") and sub in ("binding", "eviction")) or verb not in resource.verbs \
                and not (sub and verb in ("get", "update", "patch", "create")):
            return _status(st.method_not_allowed())
        body = await self._body(request) if method in ("POST", "PUT", "PATCH", "DELETE") else b""
        ctype = request.headers.get("Content-Type", "application/json")
        if body and "protobuf" in ctype:  # kubectl's generators send it; client-go never retries in JSON
            body, ctype = json.dumps(protobuf.decode_body(body)).encode(), "application/json"
        if body and "cbor" in ctype:
            return _status(st.status(415, "UnsupportedMediaType", 'the body of the request was in an unknown '
                                     'format - accepted media types include: application/json, application/yaml'))
        req = Request(verb, resource, namespace if resource.namespaced else None, name, sub, query, body,
                      ctype, request.headers.get("User-Agent", ""), table)
        if (user := request.get("user")) is not None:
            req.user = user.info()
            req.authorize = self.gate.authorize_attributes
        if isinstance(resource, CustomResource) and resource.deprecation_warning:
            req.warnings.append(resource.deprecation_warning)
        if resource.namespaced and namespace is None and verb in ("create", "deletecollection"):
            return self._not_found()
        rest = self.engine.rest
        self.engine.driver.pump()
        if verb == "watch":
            return await self._watch(request, req)
        try:
            req.check_options()
            if verb in WRITES and self.engine.webhooks.active():  # it may wait on a webhook: on its own turn
                code, answer = await turns.run(lambda: getattr(rest, verb)(req))
            else:
                code, answer = getattr(rest, verb)(req)
        except APIError as e:
            e.resource = getattr(e, "resource", resource)  # type: ignore[attr-defined]
            e.name = getattr(e, "name", None) or name  # type: ignore[attr-defined]
            raise
        answer = _partial_metadata(answer, accept)
        return _json(answer, code, req.warnings)

    async def _watch(self, request: web.Request, req: Request) -> web.StreamResponse:
        watch = Watch(self.engine.rest, req, self.engine.rest.selection(req), self.lines)
        try:
            timeout = float(req.query.get("timeoutSeconds") or 0)
        except ValueError:
            return _status(st.bad_request(f"timeoutSeconds: invalid value {req.query.get('timeoutSeconds')!r}"))
        timeout = timeout or MIN_REQUEST_TIMEOUT * (1 + random.random())
        bookmarks = req.query.get("allowWatchBookmarks") in ("true", "1")
        watch.start()
        self.watches.add(watch)
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json",
                                                           "Transfer-Encoding": "chunked"})
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            await response.prepare(request)
            while True:
                left = deadline - loop.time()
                if left <= 0:
                    break
                try:
                    lines, done, version = await asyncio.wait_for(watch.batch(),
                                                                  timeout=min(left, self.bookmark_interval))
                except TimeoutError:
                    if bookmarks:
                        watch.bookmark()
                    continue
                await self.durability.wait(version)
                if lines:
                    await response.write(lines)
                if done:
                    break
        except (ConnectionResetError, asyncio.CancelledError, DurabilityError):
            pass  # the client left, or what it would be sent next can never be made durable
        finally:
            watch.stop()
            self.watches.discard(watch)
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response


def _partial_metadata(answer: dict[str, Any], accept: str) -> dict[str, Any]:
    """`as=PartialObjectMetadata[List]`: objects reduced to their metadata (metadata informers)."""
    if "as=PartialObjectMetadata" not in accept or answer.get("kind") in ("Status", "Table"):
        return answer
    part = {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata"}
    if "items" in answer:
        return {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": answer["metadata"],
                "items": [{**part, "metadata": o["metadata"]} for o in answer["items"]]}
    return {**part, "metadata": answer.get("metadata", {})}
