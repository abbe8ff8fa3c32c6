"""Why a HalfCheetah-Vel one-step model rights a cheetah lying on its back: its error at the
flipped states of its data, at the data's actions and at pi's, and its rollout under pi beside
the simulator's from the same states.

    python results/accuracy/horizon/per-point/flip_model.py replay > flip-model-replay.txt
    python results/accuracy/horizon/per-point/flip_model.py expert > flip-model-expert.txt
    python results/accuracy/horizon/per-point/flip_model.py replay without-rightings > flip-model-replay-without.txt

``without-rightings``: the model fitted on the data less every transition that goes from flipped
to upright and the ``BEFORE`` transitions before each (the way up), a check of what its rollouts
learn the way up from (not a method: the data is the user's). ``with-pi-data``: the data plus
pi's own transitions (its action with N(0, ``PI_NOISE``^2) noise, clipped) for ``PI_STEPS`` steps
from ``PI_STARTS`` of its flipped states, from the simulator: whether pi's actions seen at flipped
states keep the model's cheetah down.

The model is the run's own (``policy_refs.fit_data_model`` with the default configuration and
seed, fitted once and kept in ``$RESOLVENT_HOME/onestep/``). A state is flipped where the root's
angle |obs[1]| > pi / 2; errors are in units of the data's state std per dimension (obs[10] is the
root's angular velocity). The rollouts here step the members' mean, the ensemble's answer.
"""
import sys

import numpy as np

from resolvent.algorithms import onestep
from resolvent.data.dataset import load_transitions
from resolvent.envs import make_env
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.policy_refs import fit_data_model
from resolvent.experiments.problem import input_stats
from resolvent.families import get_family
from resolvent.policies import load_target_policy
from resolvent.restore import restore_for

STARTS = 40          # flipped dataset states (root angle within 0.3 of pi) the model is checked at
SHOWN = 6            # of them, rolled out under pi beside the simulator
STEPS = 60           # model and simulator steps of each shown rollout
SHOWN_AT = (1, 5, 10, 20, 40, 60)
BEFORE = 30          # transitions before each righting dropped with it (``without-rightings``)
PI_STARTS, PI_STEPS, PI_NOISE = 1000, 10, 0.1   # ``with-pi-data``: pi's transitions added at flipped states


def fmt(v: np.ndarray) -> str:
    return " ".join(f"{x:6.3f}" for x in v)


def pi_transitions(fam, actor, data: dict) -> dict:
    """pi's own noisy transitions from flipped states of ``data``, by the simulator."""
    env = make_env(fam.env_id)
    env.reset(seed=1)
    restore = restore_for(fam.env_id)
    rng = np.random.default_rng(1)
    flipped = np.flatnonzero(np.abs(data["obs"][:, 1]) > np.pi / 2)
    rows = {k: [] for k in ("obs", "action", "next_obs", "terminated", "truncated", *fam.extras)}
    for i in rng.choice(flipped, min(PI_STARTS, len(flipped)), replace=False):
        o = np.asarray(data["obs"][i], np.float64)
        restore(env, o)
        for _ in range(PI_STEPS):
            a = np.asarray(actor(o[None].astype(np.float32)))[0]
            a = np.clip(a + PI_NOISE * rng.standard_normal(a.shape), -1, 1).astype(np.float32)
            o2, _, term, trunc, info = env.step(a)
            for k, v in (("obs", o), ("action", a), ("next_obs", o2), ("terminated", term), ("truncated", trunc)):
                rows[k].append(v)
            for k in fam.extras:
                rows[k].append(info[k])
            o = o2
    return {k: np.asarray(v, data[k].dtype) for k, v in rows.items()}


def main() -> None:
    kind = sys.argv[1] if len(sys.argv) > 1 else "replay"
    cfg = EvaluateConfig(family="halfcheetah-vel", dataset=kind)
    fam = get_family(cfg.family)
    actor = load_target_policy(fam.name)
    data = load_transitions(fam, cfg.dataset, cfg.data_seed, actor)
    if sys.argv[2:] == ["without-rightings"]:
        up = np.flatnonzero((np.abs(data["obs"][:, 1]) > np.pi / 2) & (np.abs(data["next_obs"][:, 1]) <= np.pi / 2))
        drop = np.unique(np.concatenate([np.arange(max(0, j - BEFORE), j + 1) for j in up]))
        keep = np.setdiff1d(np.arange(len(data["obs"])), drop)
        data = {k: np.asarray(v)[keep] for k, v in data.items()}
        print(f"without the {len(up)} rightings and the {BEFORE} transitions before each: {len(drop)} dropped")
    if sys.argv[2:] == ["with-pi-data"]:
        added = pi_transitions(fam, actor, data)
        data = {k: np.concatenate([np.asarray(data[k]), added[k]]) for k in added}
        print(f"with {len(added['obs'])} transitions of pi's own (noise {PI_NOISE}) from {PI_STARTS} flipped states")
    features = {k: data[k] for k in fam.feature_keys}
    x_mean, x_std = input_stats(np.concatenate([data["obs"], data["action"]], -1))
    model = fit_data_model(cfg.onestep, cfg.seed, features, x_mean, x_std, None)
    obs, act, nxt = (np.asarray(data[k], np.float32) for k in ("obs", "action", "next_obs"))
    ds = obs.shape[1]
    s_std = x_std[:ds]                                                               # (ds,)
    flip, flip_next = np.abs(obs[:, 1]) > np.pi / 2, np.abs(nxt[:, 1]) > np.pi / 2  # (n,)
    print(f"HalfCheetah-Vel {kind}: {flip.sum()} of {len(obs)} transitions start flipped; "
          f"{int((flip & ~flip_next).sum())} go flipped -> upright, "
          f"{int((~flip & flip_next).sum())} upright -> flipped")
    if not flip.any():
        return

    def one_step(o: np.ndarray, a: np.ndarray) -> np.ndarray:
        """(E, n, ds): every member's next state."""
        y = np.asarray(onestep.member_predictions(model, o, a))[..., :ds]
        return o + y * model.y_std[:ds] + model.y_mean[:ds]

    for name, mask in (("upright", ~flip), ("flipped", flip)):
        idx = np.flatnonzero(mask)[:5000]
        e = (one_step(obs[idx], act[idx]).mean(0) - nxt[idx]) / s_std                # (n, ds)
        print(f"\nin-sample, the data's actions, {name} ({len(idx)} transitions): bias, RMS per dimension")
        print(fmt(e.mean(0)))
        print(fmt(np.sqrt((e ** 2).mean(0))))

    env = make_env(fam.env_id)
    env.reset(seed=0)
    restore = restore_for(fam.env_id)
    rng = np.random.default_rng(0)
    near = np.flatnonzero(flip & (np.abs(np.abs(obs[:, 1]) - np.pi) < 0.3))
    starts = rng.choice(near, min(STARTS, len(near)), replace=False)
    pi_a = np.asarray(actor(obs[starts]))                                           # (b, da)
    errs, spread = [], []
    for i, a in zip(starts, pi_a):
        restore(env, obs[i].astype(np.float64))
        o2, *_ = env.step(a)
        members = one_step(obs[i][None], a[None])[:, 0]                             # (E, ds)
        errs.append((members.mean(0) - o2) / s_std)
        spread.append(members.std(0) / s_std)
    errs, spread = np.array(errs), np.array(spread)                                 # (b, ds)
    print(f"\nat {len(starts)} flipped states, pi's actions, against the simulator: bias, RMS, members' spread")
    print(fmt(errs.mean(0)))
    print(fmt(np.sqrt((errs ** 2).mean(0))))
    print(fmt(spread.mean(0)))
    flipped_a = act[flip]
    dist = np.array([np.linalg.norm(flipped_a - a, axis=1).min() for a in pi_a])
    print(f"pi's action there: L2 to the nearest action the data took at a flipped state 10/50/90%: "
          f"{fmt(np.percentile(dist, [10, 50, 90]))}; mean |a| pi {np.abs(pi_a).mean():.3f}, data "
          f"{np.abs(flipped_a).mean():.3f}")

    print(f"\nthe root's angle under pi, simulator / model, from {SHOWN} of them:")
    for i in starts[:SHOWN]:
        o_sim, o_mod = obs[i].astype(np.float64), obs[i][None]
        restore(env, o_sim)
        row = []
        for t in range(1, STEPS + 1):
            o_sim, *_ = env.step(np.asarray(actor(o_sim[None].astype(np.float32)))[0])
            o_mod = one_step(o_mod, np.asarray(actor(o_mod))).mean(0)
            if t in SHOWN_AT:
                row.append(f"t{t} {o_sim[1]:.2f} / {o_mod[0, 1]:.2f}")
        print(f"state {i} (angle {obs[i, 1]:.2f}): " + "; ".join(row))


if __name__ == "__main__":
    main()
