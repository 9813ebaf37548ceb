"""FailedScheduling messages read back into their parts: the report groups pending pods by them and
capacity explains its stops with them."""

from kubesched.sim import fiterror


def test_reasons_postfilter_messages_and_preemption_counts() -> None:
    found = fiterror.parse(
        "0/5 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu, team}, 4 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/5 nodes are available: 1 Preemption is not helpful for "
        "scheduling, 4 No preemption victims found for incoming pod.")
    assert found.nodes == 5
    # A reason holding ", " (the taint's value) stays whole.
    assert found.reasons == {"node(s) had untolerated taint {dedicated: gpu, team}": 1, "Insufficient cpu": 4}
    assert found.preemption == {"Preemption is not helpful for scheduling": 1,
                                "No preemption victims found for incoming pod": 4}
    assert found.reason_set == "Insufficient cpu + node(s) had untolerated taint {dedicated: gpu, team}"


def test_preemption_said_in_a_sentence_and_other_messages() -> None:
    never = fiterror.parse("0/3 nodes are available: 3 Insufficient memory. preemption: not eligible due to "
                           "preemptionPolicy=Never.")
    assert never.reasons == {"Insufficient memory": 3}
    assert never.preemption == "not eligible due to preemptionPolicy=Never."
    other = fiterror.parse('persistentvolumeclaim "data" not found. more text')
    assert (other.nodes, other.reasons, other.reason_set) == (None, {}, 'persistentvolumeclaim "data" not found')
