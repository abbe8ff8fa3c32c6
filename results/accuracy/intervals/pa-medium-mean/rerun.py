import json
from resolvent.experiments import EvaluateConfig, run_evaluate
cfg = EvaluateConfig.from_dict(json.load(open("results/accuracy/few-rollouts/pa-medium-trust/config.json")))
run_evaluate(cfg, "runs/pa-medium-mean", resume=False, plot=False)
