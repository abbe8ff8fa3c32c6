"""Training the target policy pi online with TD3 from sbx (Stable-Baselines-Jax).

The paper trains each deterministic target policy with TD3 "on the original predefined reward
function": the family's member at ``original_param``. ``FamilyReward`` wraps the base
environment so that its reward IS that member, computed from each step's transition quantities
exactly as the offline rewards are (for HalfCheetah-Vel the member v_target = 1 is not
HalfCheetah-v5's run-fast reward; for Pendulum-Angle and Ant-Dir it equals the base reward).
A Gymnasium wrapper records every transition the TD3 run makes (with the family's extra
quantities from ``info``), which is exactly the "replay" dataset, terminations and truncations
kept apart. Long runs checkpoint (model, replay buffer, actor snapshots) and resume.

Needs the optional extra: ``pip install torch==2.13.0 'resolvent[train]'``.
"""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import gymnasium as gym
import jax.numpy as jnp
import numpy as np

from resolvent.envs import actor_rollout
from resolvent.families import RewardFamily
from resolvent.io import atomic_savez, atomic_write_bytes
from resolvent.policies.actor import TD3_NOISE, Actor, save_snapshots, shipped_path
from resolvent.transitions import step_quantities

N_SNAPSHOTS = 10
CHECKPOINT_EVERY = 25_000  # TD3 steps between checkpoints of a long run


class FamilyReward(gym.Wrapper):
    """The base environment with its reward replaced by the family member ``param``."""

    def __init__(self, env: gym.Env, family: RewardFamily, param: float):
        super().__init__(env)
        self.family, self.param, self._obs = family, jnp.float32(param), None

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._obs = obs
        return obs, info

    def step(self, action):
        obs, reward, term, trunc, info = self.env.step(action)
        feats = {"obs": np.asarray(self._obs, np.float32)[None],
                 "action": np.asarray(action, np.float32).reshape(1, -1),
                 "next_obs": np.asarray(obs, np.float32)[None]}
        feats.update({k: np.asarray([v], np.float32)
                      for k, v in step_quantities(self.family.extras, reward, term, info).items()})
        self._obs = obs
        return obs, float(self.family.reward(self.param, feats)[0]), term, trunc, info


def reward_env_id(family: RewardFamily, param: float) -> str:
    """A registered Gymnasium id for the base environment with reward ``param``."""
    env_id = f"resolvent/{family.name}-param{param:.4f}-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=lambda **kw: FamilyReward(gym.make(family.env_id), family, param),
                     max_episode_steps=None)
    return env_id


def training_env(family: RewardFamily, info: dict) -> gym.Env:
    """The environment a target policy was trained in, from its metadata's ``reward`` entry:
    the base environment's own reward (``source: env``) or the family member (``wrapper``)."""
    reward = info.get("reward")
    if not isinstance(reward, dict) or family.param_name not in reward:
        raise ValueError(f"{family.name}: the target policy's metadata does not say which reward it "
                         f"was trained on (need 'reward': {{{family.param_name!r}: ..., 'source': ...}})")
    if reward.get("source") == "env":
        return gym.make(family.env_id)
    if reward.get("source") == "wrapper":
        return gym.make(reward_env_id(family, float(reward[family.param_name])))
    raise ValueError(f"{family.name}: unknown reward source {reward.get('source')!r}; known: env, wrapper")


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
        row.update(step_quantities(self.extras, reward, terminated, info))
        for k, v in row.items():
            self.rows[k].append(v)
        self._obs = obs
        return obs, reward, terminated, truncated, info

    def buffer(self) -> dict[str, np.ndarray]:
        out = {k: np.asarray(v, np.float32) for k, v in self.rows.items()}
        out["terminated"] = np.asarray(self.rows["terminated"], bool)
        out["truncated"] = np.asarray(self.rows["truncated"], bool)
        return out

    def restore(self, buffer: dict[str, np.ndarray]) -> None:
        self.rows = {k: list(buffer[k]) for k in self.rows}


def evaluate_target(family: RewardFamily, actor: Actor, param: float | None = None,
                    episodes: int = 10, seed: int = 10_000, progress: bool = False) -> dict:
    """The actor's average return under the member ``param`` (default: the original one) and
    the per-step means of the family's extra quantities (e.g. HalfCheetah's ``x_velocity``)."""
    param = family.original_param if param is None else float(param)
    ro = actor_rollout(family, actor, episodes, seed, progress)
    alive = ro.alive                                                              # (T, E)
    out = {"average_return": float(ro.returns(family.reward_callable(param)).mean()),
           "eval_episodes": episodes, "episode_length": float(alive.sum(0).mean())}
    for k in family.extras:
        if k != "terminated":
            out[f"mean_{k}"] = float((ro.features[k] * alive).sum() / alive.sum())
    return out


def train_td3(family: RewardFamily, steps: int | None = None, seed: int = 0,
              out_dir: str | Path | None = None, progress: bool = True, param: float | None = None,
              checkpoint_every: int = CHECKPOINT_EVERY) -> tuple[Actor, dict]:
    """Train TD3 on the family member ``param`` (default: ``original_param``); save the actor.

    Writes ``<family>.npz`` (+ ``.json`` metadata naming the reward) and the replay buffer or
    the actor snapshots into ``out_dir``. A run killed midway resumes from ``td3-checkpoint/``
    there (its last checkpoint; the exploration noise after it is not bit-identical); a finished
    run with the same steps, seed and reward is loaded, not trained again.
    """
    try:   # the optional extra (sbx, and torch through stable-baselines3) loads only to train
        from sbx import TD3
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.noise import NormalActionNoise
    except ImportError as e:  # pragma: no cover - depends on the optional extra
        raise ImportError("TD3 training needs the optional extra: "
                          "pip install torch==2.13.0 'resolvent[train]'") from e

    steps = int(steps or family.td3_steps)
    param = family.original_param if param is None else float(param)
    out = Path(out_dir) if out_dir is not None else Path(str(shipped_path(family.name))).parent
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / "td3-checkpoint"
    done_meta = out / f"{family.name}.json"
    if done_meta.is_file() and (out / f"{family.name}.npz").is_file():   # a finished run is kept
        meta = json.loads(done_meta.read_text())
        if (meta.get("td3_steps"), meta.get("seed"), meta.get("reward", {}).get(family.param_name)) \
                == (steps, seed, param):
            return Actor.load(out / f"{family.name}.npz"), meta
    env = TransitionRecorder(gym.make(reward_env_id(family, param)), family.extras)
    da = env.action_space.shape[0]
    noise = NormalActionNoise(np.zeros(da), TD3_NOISE * np.ones(da))
    learning_starts = min(1000, steps // 10)
    times = snapshot_times(steps)
    snapshots: list[tuple] = []
    if (ckpt / "progress.json").is_file():
        done = json.loads((ckpt / "progress.json").read_text())
        if done["steps"] != steps or done["seed"] != seed or done["param"] != param:
            raise ValueError(f"{ckpt} holds a TD3 run with {done}, not steps={steps}, seed={seed}, "
                             f"param={param}; remove it to start again")
        model = TD3.load(ckpt / "model.zip", env=env, seed=seed)
        model.load_replay_buffer(ckpt / "replay_buffer.pkl")
        with np.load(ckpt / "snapshots.npz") as z:
            snapshots = pickle.loads(z["snapshots"].tobytes())
            if family.replay_source == "buffer":
                env.restore({k: z[f"rows_{k}"] for k in env.rows})
    else:
        model = TD3("MlpPolicy", env, action_noise=noise, learning_starts=learning_starts,
                    seed=seed, verbose=0)

    def checkpoint() -> None:
        ckpt.mkdir(exist_ok=True)
        model.save(ckpt / "model.tmp.zip")
        model.save_replay_buffer(ckpt / "replay_buffer.tmp.pkl")
        (ckpt / "model.tmp.zip").replace(ckpt / "model.zip")
        (ckpt / "replay_buffer.tmp.pkl").replace(ckpt / "replay_buffer.pkl")
        rows = ({f"rows_{k}": v for k, v in env.buffer().items()}
                if family.replay_source == "buffer" else {})
        atomic_savez(ckpt / "snapshots.npz", snapshots=np.frombuffer(pickle.dumps(snapshots), np.uint8), **rows)
        atomic_write_bytes(ckpt / "progress.json", json.dumps(
            {"steps": steps, "seed": seed, "param": param, "done": int(model.num_timesteps)}).encode())

    class Snapshots(BaseCallback):  # the actor at the middle of each tenth of the run; checkpoints
        def _on_step(self) -> bool:
            if self.num_timesteps in times:
                snapshots.append(actor_layers(model))
            if self.num_timesteps % checkpoint_every == 0 and self.num_timesteps < steps:
                checkpoint()
            return True

    model.learn(total_timesteps=steps - int(model.num_timesteps), progress_bar=progress,
                callback=Snapshots(), reset_num_timesteps=False)
    space = env.action_space
    actor = Actor(actor_layers(model), space.low.astype(np.float32), space.high.astype(np.float32))
    meta = {"family": family.name, "env_id": family.env_id, "algorithm": "TD3 (sbx)",
            "reward": {family.param_name: param, "source": "wrapper",
                       "how": f"{family.env_id} wrapped so that its reward is the family member "
                              f"{family.param_name}={param:g} (FamilyReward)"},
            "td3_steps": steps, "seed": seed, "learning_starts": learning_starts,
            "exploration_noise": TD3_NOISE, **evaluate_target(family, actor, param)}
    actor.save(out / f"{family.name}.npz", meta)
    if family.replay_source == "buffer":
        np.savez_compressed(out / f"{family.name}-replay.npz", **env.buffer())
    else:
        save_snapshots(out / f"{family.name}-snapshots.npz", snapshots, times, learning_starts, steps)
    for f in ("model.zip", "replay_buffer.pkl", "snapshots.npz", "progress.json"):
        (ckpt / f).unlink(missing_ok=True)
    if ckpt.is_dir():
        ckpt.rmdir()
    return actor, meta


def snapshot_times(steps: int) -> list[int]:
    """Steps at which the actor is snapshotted: the middle of each tenth of the run."""
    seg = steps / N_SNAPSHOTS
    return [int((k + 0.5) * seg) for k in range(N_SNAPSHOTS)]


def actor_layers(model) -> tuple:
    params = model.policy.actor_state.params["params"]
    names = sorted(params, key=lambda n: int(n.split("_")[-1]))
    return tuple((np.asarray(params[n]["kernel"], np.float32), np.asarray(params[n]["bias"], np.float32))
                 for n in names)
