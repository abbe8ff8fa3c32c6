"""TensorBoard event files: every number of a metric row, per method and seed; a restart hides
the events a killed process wrote after its checkpoint."""
import math

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.summary.writer import event_file_writer

from resolvent.experiments.events import EventLog, scalars


def read(folder, tag):
    acc = EventAccumulator(str(folder))
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def test_scalars_of_a_row_nested_and_skipping_what_is_not_a_number():
    row = {"method": "maxout", "seed": 2, "step": 100, "return": -150.5, "loss": None, "ok": True,
           "test_returns": {"theta0=0.5": -170.0, "theta0=-0.3": 2}, "bad": math.nan}
    assert scalars(row) == [("return", -150.5), ("test_returns/theta0=0.5", -170.0), ("test_returns/theta0=-0.3", 2.0)]


def test_events_per_method_and_seed_and_a_restart_hides_the_lost_steps(tmp_path):
    # event file names end in a per-process counter; set it so that attention-seed0's first file
    # ends in 10^k - 1 and its file after the restart (same process, same second) in 10^k + 2,
    # which sorts first as text: the resumed file must still be read last
    uid = event_file_writer._global_uid
    while uid._value + 1 < 10 or str(uid._value + 1).rstrip("0") != "1":
        uid.get()
    log = EventLog(tmp_path)
    log.write([{"method": "attention", "seed": s, "step": t, "test_mse": 10.0 * s + t} for t in (0, 50, 100, 150)
               for s in (0, 1)])
    log.write([{"method": "vanilla", "seed": 0, "step": 0, "test_mse": 1.0}])
    log.close()                                    # killed after step 150; its checkpoint was at 100
    assert read(tmp_path / "attention-seed1", "test_mse") == [(0, 10.0), (50, 60.0), (100, 110.0), (150, 160.0)]
    resumed = EventLog(tmp_path)
    resumed.restart("attention", 101)
    resumed.write([{"method": "attention", "seed": 0, "step": t, "test_mse": -t} for t in (150, 200)])
    resumed.close()
    assert read(tmp_path / "attention-seed0", "test_mse") == [(0, 0.0), (50, 50.0), (100, 100.0), (150, -150.0),
                                                              (200, -200.0)]
    assert read(tmp_path / "vanilla-seed0", "test_mse") == [(0, 1.0)]
