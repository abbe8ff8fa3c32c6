"""Rewards scored under the target policy: exact answers on a small MDP whose behaviour differs
from the target, where the paper's operator (rewards at the behaviour's actions) cannot be right."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from resolvent.algorithms import FQEConfig, OperatorData, fb, make_initializer, make_predictor, make_trainer
from resolvent.algorithms import policy_fqe
from resolvent.operators import make_network

GAMMA = 0.8
N_STATES, N_ACTIONS = 4, 3


def mdp(seed=0, samples=300):
    """Transitions from every (s, a) with a behaviour uniform over actions; a deterministic
    target pi. Returns one-hot pairs, the data's (pair, next pair under pi) and P_pi."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(N_STATES) * 0.7, size=(N_STATES, N_ACTIONS))     # (S, A, S)
    pi = rng.integers(N_ACTIONS, size=N_STATES)
    pairs = [(s, a) for s in range(N_STATES) for a in range(N_ACTIONS)]
    idx, nxt = [], []
    for i, (s, a) in enumerate(pairs):
        s2 = rng.choice(N_STATES, size=samples, p=P[s, a])
        idx += [i] * samples
        nxt += [pairs.index((t, pi[t])) for t in s2]
    idx, nxt = np.array(idx), np.array(nxt)
    P_pi = np.zeros((len(pairs), len(pairs)))
    np.add.at(P_pi, (idx, nxt), 1.0)
    P_pi /= P_pi.sum(1, keepdims=True)
    return np.eye(len(pairs), dtype=np.float32), idx, nxt, P_pi, pi, pairs


def action_cost(pairs):
    """r(s, a) = -cost(a): a reward of the action alone, the kind users try first."""
    cost = np.array([0.0, 1.0, 3.0])
    return -np.array([cost[a] for _, a in pairs], np.float32)


def train(method, loss_fn, r_train, seed=0, steps=4000):
    onehot, idx, nxt, P_pi, pi, pairs = mdp(seed)
    data = OperatorData(x=jnp.asarray(onehot[idx]), xn=jnp.asarray(onehot[nxt]),
                        rewards=jnp.asarray(r_train)[:, nxt], done=jnp.zeros(len(idx)),
                        xi=jnp.asarray(onehot[nxt][:16]), enc=jnp.asarray(r_train)[:, nxt][:, :16])
    net = make_network(method, GAMMA, (64, 64), 16, 1, random_features=64)
    cfg = FQEConfig(gamma=GAMMA, tau=0.05, batch_size=256, lr_schedule="cosine", decay_steps=steps)
    state = make_initializer(net, cfg)(jax.random.PRNGKey(seed)[None], data)
    state, _ = make_trainer(net, cfg, steps, loss_fn)(state, data, jax.random.PRNGKey(seed + 1)[None])
    return net, state.params, (onehot, idx, nxt, P_pi, pi, pairs)


def answer(net, params, onehot, nxt, rewards):
    """G[r] = r + gamma U[r] at every pair, rewards (R, n_pairs) encoded over all the data's
    pi-points (s', pi(s')), each as often as the data holds it: the reference distribution."""
    pool = nxt
    u = np.asarray(make_predictor(net)(params, jnp.asarray(onehot), jnp.asarray(onehot[pool]),
                                       jnp.asarray(rewards)[:, pool]))[0]      # (n_pairs, R)
    return np.asarray(rewards).T + GAMMA * u


@pytest.mark.parametrize("method", ["favor", "pi-attention"])
def test_policy_encoding_answers_an_action_cost_where_behaviour_differs(method):
    onehot, idx, nxt, P_pi, pi, pairs = mdp(0)
    r_train = np.asarray(jax.random.normal(jax.random.PRNGKey(0), (32, len(pairs))))
    net, params, _ = train(method, policy_fqe.make_loss(64), r_train)
    rewards = np.stack([action_cost(pairs), *np.asarray(jax.random.normal(jax.random.PRNGKey(9), (8, len(pairs))))])
    pred = answer(net, params, onehot, nxt, rewards)                             # (n_pairs, R)
    truth = np.linalg.solve(np.eye(len(pairs)) - GAMMA * P_pi, rewards.T)
    rel = np.sqrt(np.mean((pred - truth) ** 2, 0)) / np.std(truth, 0)            # (R,)
    assert rel[0] < 0.05, f"action cost: relative RMSE {rel[0]:.3f}"
    assert np.max(rel) < 0.1, f"unseen rewards: relative RMSE {rel}"


def test_behaviour_actions_bias_the_papers_operator_on_an_action_cost():
    """The same action cost through the paper's encoding, reference points at the behaviour's
    actions only (pi's actions missing, as in continuous data): the answer is off, which is the
    error the policy encoding removes."""
    onehot, idx, nxt, P_pi, pi, pairs = mdp(0)
    behaviour = np.array([i for i, (s, a) in enumerate(pairs) if a != pi[s]])  # refs at non-pi actions
    r_train = np.asarray(jax.random.normal(jax.random.PRNGKey(0), (32, len(pairs))))
    data = OperatorData(x=jnp.asarray(onehot[idx]), xn=jnp.asarray(onehot[nxt]),
                        rewards=jnp.asarray(r_train)[:, idx], done=jnp.zeros(len(idx)),
                        xi=jnp.asarray(onehot[behaviour]), enc=jnp.asarray(r_train)[:, behaviour])
    net = make_network("attention", GAMMA, (64, 64), 16, 32)
    cfg = FQEConfig(gamma=GAMMA, tau=0.05, batch_size=256)
    state = make_initializer(net, cfg)(jax.random.PRNGKey(0)[None], data)
    state, _ = make_trainer(net, cfg, 4000)(state, data, jax.random.PRNGKey(1)[None])
    cost = action_cost(pairs)[None]
    pred = np.asarray(make_predictor(net)(state.params, jnp.asarray(onehot), data.xi,
                                          jnp.asarray(cost)[:, behaviour]))[0, :, 0]
    truth = np.linalg.solve(np.eye(len(pairs)) - GAMMA * P_pi, cost[0])
    assert np.sqrt(np.mean((pred - truth) ** 2)) / np.std(truth) > 0.3


def test_forward_backward_recovers_the_resolvent_under_pi():
    onehot, idx, nxt, P_pi, pi, pairs = mdp(1)
    net, params, _ = train("fb", fb.make_loss(1.0), np.zeros((1, len(pairs)), np.float32), seed=1, steps=6000)
    rewards = np.stack([action_cost(pairs), *np.asarray(jax.random.normal(jax.random.PRNGKey(3), (8, len(pairs))))])
    # z_r = E_rho[B(s+) r(s+)] over the data's next states (with their multiplicity): the whole dataset
    u = np.asarray(make_predictor(net)(params, jnp.asarray(onehot), jnp.asarray(onehot[nxt]),
                                       jnp.asarray(rewards)[:, nxt]))[0]
    pred = rewards.T + GAMMA * u
    truth = np.linalg.solve(np.eye(len(pairs)) - GAMMA * P_pi, rewards.T)
    rel = np.sqrt(np.mean((pred - truth) ** 2, 0)) / np.std(truth, 0)
    assert np.max(rel) < 0.15, f"relative RMSE {rel}"
