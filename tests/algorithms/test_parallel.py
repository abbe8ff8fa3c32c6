"""Data-parallel operator FQE: the batch split across two XLA host devices is the same step."""
import subprocess
import sys
import textwrap


def test_parallel_trainer_matches_single_device_training():
    code = textwrap.dedent("""
        import os
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        import jax, jax.numpy as jnp, numpy as np
        from resolvent.algorithms import FQEConfig, OperatorData, make_initializer, make_trainer
        from resolvent.algorithms.fqe import make_parallel_trainer
        from resolvent.operators import make_network
        assert jax.local_device_count() == 2
        k = jax.random.split(jax.random.PRNGKey(0), 8)
        n, dx, R, M = 1000, 4, 8, 16
        data = OperatorData(x=jax.random.normal(k[1], (n, dx)), xn=jax.random.normal(k[2], (n, dx)),
                            rewards=jax.random.normal(k[3], (R, n)), done=jnp.zeros(n),
                            xi=jax.random.normal(k[4], (M, dx)), enc=jax.random.normal(k[0], (R, M)))
        net = make_network("attention", 0.99, (32, 32), 16, R)
        cfg = FQEConfig(batch_size=64)
        keys = jax.random.split(k[5], 2)
        s0 = make_initializer(net, cfg)(keys, data)
        a, la = make_trainer(net, cfg, 20)(s0, data, keys)
        b, lb = make_parallel_trainer(net, cfg, 20)(s0, data, keys)
        np.testing.assert_allclose(np.asarray(la), np.asarray(lb), rtol=1e-4)
        qa = net.apply(jax.tree.map(lambda p: p[0], a.params), data.x[:50], data.xi, data.enc)
        qb = net.apply(jax.tree.map(lambda p: p[0], b.params), data.x[:50], data.xi, data.enc)
        np.testing.assert_allclose(np.asarray(qa), np.asarray(qb), rtol=1e-2, atol=1e-2)
        try:
            make_parallel_trainer(net, FQEConfig(batch_size=63), 1)
        except ValueError as e:
            assert "batch_size 63" in str(e)
        else:
            raise AssertionError("an odd batch was accepted")
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]
