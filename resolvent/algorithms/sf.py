"""The successor-features baseline (Barreto et al. 2017; paper "Connection with SF").

Basis: phi(x) = the d training rewards' values at x. Successor features psi(x) (d outputs)
solve psi(x) = phi(x) + gamma psi(s', pi(s')); they train with the same update as operator
FQE (``fqe.update``) with the basis as rewards and the identity as their encodings, so that
column k of ``psi @ I`` is psi_k. A new reward r gets its weights by ridge regression of its
values on phi over the dataset (paper Eq. "OLS w", with the footnote's l2 term),

    w = (Phi^T Phi / n + lambda I)^-1 Phi^T r / n,     q_r(x) = w^T psi(x),

while a training reward k keeps its exact weights e_k.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp


def identity_encodings(n_basis: int) -> jax.Array:
    """Encodings of the basis rewards themselves: e_k, (d, d)."""
    return jnp.eye(n_basis, dtype=jnp.float32)


@jax.jit
def ridge_weights(basis: jax.Array, rewards: jax.Array, ridge: float) -> jax.Array:
    """SF weights of rewards (R, n) on the basis values (d, n) at n fit points: (R, d)."""
    n = basis.shape[1]
    gram = basis @ basis.T / n + ridge * jnp.eye(basis.shape[0])    # (d, d)
    rhs = basis @ rewards.T / n                                       # (d, R)
    return jnp.linalg.solve(gram, rhs).T                              # (R, d)
