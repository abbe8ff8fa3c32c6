"""The one runner of every experiment: run directory, methods, chunked training, checkpoints.

``evaluate`` (operator FQE, scored against ground truth), ``optimize`` (operator DQN/BCQ,
scored by returns in the environment) and ``fit`` plug in their own ``train`` (a jitted chunk
of ``every`` steps on all seeds) and ``log`` (score the state, append metric rows, return the
progress bar's fields); ``train_loop`` owns the rest: the resume from the last checkpoint
(metric rows after it dropped, the step-0 rows not written twice), the key split of each
chunk, the timing, the progress bar and the checkpoints. ``run_experiment`` owns the run
directory around it.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import jax
import numpy as np
from tqdm.auto import tqdm

from resolvent.experiments.rundir import RunDir, trained


def train_loop(run: RunDir, name: str, state, keys: jax.Array, steps: int, every: int, checkpoint_every: int,
               resume: bool, train: Callable, log: Callable) -> tuple[object, int, float]:
    """Train ``name`` to ``steps``: ``train(state, chunk_keys) -> (state, loss)`` runs ``every``
    steps on every seed (keys (S, 2)); ``log(state, step, loss, seconds) -> dict`` scores and
    writes metric rows (loss None at step 0). Returns the final state, step and training seconds."""
    ckpt = {"state": state, "keys": keys, "step": 0, "seconds": 0.0}
    if resume:
        ckpt = run.load_checkpoint(name, ckpt) or ckpt
        done = int(ckpt["step"])
        run.keep_metrics(lambda r: r.get("method") != name or (r["step"] <= done and (r["step"] > 0 or done > 0)))
        run.events.restart(name, done + 1 if done > 0 else 0)
    state, keys, step, seconds = ckpt["state"], ckpt["keys"], int(ckpt["step"]), float(ckpt["seconds"])
    if step == 0:
        log(state, 0, None, 0.0)
    bar = tqdm(total=steps, initial=step, desc=f"{name:>9}", unit="step", dynamic_ncols=True)
    while step < steps:
        t0 = time.perf_counter()
        split = jax.vmap(jax.random.split)(keys)                           # (S, 2, 2)
        keys, chunk_keys = split[:, 0], split[:, 1]
        state, loss = train(state, chunk_keys)
        loss = np.asarray(jax.block_until_ready(loss))
        seconds += time.perf_counter() - t0
        step += every
        bar.update(every)
        bar.set_postfix(log(state, step, loss, seconds))
        if step % checkpoint_every == 0 or step >= steps:
            run.save_checkpoint(name, {"state": state, "keys": keys, "step": step, "seconds": seconds})
    bar.close()
    return state, step, seconds


def run_experiment(cfg, config_cls, out: str | Path, resume: bool, prepare: Callable, header: Callable,
                   run_method: Callable, plot: Callable | None = None, finish: Callable | None = None) -> dict:
    """Run (or resume) an experiment into ``out``; returns results.json's content.

    The task plugs in ``prepare(cfg) -> problem``, ``header(cfg, problem, run) -> dict`` (the
    fixed part of results.json; it may save side files) and ``run_method(name, cfg, problem,
    run, resume) -> dict`` (one method's entry, trained with ``train_loop``) and optionally
    ``finish(cfg, problem, results) -> dict`` (entries that need every method); this owns the run
    directory: one writer (a second stops at once, ``RunInUseError``), the configuration (a
    resumed run keeps its own), the methods already finished, results.json and the plot.
    """
    run = RunDir(out)
    with run.writer():
        cfg = run.start(cfg, config_cls, resume)
        problem = prepare(cfg)
        if not resume:
            run.write_json("config.json", cfg.to_dict())
        results = {**header(cfg, problem, run), "device": jax.devices()[0].device_kind,   # "cpu", "NVIDIA H200"
                   "methods": run.previous_methods() if resume else {}, "complete": False}
        run.write_json("results.json", results)
        for name in cfg.methods:
            if resume and trained(results["methods"], name, cfg.steps):
                continue
            results["methods"][name] = run_method(name, cfg, problem, run, resume)
            run.write_json("results.json", results)
        if finish is not None:
            results.update(finish(cfg, problem, results))
        results["complete"] = True                # every entry written: the run is finished (``finished``)
        run.write_json("results.json", results)
        if plot is not None:
            plot(run.path)
    return results
