"""The synthetic Haystack portfolio: size, shape, references, history, determinism."""

from __future__ import annotations

from hs_py.kinds import Number, Ref

from protobench.targets.haystack_data import DataSpec, generate


def test_default_portfolio_is_about_the_seed_size() -> None:
    data = generate()
    assert len(data.ids("site")) == 3
    assert len(data.ids("ahu", "equip")) == 12
    assert len(data.ids("vav", "equip")) == 330
    assert len(data.ids("meter", "equip")) == 18
    assert len(data.ids("point")) == 2946
    assert len(data.entities) == 3309


def test_ids_are_unique_and_every_ref_resolves() -> None:
    data = generate(DataSpec(sites=2, vavs_per_site=5))
    ids = [e["id"].val for e in data.entities]
    assert len(ids) == len(set(ids))
    known = set(ids)
    for entity in data.entities:
        for tag in ("siteRef", "equipRef", "ahuRef"):
            if tag in entity:
                assert isinstance(entity[tag], Ref)
                assert entity[tag].val in known, (entity["id"], tag)
    for point in (e for e in data.entities if "point" in e):
        assert "equipRef" in point
        assert "siteRef" in point


def test_points_are_typed_and_only_set_points_and_commands_are_writable() -> None:
    data = generate(DataSpec(sites=1, vavs_per_site=3))
    for point in (e for e in data.entities if "point" in e):
        if point["kind"] == "Number":
            assert isinstance(point["curVal"], Number)
        else:
            assert point["kind"] == "Bool"
            assert isinstance(point["curVal"], bool)
        assert ("writable" in point) == ("sp" in point or "cmd" in point)
        assert ("sensor" in point) != ("writable" in point)


def test_history_of_every_point_is_ordered_and_sized() -> None:
    spec = DataSpec(sites=1, vavs_per_site=2, his_samples=12)
    data = generate(spec)
    assert set(data.history) == set(data.ids("point", "his"))
    for samples in data.history.values():
        assert len(samples) == 12
        stamps = [s["ts"] for s in samples]
        assert stamps == sorted(stamps)
        assert stamps[-1] == spec.end


def test_same_spec_same_data() -> None:
    spec = DataSpec(sites=1, vavs_per_site=4)
    assert generate(spec).entities == generate(spec).entities
    assert generate(spec).entities != generate(DataSpec(sites=1, vavs_per_site=4, seed=8)).entities
