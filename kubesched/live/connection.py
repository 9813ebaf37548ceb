"""One API server connection for the live commands: the official client's configuration (a
kubeconfig, or the pod's service account in a cluster) and raw JSON requests on it.

Requests go through the client's REST layer but not its typed models: components work on the
objects' JSON form (the models would drop unknown fields and rename keys). Transient failures
(a refused connection, 429 without a budget behind it, 5xx) are retried with capped exponential
backoff, as client-go's rest client does; what the server refuses is raised as the APIError the
in-process API server would raise, so components handle both alike.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Iterator
from typing import Any

import urllib3

from kubesched.apiserver import errors

RETRIES = 5
BACKOFF = 0.2  # seconds, doubled per retry up to MAX_BACKOFF
MAX_BACKOFF = 5.0
TRANSIENT = (500, 502, 503, 504)

_BY_CODE: dict[int, type[errors.APIError]] = {
    400: errors.BadRequest, 403: errors.Forbidden, 404: errors.NotFoundError, 409: errors.ConflictError,
    413: errors.RequestEntityTooLarge, 415: errors.UnsupportedMediaType, 422: errors.Invalid,
    429: errors.TooManyRequests,
}


class Unreachable(errors.APIError):
    """The API server did not answer after the retries; components treat it as any failed
    request (a binding is retried, a pass skipped)."""

    code = 503
    reason = "ServiceUnavailable"


def api_error(code: int, body: bytes) -> errors.APIError:
    """The error a Status answer stands for."""
    try:
        answer = json.loads(body)
    except ValueError:
        answer = {}
    message = answer.get("message") or body.decode(errors="replace") or f"HTTP {code}"
    cls = errors.AlreadyExists if answer.get("reason") == "AlreadyExists" else _BY_CODE.get(code, errors.APIError)
    e = cls(message, [c.get("message", "") for c in (answer.get("details") or {}).get("causes") or ()])
    if cls is errors.APIError:
        e.code = code
    return e


class Connection:
    def __init__(self, kubeconfig: str | None = None, context: str | None = None) -> None:
        from kubernetes import client, config  # a large import: only the live commands need it

        self._api_exception = client.ApiException
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            configuration = client.Configuration()
            config.load_incluster_config(configuration)
            self.client = client.ApiClient(configuration)
        else:
            self.client = config.new_client_from_config(config_file=kubeconfig, context=context)
        self.client.user_agent = "kubesched/v1.35.0"

    def close(self) -> None:
        self.client.close()

    def _call(self, method: str, path: str, query: dict[str, Any] | None, body: Any, content_type: str,
              stream: bool = False, timeout: float | None = 60) -> Any:
        """The raw answer (its `response` is urllib3's, unread); ApiException for an error status."""
        method, url, headers, body, _ = self.client.param_serialize(
            method, path, query_params=list((query or {}).items()),
            header_params={"Content-Type": content_type, "Accept": "application/json"}, body=body,
            auth_settings=["BearerToken"])
        answer = self.client.call_api(method, url, header_params=headers, body=body,
                                      _request_timeout=None if stream else timeout)
        if not 200 <= answer.status < 300:
            raise self._api_exception(status=answer.status, reason=answer.reason, body=answer.read())
        return answer

    def request(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None,
                content_type: str = "application/json", retry: bool = True) -> dict[str, Any]:
        """The JSON answer; raises the APIError of a refusal, Unreachable when the server is gone."""
        delay = BACKOFF
        for attempt in range(RETRIES + 1):
            try:
                data = self._call(method, path, query, body, content_type).read()
                return json.loads(data) if data else {}
            except self._api_exception as e:
                if not retry or e.status not in TRANSIENT or attempt == RETRIES:
                    raise api_error(e.status, e.body or b"") from None
            except (urllib3.exceptions.HTTPError, OSError) as e:
                if not retry or attempt == RETRIES:
                    raise Unreachable(f"{method} {path}: {e}") from None
            time.sleep(delay * (1 + random.random() * 0.2))
            delay = min(delay * 2, MAX_BACKOFF)
        raise AssertionError("unreachable")

    def watch(self, path: str, query: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The events of one watch request, as they arrive; ends when the server ends it. A
        connection lost midway raises Unreachable: the caller resumes from its last version."""
        try:
            answer = self._call("GET", path, {**query, "watch": "true"}, None, "application/json", stream=True)
        except self._api_exception as e:
            raise api_error(e.status, e.body or b"") from None
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise Unreachable(f"watch {path}: {e}") from None
        buffer = b""
        raw = answer.response
        try:
            for chunk in raw.stream(64 * 1024, decode_content=True):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise Unreachable(f"watch {path}: {e}") from None
        finally:
            raw.release_conn()
