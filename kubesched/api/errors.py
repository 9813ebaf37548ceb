"""Input problems: one line each, naming where the bad input is, all collected before failing."""

from __future__ import annotations

from dataclasses import dataclass

# Characters that would split a problem's line (str.splitlines() breaks on each), shown escaped instead.
_LINE_BREAKS = {c: repr(chr(c))[1:-1] for c in (*range(0x0A, 0x0E), *range(0x1C, 0x1F), 0x85, 0x2028, 0x2029)}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input.

    `doc` is the 1-based document number within `source` (None for problems with the file itself);
    `path` is the field path inside that document ("" when the whole document is meant).
    """

    source: str
    doc: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = self.source if self.doc is None else f"{self.source} doc {self.doc}"
        line = f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"
        return line.translate(_LINE_BREAKS)  # input text quoted in a message must not break the line


class InputError(Exception):
    """Every problem found in the input; raised once so the user can fix them all in one go."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems)
        self.problems = problems

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)
