"""Training the target policy pi online with TD3 from sbx (Stable-Baselines-Jax).

The paper trains a deterministic target policy with TD3 on the base environment's own reward;
its replay buffer is the "replay" dataset. A Gymnasium wrapper records every transition the
TD3 run makes (with the family's extra quantities from ``info``), which is exactly that
replay buffer, terminations and truncations kept apart.

Needs the optional extra: ``pip install torch==2.13.0 'resolvent[train]'``.
"""
from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np

from resolvent.families import RewardFamily
from resolvent.policies.actor import Actor, save_snapshots, shipped_path


class TransitionRecorder(gym.Wrapper):
    """Records (s, a, s', terminated, truncated, extras) of every step, in order."""

    def __init__(self, env: gym.Env, extras: tuple[str, ...]):
        super().__init__(env)
        self.extras = extras
        self.rows: dict[str, list] = {k: [] for k in
                                      ("obs", "action", "next_obs", "terminated", "truncated", *extras)}
        self._obs = None

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._obs = obs
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        row = {"obs": self._obs, "action": np.asarray(action, np.float32), "next_obs": obs,
               "terminated": terminated, "truncated": truncated}
        row.update({k: (terminated if k == "terminated" else info[k]) for k in self.extras})
        for k, v in row.items():
            self.rows[k].append(v)
        self._obs = obs
        return obs, reward, terminated, truncated, info

    def buffer(self) -> dict[str, np.ndarray]:
        out = {k: np.asarray(v, np.float32) for k, v in self.rows.items()}
        out["terminated"] = np.asarray(self.rows["terminated"], bool)
        out["truncated"] = np.asarray(self.rows["truncated"], bool)
        return out


def evaluate_actor(actor: Actor, env_id: str, episodes: int = 10, seed: int = 10_000) -> float:
    """Average undiscounted return of the deterministic actor over ``episodes`` episodes."""
    envs = [gym.make(env_id) for _ in range(episodes)]
    obs = np.stack([e.reset(seed=seed + i)[0] for i, e in enumerate(envs)])
    returns, done = np.zeros(episodes), np.zeros(episodes, bool)
    while not done.all():
        actions = actor(obs)
        for i, e in enumerate(envs):
            if done[i]:
                continue
            o, r, term, trunc, _ = e.step(actions[i])
            obs[i], returns[i] = o, returns[i] + r
            done[i] = term or trunc
    return float(returns.mean())


def train_td3(family: RewardFamily, steps: int | None = None, seed: int = 0,
              out_dir: str | Path | None = None, progress: bool = True) -> tuple[Actor, dict]:
    """Train TD3 on ``family.env_id``'s own reward; save actor weights and replay buffer."""
    try:
        from sbx import TD3
        from stable_baselines3.common.noise import NormalActionNoise
    except ImportError as e:  # pragma: no cover - depends on the optional extra
        raise ImportError("TD3 training needs the optional extra: "
                          "pip install torch==2.13.0 'resolvent[train]'") from e
    from stable_baselines3.common.callbacks import BaseCallback

    steps = int(steps or family.td3_steps)
    env = TransitionRecorder(gym.make(family.env_id), family.extras)
    da = env.action_space.shape[0]
    noise = NormalActionNoise(np.zeros(da), TD3_NOISE * np.ones(da))
    learning_starts = min(1000, steps // 10)
    model = TD3("MlpPolicy", env, action_noise=noise, learning_starts=learning_starts,
                seed=seed, verbose=0)
    times = snapshot_times(steps)
    snapshots: list[tuple] = []

    class Snapshots(BaseCallback):  # the actor at the middle of each tenth of the run
        def _on_step(self) -> bool:
            if self.num_timesteps in times:
                snapshots.append(actor_layers(model))
            return True

    model.learn(total_timesteps=steps, progress_bar=progress, callback=Snapshots())
    space = env.action_space
    actor = Actor(actor_layers(model), space.low.astype(np.float32), space.high.astype(np.float32))
    avg = evaluate_actor(actor, family.env_id)
    meta = {"family": family.name, "env_id": family.env_id, "algorithm": "TD3 (sbx)",
            "td3_steps": steps, "seed": seed, "average_return": avg, "eval_episodes": 10,
            "learning_starts": learning_starts, "exploration_noise": TD3_NOISE}
    out = Path(out_dir) if out_dir is not None else Path(str(shipped_path(family.name))).parent
    out.mkdir(parents=True, exist_ok=True)
    actor.save(out / f"{family.name}.npz", meta)
    if family.replay_source == "buffer":
        np.savez_compressed(out / f"{family.name}-replay.npz", **env.buffer())
    else:
        save_snapshots(out / f"{family.name}-snapshots.npz", snapshots, times, learning_starts, steps)
    return actor, meta


TD3_NOISE = 0.1          # TD3's Gaussian exploration noise (absolute, MuJoCo actions are in [-1, 1])
N_SNAPSHOTS = 10


def snapshot_times(steps: int) -> list[int]:
    """Steps at which the actor is snapshotted: the middle of each tenth of the run."""
    seg = steps / N_SNAPSHOTS
    return [int((k + 0.5) * seg) for k in range(N_SNAPSHOTS)]


def actor_layers(model) -> tuple:
    params = model.policy.actor_state.params["params"]
    names = sorted(params, key=lambda n: int(n.split("_")[-1]))
    return tuple((np.asarray(params[n]["kernel"], np.float32), np.asarray(params[n]["bias"], np.float32))
                 for n in names)
