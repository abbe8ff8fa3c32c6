import sys, numpy as np, jax, dataclasses
sys.path.insert(0,'benchmarks')
import expansion as B
import resolvent
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.rundir import RunDir
from resolvent.experiments.evaluate import family_source
run='/work/q/runs/halfcheetah-vel-expert-policy'
cfg=EvaluateConfig.from_dict(RunDir(run).read_config())
src=family_source(cfg)
m=B.refit_onestep(cfg, src, 50000)
model=resolvent.load(run,'sf'); model.onestep=m
for kind, gt in src.points.items():
    for name, r in src.rewards['probe']:
        if name not in ('forward-velocity','speed-band','pitch-sq'): continue
        t=gt.q(r); p=model.q_values(r, gt.obs0, gt.action0, seed=None, horizon=400).mean(0)
        print(kind, name, 'truth mean %.2f sd %.2f  pred mean %.2f sd %.2f corr %.2f'%(t.mean(),t.std(),p.mean(),p.std(),np.corrcoef(t,p)[0,1]))
    print(kind, 'obs0 speed (obs[8]) mean', gt.obs0[:,8].mean().round(3), 'action0 |a| mean', np.abs(gt.action0).mean().round(3))
