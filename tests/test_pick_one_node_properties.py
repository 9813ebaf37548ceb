"""pickOneNodeForPreemption applies its criteria one after another, keeping the candidates best
on each, until one is left. pick_one_node finds the winner and the criterion that decided in a
pass or two over the candidates' kept values; both must be what the step-by-step walk gives,
ties (several candidates best on every criterion) included."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kubesched.scheduler.candidates import CRITERIA, Candidate, pick_one_node


def step_by_step(candidates: list[Candidate]) -> tuple[Candidate, str]:
    """As upstream: the candidates best on each criterion in turn, until one is left."""
    if len(candidates) == 1:
        return candidates[0], "only candidate"
    remaining = candidates
    for i, (name, _) in enumerate(CRITERIA):
        top = max(c.scores[i] for c in remaining if c.scores is not None)
        remaining = [c for c in remaining if c.scores is not None and c.scores[i] == top]
        if len(remaining) == 1:
            return remaining[0], name
    return remaining[0], "first of the candidates left"


# Few distinct values per criterion, so that candidates often tie on some and differ on a later one.
values = st.tuples(*(st.integers(-2, 0) for _ in CRITERIA)).map(lambda t: tuple(float(v) for v in t))


@given(st.lists(values, min_size=1, max_size=12))
def test_the_winner_and_the_deciding_criterion_are_the_step_by_step_ones(scores: list[tuple[float, ...]]) -> None:
    candidates = [Candidate(f"n{i}", [], 0, scores=s) for i, s in enumerate(scores)]
    winner, criterion = pick_one_node(candidates, 0.0)
    expected, expected_criterion = step_by_step(candidates)
    assert winner is expected
    assert criterion == expected_criterion
