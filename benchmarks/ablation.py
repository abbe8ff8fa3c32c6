import sys, json, time, dataclasses, hashlib
from resolvent.experiments import EvaluateConfig, run_evaluate
from resolvent.rewards import PriorConfig
fam = sys.argv[1]; ds = sys.argv[2]
for spec in sys.argv[3:]:
    kw = json.loads(spec)
    pri = kw.pop("prior", {}); fq = kw.pop("fqe", {}); preset = kw.pop("preset", "default")
    base = dict(family=fam, dataset=ds, methods=("attention",), seeds=1, steps=15000, log_every=1500, checkpoint_every=15000)
    base.update(kw)
    cfg = EvaluateConfig.preset(preset, **base)
    fqe = dataclasses.replace(cfg.fqe, prior=dataclasses.replace(cfg.prior, **pri), **fq)
    cfg = dataclasses.replace(cfg, fqe=fqe)
    t = time.time()
    out = f"/tmp/sw/{fam}-{ds}-" + hashlib.md5(spec.encode()).hexdigest()[:8]
    r = run_evaluate(cfg, out, plot=False)
    for m, e in r["methods"].items():
        e = {k: (round(sum(v)/len(v), 3) if isinstance(v, list) else v) for k, v in e.items() if k != "probe_r2_each"}
        each = {k: round(sum(v)/len(v), 2) for k, v in r["methods"][m].get("probe_r2_each", {}).items()}
        print("RESULT", fam, ds, spec, m, json.dumps(e), json.dumps(each), round(time.time() - t), flush=True)
