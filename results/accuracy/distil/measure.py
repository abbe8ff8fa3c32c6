"""A student of another kind: the expansion's occupancy itself, learned as a forward-backward
successor measure from the rollouts (a study beside ``study.py``).

    python results/accuracy/distil/measure.py RUN [--features 256] [--hidden 256,256] [--horizon 800]
        [--points 4096] [--steps 10000] [--samples 16] [--n-refs 1024] [--lr 3e-4]
        --out results/accuracy/distil/NAME.json

RUN: a finished evaluate run with ``fb`` among its methods (its one-step model, pi and reference
pool are the student's). The expansion G_K answers a reward by the rollout's occupancy: from the
query x = (s, a), every kept member e of the one-step model's ensemble (weight w_e(x)) rolls out
under pi, x_t = (s_t, pi(s_t)), so that after the first step

    nu_x = sum_e w_e(x) [ sum_{1<=t<K} (1 - gamma) gamma^(t-1) delta_{x_t^e} + gamma^(K-1) delta_{x_K^e} ]

(a probability measure; K = 800 puts 3e-4 of the mass on the last state). The student is an
``fb`` network (F, B of ``features`` outputs) whose F(x)^T B(y) rho(dy) is fitted to nu_x by the
Monte-Carlo form of the successor measure's least squares (no bootstrapping: the targets are the
rollout's states),

    L = E_x [ E_{y~rho} (F(x)^T B(y))^2 - 2 E_{y~nu_x} F(x)^T B(y) ] + lambda_orth || E_rho[B B^T] - I ||^2

minimised by the projection of d nu_x / d rho onto span B in L2(rho), rho the reference pool
(the data's states at pi's actions). Every reward's answer is then G[r](x) = r(x, .) + gamma/(1 - gamma)
F(x)^T z_r with z_r = E_rho[B r] over the whole pool, one forward pass: linear in r, and the
occupancy is learned from the states themselves, not from a few rewards' averages (``study.py``).
Or ``--student rff``: B fixed, a constant and random Fourier features phi of the normalised
(s, pi(s)); their averages Phi_bar(x) = nu_x(phi) computed exactly from the rollout; an MLP psi
regressed on them (``--weighted``: the error in the metric W = mean_r w_r w_r^T of the prior's
rewards); a reward's weights w_r by ridge regression on phi over the pool (``--ridge``, a list:
each scored), the answer r(x, .) + gamma/(1 - gamma) psi(x)^T w_r. Both print how much of their
targets the regression leaves; rff also the features' own error (Phi_bar^T w_r against nu_x(r)).
Scored as ``study.py`` scores: reset, trajectory and dataset points, test and probe rewards.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from study import score_of

from resolvent.algorithms.expansion import expanded_q
from resolvent.experiments import open_run
from resolvent.keys import name_id, named_key
from resolvent.model import OperatorModel
from resolvent.operators.networks import MLP
from resolvent.rewards import generic_rewards


def occupancy_states(model: OperatorModel, obs: np.ndarray, act: np.ndarray, horizon: int):
    """The rollout's states after the first step, x_1 .. x_K normalised (K, E, P, dx), the members'
    weights times alive (K, E, P) (each step's discount mass is applied by the caller), and the
    rollout itself."""
    ex = model.expansion(obs, act, horizon)
    e, n = ex.weights.shape
    ys = ([model.normalise(o, a) for o, a in zip(ex.steps["obs"][1:], ex.steps["action"][1:])]
          + [model.normalise(ex.obs, ex.action)])
    y = np.stack([np.asarray(v).reshape(e, n, -1) for v in ys])                         # (K, E, P, dx)
    w = ex.weights[None] * ex.alive[1:].reshape(horizon, e, n)                           # (K, E, P)
    return y.astype(np.float32), w.astype(np.float32), ex


class RFFStudent:
    """G[r](x) = r(x, .) + gamma/(1 - gamma) psi(x)^T w_r: psi regressed on the rollout's averages
    of fixed random Fourier features phi, w_r the ridge regression of r on phi over the pool (the
    constant feature unpenalised, its psi fixed at 1, so G[c] = c/(1-gamma) up to the solve)."""

    def __init__(self, teacher: OperatorModel, apply, params, feats: jax.Array, ridge: float):
        self.teacher, self.apply, self.params = teacher, apply, params
        self.feats = feats                                                               # (N, D): phi at the pool
        n, d = feats.shape
        gram = feats.T @ feats / n + ridge * jnp.diag(jnp.r_[0.0, jnp.ones(d - 1)])      # (D, D)
        self.solve = jax.jit(lambda rhs: jnp.linalg.solve(gram, rhs))

    def weights(self, reward) -> jax.Array:
        """w_r (D,): the ridge regression of the reward's values at the pool on phi there."""
        r_pool = self.teacher.encode([reward])[0]                                          # (N,)
        return self.solve(self.feats.T @ r_pool / r_pool.shape[0])

    def q_values(self, reward, obs, act, seed=None, horizon=0):
        psi_w = self.apply(self.params, self.teacher.normalise(obs, act), self.weights(reward))   # (b,)
        first = self.teacher.first_step(reward, obs, act)                                  # (b,)
        g = self.teacher.gamma
        return np.asarray(first + g / (1 - g) * psi_w)[None]                               # (1, b)


def features(y, omega, phase):
    """phi(y) = [1, sqrt(2/D) cos(Omega y + b)]: (n, D)."""
    d = omega.shape[0] + 1
    return jnp.concatenate([jnp.ones((y.shape[0], 1)), jnp.sqrt(2.0 / d) * jnp.cos(y @ omega.T + phase)], 1)


def exact_nu(teacher: OperatorModel, ex, reward, obs, act):
    """(reward, nu_x(r) (P,)) from the rollout itself, the last state's mass lumped as in nu."""
    g = teacher.gamma
    first = lambda s, a: np.asarray(teacher.first_step(reward, s, a))                  # noqa: E731
    q = expanded_q(ex, reward, lambda s, a: first(s, a) / (1 - g), g)                    # (P,)
    return reward, jnp.asarray((1 - g) * (q - first(obs, act)) / g, jnp.float32)


def rff_student(args, teacher, x, y, w, mass, hidden, seed: int, t0: float, nu: dict, prior: list):
    """Fixed features phi (D - 1 random Fourier features of the normalised (s, pi(s)) and a
    constant), their averages under nu_x computed exactly from the rollout, an MLP psi regressed
    on them; the answer contracts psi's last layer with w_r first (one 256-wide forward pass)."""
    k_steps, e, n, dx = y.shape
    scales = [float(v) for v in args.lengthscales.split(",")]
    m = args.features - 1
    k_o, k_b, k_n = jax.random.split(jax.random.PRNGKey(seed), 3)
    ell = jnp.asarray(np.repeat(scales, -(-m // len(scales)))[:m], jnp.float32)
    omega = jax.random.normal(k_o, (m, dx)) / ell[:, None]                               # (D - 1, dx)
    phase = jax.random.uniform(k_b, (m,), maxval=2 * np.pi)
    coef = jnp.asarray(mass[:, None, None] * w)                                          # (K, E, P)
    target = jnp.zeros((n, args.features))
    step = jax.jit(lambda acc, yt, ct: acc + jnp.einsum("ep,epd->pd", ct, features(
        yt.reshape(-1, dx), omega, phase).reshape(e, n, -1)))
    for t in range(k_steps):                                                             # Phi_bar (P, D)
        target = step(target, jnp.asarray(y[t]), coef[t])
    target = target / coef.sum((0, 1))[:, None]
    print(f"targets {time.perf_counter() - t0:.0f}s", flush=True)

    class Psi(nn.Module):
        @nn.compact
        def __call__(self, v, w_r=None):
            h = nn.relu(MLP(hidden[:-1], hidden[-1], name="body")(v))                     # (b, h)
            kernel = self.param("head_kernel", nn.initializers.lecun_normal(), (hidden[-1], args.features - 1))
            bias = self.param("head_bias", nn.initializers.zeros, (args.features - 1,))
            if w_r is None:
                return jnp.concatenate([jnp.ones((v.shape[0], 1)), h @ kernel + bias], 1)  # (b, D)
            return w_r[0] + h @ (kernel @ w_r[1:]) + bias @ w_r[1:]                        # (b,): w_r first

    net = Psi()
    prm = net.init(k_n, x[:2])
    opt = optax.adam(optax.cosine_decay_schedule(args.lr, args.steps) if args.cosine else args.lr)

    train_n = n - n // 10                                                                # the last tenth held out
    ridges = [float(v) for v in args.ridge.split(",")]
    pool = features(teacher.xi, omega, phase)                                            # (N, D)
    first = RFFStudent(teacher, None, None, pool, ridges[0])
    if args.weighted:   # W = mean_r w_r w_r^T, scaled to trace D
        ws = jnp.stack([first.weights(r) for r in prior])                                # (R, D)
        metric = ws.T @ ws
        metric = metric * args.features / jnp.trace(metric)                             # (D, D)
    else:
        metric = jnp.eye(args.features)

    def loss(prm, key):
        idx = jax.random.randint(key, (args.batch_size,), 0, train_n)
        err = net.apply(prm, x[idx]) - target[idx]                                       # (b, D)
        return jnp.mean(jnp.einsum("bd,de,be->b", err, metric, err))

    @jax.jit
    def chunk(prm, state, keys):
        def body(carry, key):
            prm, state = carry
            value, grads = jax.value_and_grad(loss)(prm, key)
            upd, state = opt.update(grads, state, prm)
            return (optax.apply_updates(prm, upd), state), value
        (prm, state), values = jax.lax.scan(body, (prm, state), keys)
        return prm, state, values

    state, history = opt.init(prm), []
    keys = jax.random.split(jax.random.PRNGKey(seed + 1), args.steps)
    for i in range(0, args.steps, 500):
        prm, state, values = chunk(prm, state, keys[i:i + 500])
        history.append([i + 500, float(values.mean())])
        print(f"step {i + 500}: loss {history[-1][1]:.5f} ({time.perf_counter() - t0:.0f}s)", flush=True)
    centred = target - target.mean(0)
    scale = float(jnp.mean(jnp.einsum("bd,de,be->b", centred, metric, centred)))
    err = net.apply(prm, x[train_n:]) - target[train_n:]
    held = float(jnp.mean(jnp.einsum("bd,de,be->b", err, metric, err)))
    apply = jax.jit(lambda prm, v, w_r: net.apply(prm, v, w_r))
    students, extra = {}, {}
    for ridge in ridges:
        student = RFFStudent(teacher, apply, prm, pool, ridge)
        # the features' own error, no network: nu_x(r) against Phi_bar^T w_r at the points
        proj = {}
        for name, (r, exact) in nu.items():
            proj[name] = round(float(jnp.mean((target @ student.weights(r) - exact) ** 2) / jnp.var(exact)), 5)
        print(f"ridge {ridge}: features' relative error per reward:", json.dumps(proj), flush=True)
        students[ridge] = student
        extra[ridge] = {"train_seconds": time.perf_counter() - t0, "target_variance": scale, "held_out": held,
                        "feature_error": proj, "history": history}
    return students, extra


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--features", type=int, default=256)
    ap.add_argument("--hidden", default="256,256")
    ap.add_argument("--horizon", type=int, default=800)
    ap.add_argument("--points", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--samples", type=int, default=16, help="states of nu_x per point and step")
    ap.add_argument("--n-refs", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--cosine", action="store_true", help="rff: cosine decay of the learning rate to 0")
    ap.add_argument("--orth", type=float, default=1.0)
    ap.add_argument("--teacher-rows", action="store_true", help="also score fb and fb+k400")
    ap.add_argument("--student", choices=("fb", "rff"), default="fb",
                    help="fb: F, B learned; rff: B fixed random Fourier features, F regressed on their averages")
    ap.add_argument("--lengthscales", default="0.25,0.5,1.0", help="rff: the features' lengthscales (equal shares)")
    ap.add_argument("--ridge", default="1e-4", help="rff: the reward regression's l2 terms (each scored)")
    ap.add_argument("--weighted", action="store_true",
                    help="rff: the regression error weighted by the prior rewards, "
                         "(psi - Phi_bar)^T W (psi - Phi_bar), W = mean_r w_r w_r^T over the family's "
                         "training rewards and 256 generic ones")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    run = Path(args.run)
    cfg, p = open_run(run)
    raw = np.asarray(p.y) * p.x_std + p.x_mean
    obs_e, act_e = raw[:, :p.features["obs"].shape[1]], raw[:, p.features["obs"].shape[1]:]
    teacher = p.expansion_model(run / "models", "fb")
    out = {"args": vars(args), "run": str(run), "rows": {}}
    if args.teacher_rows:
        for label, k in (("fb", 0), ("fb+k400", 400)):
            out["rows"][label] = score_of(teacher, p, obs_e, act_e, k)
            print(label, json.dumps(out["rows"][label]), flush=True)

    t0 = time.perf_counter()
    at = np.sort(np.random.default_rng(name_id(f"{cfg.seed}-distil-points")).choice(
        len(p.features["obs"]), min(args.points, len(p.features["obs"])), replace=False))
    obs, act = np.asarray(p.features["obs"])[at], np.asarray(p.features["action"])[at]
    y, w, ex = occupancy_states(teacher, obs, act, args.horizon)                              # (K, E, P, dx) (K, E, P)
    k_steps, e, n, dx = y.shape
    gamma = cfg.gamma
    mass = np.r_[(1 - gamma) * gamma ** np.arange(k_steps - 1), gamma ** (k_steps - 1)]   # (K,) sums to 1
    # one categorical per point over (t, e): mass_t w_te, drawn by inverse CDF
    joint = (mass[:, None, None] * w).reshape(k_steps * e, n).T                          # (P, K E)
    cdf = jnp.asarray(np.cumsum(joint / joint.sum(1, keepdims=True), 1), jnp.float32)
    y_flat = jnp.asarray(y.reshape(k_steps * e, n, dx))                                  # (K E, P, dx)
    x = teacher.normalise(obs, act)                                                      # (P, dx)
    pool = teacher.xi                                                                    # (N, dx)
    print(f"rollout {time.perf_counter() - t0:.1f}s: {k_steps} steps x {e} members x {n} points", flush=True)

    hidden = tuple(int(h) for h in args.hidden.split(","))
    if args.student == "rff":
        nu = {name: exact_nu(teacher, ex, r, obs, act) for s_ in ("test", "probe") for name, r in p.source.rewards[s_]}
        del ex
        prior = [r for _, r in p.source.rewards["train"]] + generic_rewards(
            cfg.prior, named_key(cfg.seed, "distil-rewards"), p.prior_stats, p.z_raw, 256)
        students, extra = rff_student(args, teacher, x, y, w, mass, hidden, name_id(f"{cfg.seed}-measure"), t0, nu,
                                      prior)
        for ridge, student in students.items():
            label = (f"rff-measure D{args.features} l{args.lengthscales} h{args.hidden} K{args.horizon} "
                     f"ridge {ridge}{' weighted' if args.weighted else ''}")
            out["rows"][label] = {**score_of(student, p, obs_e, act_e, 0), **extra[ridge]}
            print(label, json.dumps({k: v for k, v in out["rows"][label].items() if k != "history"}), flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1))
        return
    arch = dataclasses.replace(teacher.arch, features=args.features, hidden=hidden)
    start = dataclasses.replace(teacher, arch=arch, params=jax.tree_util.tree_map(
        lambda v: v[None], teacher.network.__class__(hidden, args.features).init(
            jax.random.PRNGKey(0), x[:2], pool[:2], jnp.zeros((1, 2)))))
    net = start.network
    fwd = lambda prm, v: net.apply(prm, v, method=lambda m, u: m.forward_map(u))        # noqa: E731
    bwd = lambda prm, v: net.apply(prm, v, method=lambda m, u: m.backward_map(u))       # noqa: E731
    opt = optax.adam(args.lr)

    def loss(prm, key):
        k_i, k_s, k_r = jax.random.split(key, 3)
        idx = jax.random.randint(k_i, (args.batch_size,), 0, n)                          # (b,)
        u = jax.random.uniform(k_s, (args.batch_size, args.samples))
        te = jax.vmap(lambda c, v: jnp.searchsorted(c, v))(cdf[idx], u)                  # (b, T) into K E
        te = jnp.minimum(te, k_steps * e - 1)
        ys = y_flat[te, idx[:, None]]                                                    # (b, T, dx)
        f = fwd(prm, x[idx])                                                             # (b, d)
        b_pos = bwd(prm, ys.reshape(-1, dx)).reshape(args.batch_size, args.samples, -1)  # (b, T, d)
        b_ref = bwd(prm, pool[jax.random.randint(k_r, (args.n_refs,), 0, pool.shape[0])])   # (m, d)
        m_ref = f @ b_ref.T                                                              # (b, m)
        fit = jnp.mean(m_ref ** 2) - 2 * jnp.mean(jnp.einsum("bd,btd->bt", f, b_pos))
        cov = b_ref @ b_ref.T                                                            # (m, m)
        off = 1.0 - jnp.eye(args.n_refs)
        orth = jnp.sum((cov * off) ** 2) / (args.n_refs * (args.n_refs - 1)) - 2 * jnp.mean(jnp.diag(cov))
        return fit + args.orth * orth, fit

    @jax.jit
    def chunk(prm, state, keys):
        def body(carry, key):
            prm, state = carry
            (value, fit), grads = jax.value_and_grad(loss, has_aux=True)(prm, key)
            upd, state = opt.update(grads, state, prm)
            return (optax.apply_updates(prm, upd), state), (value, fit)
        (prm, state), (values, fits) = jax.lax.scan(body, (prm, state), keys)
        return prm, state, values, fits

    prm = jax.tree_util.tree_map(lambda v: v[0], start.params)
    state = opt.init(prm)
    keys = jax.random.split(jax.random.PRNGKey(name_id(f"{cfg.seed}-measure")), args.steps)
    every = 500
    history = []
    for i in range(0, args.steps, every):
        prm, state, values, fits = chunk(prm, state, keys[i:i + every])
        history.append([i + every, float(values.mean()), float(fits.mean())])
        print(f"step {i + every}: loss {history[-1][1]:.4f} fit {history[-1][2]:.4f} "
              f"({time.perf_counter() - t0:.0f}s)", flush=True)
    train_s = time.perf_counter() - t0
    # F^T B rho is the normalised measure; U = sum_t gamma^t ... = F^T z / (1 - gamma): F's output scaled
    last = f"Dense_{len(hidden)}"
    fm = prm["params"]["forward_map"][last]
    prm = {"params": {**prm["params"], "forward_map": {**prm["params"]["forward_map"], last: {
        "kernel": fm["kernel"] / (1 - gamma), "bias": fm["bias"] / (1 - gamma)}}}}
    student = dataclasses.replace(start, params=jax.tree_util.tree_map(lambda v: np.asarray(v)[None], prm))
    label = f"fb-measure d{args.features} h{args.hidden} K{args.horizon}"
    out["rows"][label] = {**score_of(student, p, obs_e, act_e, 0), "train_seconds": train_s, "history": history}
    print(label, json.dumps({k: v for k, v in out["rows"][label].items() if k != "history"}), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
