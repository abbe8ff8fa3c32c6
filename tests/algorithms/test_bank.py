import numpy as np
import pytest

from resolvent.algorithms.bank import BankConfig, bank_starts, episode_starts


def episodes(lengths: list[int], ds: int = 2, seed: int = 0) -> dict:
    """Transitions stored episode by episode: next_obs of a step is obs of the next in its episode."""
    rng = np.random.default_rng(seed)
    obs, nxt = [], []
    for n in lengths:
        s = rng.normal(size=(n + 1, ds)).astype(np.float32)
        obs.append(s[:-1])
        nxt.append(s[1:])
    return {"obs": np.concatenate(obs), "next_obs": np.concatenate(nxt)}


def test_episode_starts_are_where_a_step_does_not_follow_the_last():
    data = episodes([4, 3, 5])
    np.testing.assert_array_equal(episode_starts(data["obs"], data["next_obs"]), [0, 4, 7])


def test_bank_starts_take_the_episodes_first_states_then_others():
    data = episodes([4, 3, 5, 6])
    starts = bank_starts(data, BankConfig(points=8, starts=0.5), seed=0)
    assert starts.shape == (8, 2) and len(np.unique(starts, axis=0)) == 8          # no state twice
    firsts = data["obs"][[0, 4, 7, 12]]
    assert all(any(np.array_equal(f, s) for s in starts) for f in firsts)            # all four first states
    few = bank_starts(data, BankConfig(points=8, starts=0.25), seed=0)               # two of them
    assert sum(any(np.array_equal(f, s) for s in few) for f in firsts) >= 2
    np.testing.assert_array_equal(bank_starts(data, BankConfig(points=8), seed=0), starts)   # same seed, same states
    with pytest.raises(ValueError, match="more than the dataset's 18 transitions"):
        bank_starts(data, BankConfig(points=19), seed=0)


@pytest.mark.parametrize("bad, why", [(dict(points=-1), "points must be >= 0"),
                                      (dict(points=4, steps=0), "steps must be 1 to"),
                                      (dict(points=4, horizon=10, steps=10), "steps must be 1 to"),
                                      (dict(neighbours=0), "neighbours must be >= 1"),
                                      (dict(starts=1.5), "a share of the points"),
                                      (dict(eps=-0.1), "eps must be >= 0")])
def test_bank_config_refuses_what_it_cannot_do(bad, why):
    with pytest.raises(ValueError, match=why):
        BankConfig(**bad)
