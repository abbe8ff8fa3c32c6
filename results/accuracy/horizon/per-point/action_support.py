"""A signal without ground truth for the states where the model's rollout cannot be trusted:
how far pi's action at a state is from every action the data took at the K states nearest it,

    d_K(s) = min_{j in NN_K(s)} || pi(s) - a_j ||      (NN_K in the data's state space, per-dimension std units)

at 200 upright and 200 flipped states (|root angle| > pi / 2) of HalfCheetah-Vel replay and expert:

    python results/accuracy/horizon/per-point/action_support.py > action-support.txt

Where d_K is large, the one-step model is asked what an action it never saw there does
(``flip_model.py``: replay's model rights a flipped cheetah that pi cannot right, expert's does not).
"""
import numpy as np

from resolvent.data.dataset import load_transitions
from resolvent.families import get_family
from resolvent.policies import load_target_policy

STATES = 200          # states of each posture the signal is computed at
KS = (10, 100)        # nearest data states whose actions pi's is compared with


def support(z: np.ndarray, actions: np.ndarray, i: int, pi_a: np.ndarray, k: int) -> float:
    """d_k at data state i (z: (n, ds) states in std units, actions (n, da))."""
    dist = ((z - z[i]) ** 2).sum(1)                                      # (n,)
    dist[i] = np.inf
    near = np.argpartition(dist, k)[:k]                                  # (k,)
    return float(np.linalg.norm(actions[near] - pi_a, axis=1).min())


def main() -> None:
    fam = get_family("halfcheetah-vel")
    actor = load_target_policy(fam.name)
    print("| dataset | states | " + " | ".join(f"d_{k}: median, 90th percentile" for k in KS) + " |")
    print("|---|---|" + "---|" * len(KS))
    for kind in ("replay", "expert"):
        data = load_transitions(fam, kind, 0, actor)
        obs, act = np.asarray(data["obs"], np.float32), np.asarray(data["action"], np.float32)
        z = obs / (obs.std(0) + 1e-6)                                    # (n, ds)
        flip = np.abs(obs[:, 1]) > np.pi / 2                             # (n,)
        rng = np.random.default_rng(0)
        for name, mask in (("upright", ~flip), ("flipped", flip)):
            idx = rng.choice(np.flatnonzero(mask), STATES, replace=False)
            pi_a = np.asarray(actor(obs[idx]))                           # (STATES, da)
            cells = []
            for k in KS:
                d = np.array([support(z, act, i, a, k) for i, a in zip(idx, pi_a)])
                cells.append(f"{np.median(d):.3f}, {np.percentile(d, 90):.3f}")
            print(f"| {kind} | {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
