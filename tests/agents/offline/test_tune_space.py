"""The wider parameter spaces the tuning pass draws from (agents/offline/tune_space.py)."""

from __future__ import annotations

from agents.offline.templates import families_for
from agents.offline.tune_space import MORE, widen


def test_the_hand_picked_sets_come_first_then_their_neighbours():
    space = [{"schedule": "static", "simdlen": 0}, {"schedule": "dynamic", "simdlen": 16},
             {"blas": "openblas", "schedule": "static"}]
    wide = widen(space)
    assert wide[:3] == space
    keys = [tuple(sorted(p.items())) for p in wide]
    assert len(keys) == len(set(keys)), "no set twice"
    first = space[0]
    tiled = [p for p in wide[3:] if "simdlen" in p]
    distances = [sum(p[k] != first[k] for k in first) for p in tiled]
    assert distances == sorted(distances) and distances[0] == 1
    assert {p["simdlen"] for p in tiled} == {0, 16, *MORE["simdlen"]}
    # a key group is varied within itself: the BLAS rank never gets a simdlen
    assert all(set(p) in ({"schedule", "simdlen"}, {"blas", "schedule"}) for p in wide)


def test_every_cpu_family_widens_its_own_space():
    for name, module in families_for("cpu").items():
        wide = widen(module.PARAM_SPACE)
        assert wide[:len(module.PARAM_SPACE)] == module.PARAM_SPACE, name
        assert len(wide) >= len(module.PARAM_SPACE), name
