"""kauto on the 512-point HalfCheetah-Vel replay run (runs/hc-replay-512, its models on disk): the horizon
chosen per probe and kind of points by the rule (e_op the operators' variance at the query points), by
the rule with e_op at the rollout's states s_k where the tail is asked, and in hindsight; each with its MSE.

    python results/accuracy/intervals/kauto_tail.py runs/hc-replay-512
"""
import sys

import numpy as np
import resolvent
from resolvent.experiments import open_run
from resolvent.algorithms.horizon import member_spread
run = sys.argv[1]
_, p = open_run(run)
m = resolvent.load(run, 'favor+kauto')
probes = dict(p.source.rewards['probe'])
for kind in ('trajectory', 'dataset', 'reset'):
    gt = p.source.points[kind]
    obs, act = gt.obs0, gt.action0
    hs = (0, *m.horizons)
    ex = m.expansion(obs, act, max(m.horizons))
    picks_now, picks_new = {}, {}
    for name, r in probes.items():
        e_model = member_spread(ex, r, hs, 0.99)
        ans0 = np.stack([mm.q_values(r, obs, act, seed=None, horizon=0).mean(0) for mm in (m, *m.peers)])
        e_op0 = ans0.var(0).mean()
        e_opk = []
        for k in hs:
            if k == 0:
                e_opk.append(e_op0)
                continue
            pre = ex.prefix(k)
            a = np.stack([mm.q_values(r, np.asarray(pre.obs), np.asarray(pre.action), seed=None, horizon=0).mean(0)
                          for mm in (m, *m.peers)])                       # (M, E n)
            w = pre.weights                                                # (E, n)
            v = a.var(0).reshape(w.shape)
            e_opk.append(float((w * v).sum(0).mean()))
        truth = gt.q(r)
        mse = np.array([((m.q_values(r, obs, act, seed=None, horizon=k).mean(0) - truth) ** 2).mean() for k in hs])
        now = hs[int(np.argmin([e_model[i] + 0.99 ** (2 * k) * e_op0 for i, k in enumerate(hs)]))]
        new = hs[int(np.argmin([e_model[i] + 0.99 ** (2 * k) * e_opk[i] for i, k in enumerate(hs)]))]
        best = hs[int(np.argmin(mse))]
        at = {"now": now, "tail-at-s_k": new, "hindsight": best}
        print(f"{kind:10s} {name:18s} " + "  ".join(f"{w} k={k:3d} ({mse[hs.index(k)]:.4g})" for w, k in at.items()),
              flush=True)
