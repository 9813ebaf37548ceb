"""Reading a FailedScheduling message back into its parts, for the outputs that group pending pods
by why they wait (the report's pending chart, capacity's stop reasons).

The message is the scheduler's FitError: "0/N nodes are available: <count> <reason>, ... ." with
the reasons sorted, then what the PostFilter plugins said, joined by ", " (DefaultPreemption's
begins "preemption: " and is itself counted over nodes). A reason may hold ", " itself (a taint's
value), so a piece that does not start with a count belongs to the reason before it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_AVAILABLE = re.compile(r"0/(\d+) nodes are available: (.*)", re.S)
_COUNTED = re.compile(r"(\d+) (.+)", re.S)
PREEMPTION = "preemption: "


@dataclass(frozen=True)
class FitError:
    nodes: int | None  # the N of "0/N"; None for a message that is not a FitError's
    reasons: dict[str, int]  # reason -> how many nodes gave it
    preemption: dict[str, int] | str | None  # what preemption said: counted per node, or its sentence
    text: str  # the message itself

    @property
    def reason_set(self) -> str:
        """The reasons without their counts, so that pods held back for the same reasons group
        together ("Insufficient cpu + node(s) had untolerated taint(s)"); a message that is not a
        FitError's is its first sentence."""
        if not self.reasons:
            return self.text.split(". ", 1)[0].rstrip(".")
        return " + ".join(sorted(self.reasons))


@functools.lru_cache(maxsize=4096)
def parse(message: str) -> FitError:
    """The parts of `message` (messages repeat across retries and pods: parsed once each). The
    answer is shared between callers: read it, do not change it."""
    m = _AVAILABLE.fullmatch(message.strip())
    if m is None:
        return FitError(None, {}, None, message)
    body = m.group(2)
    cut = body.find(". ")
    counted, rest = (body, "") if cut < 0 else (body[:cut], body[cut + 2:])
    preemption: dict[str, int] | str | None = None
    at = rest.find(PREEMPTION)
    if at >= 0:
        said = rest[at + len(PREEMPTION):]
        nested = _AVAILABLE.fullmatch(said)
        preemption = _counts(nested.group(2)) if nested else said
    return FitError(int(m.group(1)), _counts(counted), preemption, message)


def _counts(text: str) -> dict[str, int]:
    parts: list[list] = []
    for piece in text.strip().removesuffix(".").split(", "):
        m = _COUNTED.fullmatch(piece)
        if m is not None:
            parts.append([m.group(2), int(m.group(1))])
        elif parts:
            parts[-1][0] += ", " + piece
    return {reason: count for reason, count in parts}
