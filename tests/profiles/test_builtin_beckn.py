"""The built-in Beckn profiles: the mock-BPP workload and the beckn-onix adapter template."""

from __future__ import annotations

from protobench.profiles import loader
from protobench.protocols.beckn.options import OPERATIONS, BecknOptions


def test_beckn_onix_is_the_bap_workload_aimed_at_an_adapter() -> None:
    onix = loader.load("beckn-onix")
    bap = loader.load("beckn-bap").profile
    profile = onix.profile
    assert profile.protocol == "beckn"
    assert [(g.op, g.count) for g in profile.group] == [(g.op, g.count) for g in bap.group]
    assert {g.op for g in profile.group} == set(OPERATIONS)
    options = BecknOptions.model_validate(profile.options)
    assert options.bpp_id == "bpp-network"
    assert "--target http://127.0.0.1:8081/bpp/receiver" in onix.text
    assert "/bap/caller --opt sign=false" in onix.text
