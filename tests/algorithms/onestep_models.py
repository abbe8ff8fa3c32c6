"""One-step models whose rollouts are known exactly: zero weights, so each predicts its targets'
means (tests of the expansion and of the horizon's choice)."""
import numpy as np

from resolvent.algorithms.onestep import OneStepModel


def drift_model(delta, terminated: float | None = None) -> OneStepModel:
    """A one-step model with zero weights: it predicts its target means, next_obs = obs + delta
    and a constant termination probability."""
    keys = ("terminated",) if terminated is not None else ()
    y_mean = np.array([*delta, *([terminated] if terminated is not None else [])], np.float32)
    dy, dx, h = len(y_mean), len(delta) + 1, 4
    params = {"params": {"Dense_0": {"kernel": np.zeros((dx, h), np.float32), "bias": np.zeros(h, np.float32)},
                         "Dense_1": {"kernel": np.zeros((h, dy), np.float32), "bias": np.zeros(dy, np.float32)}}}
    return OneStepModel(params, np.zeros(dx, np.float32), np.ones(dx, np.float32), y_mean,
                        np.ones(dy, np.float32), keys, (h,))


def ensemble(deltas, keep: int) -> OneStepModel:
    """Members with zero weights, member e drifting next_obs = obs + deltas[e]."""
    base = drift_model(deltas[0])
    e, (dx, h), dy = len(deltas), base.params["params"]["Dense_0"]["kernel"].shape, len(deltas[0])
    params = {"params": {"Dense_0": {"kernel": np.zeros((e, dx, h), np.float32), "bias": np.zeros((e, h), np.float32)},
                         "Dense_1": {"kernel": np.zeros((e, h, dy), np.float32),
                                     "bias": np.asarray(deltas, np.float32) - deltas[0]}}}
    return base._replace(params=params, keep=keep)


def goal_model(delta, r_go: float, r_end: float, rule) -> OneStepModel:
    """A split one-step model with zero weights: next_obs = obs + delta, the reward r_go on a
    step that goes on and r_end on one that ends, where ``rule`` says it ends."""
    base = drift_model(delta)
    ds, h = len(delta), base.params["params"]["Dense_0"]["kernel"].shape[1]
    y_mean = np.array([*delta, r_go, 0.0, r_end, 1.0], np.float32)   # deltas, (reward, terminated) x (go, end)
    last = {"kernel": np.zeros((h, ds + 4), np.float32), "bias": np.zeros(ds + 4, np.float32)}
    params = {"params": {"Dense_0": base.params["params"]["Dense_0"], "Dense_1": last}}
    return base._replace(params=params, y_mean=y_mean, y_std=np.ones(ds + 4, np.float32),
                         keys=("reward", "terminated"), split=True, terminal=rule)


def action_model(offsets, terminated: float | None = None) -> OneStepModel:
    """Linear members (no hidden layer): member e moves s_{t+1} = s_t + a_t + offsets[e], and
    predicts a constant termination probability. Under pi(s) = -2 s every member is in a 2-cycle
    from its first state, s -> -s + c -> s; under pi(s) = -1.5 s (one member, offset 0) s_t
    = (-1/2)^t s_0 settles at the fixed point 0."""
    offsets = np.asarray(offsets, np.float32)                                          # (E, ds)
    e, ds = offsets.shape
    keys = ("terminated",) if terminated is not None else ()
    dy = ds + len(keys)
    kernel = np.zeros((2 * ds, dy), np.float32)
    kernel[ds:, :ds] = np.eye(ds)                                                      # the action moves the state
    bias = np.zeros((e, dy), np.float32)
    bias[:, :ds] = offsets
    y_mean = np.array([0.0] * ds + ([terminated] if terminated is not None else []), np.float32)
    layer = ({"kernel": kernel, "bias": bias[0]} if e == 1 else
             {"kernel": np.repeat(kernel[None], e, 0), "bias": bias})
    return OneStepModel({"params": {"Dense_0": layer}}, np.zeros(2 * ds, np.float32), np.ones(2 * ds, np.float32),
                        y_mean, np.ones(dy, np.float32), keys, ())


def split_model(dx: float = 0.1) -> OneStepModel:
    """A closed loop that splits at y = 0: next_obs = (x + dx, 2 y) for obs (x, y), whatever the
    action (one ReLU unit for y > 0, one for y < 0): states a little either side of y = 0 stay
    close for a few steps, then go opposite ways; y = 0 itself stays there."""
    base = drift_model(np.array([dx, 0.0], np.float32))
    kernel0 = np.zeros((3, 4), np.float32)
    kernel0[1, 0], kernel0[1, 1] = 1.0, -1.0                                    # relu(y), relu(-y)
    kernel1 = np.zeros((4, 2), np.float32)
    kernel1[0, 1], kernel1[1, 1] = 1.0, -1.0                                    # y = relu(y) - relu(-y)
    params = {"params": {"Dense_0": {"kernel": kernel0, "bias": np.zeros(4, np.float32)},
                         "Dense_1": {"kernel": kernel1, "bias": np.zeros(2, np.float32)}}}
    return base._replace(params=params)


def goal_ensemble(deltas, r_go: float, r_end: float, rule) -> OneStepModel:
    """``goal_model``'s members, member e drifting next_obs = obs + deltas[e]."""
    base = goal_model(np.asarray(deltas[0], np.float32), r_go, r_end, rule)
    e, (dx, h), dy = len(deltas), base.params["params"]["Dense_0"]["kernel"].shape, len(base.y_mean)
    bias = np.zeros((e, dy), np.float32)
    bias[:, :len(deltas[0])] = np.asarray(deltas, np.float32) - deltas[0]
    params = {"params": {"Dense_0": {"kernel": np.zeros((e, dx, h), np.float32), "bias": np.zeros((e, h), np.float32)},
                         "Dense_1": {"kernel": np.zeros((e, h, dy), np.float32), "bias": bias}}}
    return base._replace(params=params)
