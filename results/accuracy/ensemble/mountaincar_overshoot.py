"""MountainCar: where the single one-step model's k = 400 answer for the own reward goes wrong (the run's saved
model, before scalars were clipped): predicted reward and terminated along the rollouts. python mountaincar_overshoot.py RUN"""
import sys
import numpy as np, resolvent
from resolvent.experiments import EvaluateConfig, RunDir
from resolvent.experiments.evaluate import dataset_source
run = sys.argv[1]
cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
src = dataset_source(cfg)
model = resolvent.load(run, "sf+k400")
name, r = src.rewards["train"][0]
for kind, gt in src.points.items():
    truth = gt.q(r)
    pred = model.q_values(r, gt.obs0, gt.action0, seed=0)
    e = model.expansion(gt.obs0, gt.action0, 400)
    print(kind, name, "truth mean", truth.mean().round(2), "pred mean", pred.mean().round(2), "mse", ((pred-truth)**2).mean().round(1))
    alive = e.alive  # (k+1, n)
    # first step where alive < 0.5
    t_end = (alive < 0.5).argmax(0)
    print("  model episode ends at", np.percentile(t_end, [0, 25, 50, 75, 100]))
    # true time: from truth, Q ~ 100 gamma^T => T = log(Q/100)/log(gamma)
    T = np.log(np.clip(truth, 1e-3, None) / 100) / np.log(0.99)
    Tp = np.log(np.clip(pred, 1e-3, None) / 100) / np.log(0.99)
    d = Tp - T
    print("  implied T true", np.percentile(T, [0, 25, 50, 75, 100]).round(1))
    print("  implied T diff (pred - true)", np.percentile(d, [0, 10, 25, 50, 75, 90, 100]).round(1))
    term = np.stack([x["terminated"] for x in e.steps])  # (k, n)
    rew = np.stack([x["reward"] for x in e.steps]) if "reward" in e.steps[0] else None
    i = np.argmax(np.abs(d))
    print("  worst point: truth", truth[i].round(1), "pred", pred[i].round(1), "term max", term[:, i].max().round(3), "alive end", alive[-1, i].round(3))
    if rew is not None: print("  reward max along", rew[:, i].max().round(1), "at", rew[:, i].argmax(), "alive there", alive[rew[:, i].argmax(), i].round(3))
