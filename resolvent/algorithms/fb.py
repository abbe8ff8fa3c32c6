"""Forward-backward learning of a FIXED target policy's successor measure (Touati and Ollivier
2021; Blier et al. 2021; the losses of metamotivo's ``fb/agent.py``), for ``ForwardBackward``.

The successor measure of the states after the first step, M(x, .) = (1 - d)(delta_{s'} +
gamma M((s', pi(s')), .)), is modelled as F(x)^T B(s+) rho(ds+) with rho the data's next
states. With the batch's next states as samples s+_k ~ rho, M_ik = F(x_i)^T B(s'_k):

    L_M     = 1/2 mean_{i != k} (M_ik - gamma (1 - d_i) Mbar_ik)^2 - mean_i (1 - d_i) M_ii
    L_ortho = 1/2 mean_{i != k} (B_i^T B_k)^2 - mean_i ||B_i||^2

(Mbar from the Polyak target networks at (s'_i, pi(s'_i))); L = L_M + ortho L_ortho. Training
needs no reward at all: a reward enters only at inference, z_r = E_rho[B(s+) r(s+, pi(s+), .)].
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import flax.linen as nn

from resolvent.algorithms.fqe import FQEConfig, OperatorData


def make_loss(ortho: float = 1.0):
    """The FB loss with orthonormality weight ``ortho`` (``fqe.update``'s ``loss_fn``)."""
    def loss(params, target_params, network: nn.Module, config: FQEConfig, data: OperatorData,
             idx: jax.Array, key: jax.Array) -> jax.Array:
        del key
        x, xn = data.x[idx], data.xn[idx]                                       # (b, dx) (b, dx)
        not_done = 1.0 - data.done[idx]                                         # (b,)
        f = network.apply(params, x, method=lambda m, v: m.forward_map(v))      # (b, d)
        b = network.apply(params, xn, method=lambda m, v: m.backward_map(v))    # (b, d)
        f_next = network.apply(target_params, xn, method=lambda m, v: m.forward_map(v))
        b_next = network.apply(target_params, xn, method=lambda m, v: m.backward_map(v))
        target = jax.lax.stop_gradient(config.gamma * not_done[:, None] * (f_next @ b_next.T))   # (b, b)
        diff = f @ b.T - target                                                 # (b, b)
        off = 1.0 - jnp.eye(idx.shape[0])                                       # (b, b)
        l_m = 0.5 * jnp.sum((diff * off) ** 2) / jnp.sum(off) - jnp.mean(not_done * jnp.diag(f @ b.T))
        cov = b @ b.T                                                           # (b, b)
        l_ortho = 0.5 * jnp.sum((cov * off) ** 2) / jnp.sum(off) - jnp.mean(jnp.diag(cov))
        return l_m + ortho * l_ortho
    return loss
