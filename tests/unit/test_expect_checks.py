"""The loader's expectation vocabulary and the run's checks describe the same entries: every kind
the loader accepts is judged, by a check built on that kind's own class (so a field the loader
accepts is one the check was written against)."""

from kubesched.input.expectations import EXPECTATIONS
from kubesched.sim.expect import CHECKS


def test_every_accepted_kind_has_its_check() -> None:
    assert list(CHECKS) == list(EXPECTATIONS)


def test_each_check_extends_the_class_the_loader_validates_with() -> None:
    for subject, judged in CHECKS.items():
        assert isinstance(judged, type(EXPECTATIONS[subject])), subject
