"""The PPO loss and update on a synthetic rollout."""

from __future__ import annotations

import pytest
import torch

from arena.env.compiled import missing_compiler
from arena_ppo.algorithms import PPO, bernoulli_kl, gaussian_kl
from arena_ppo.modules import ActorCritic, ValueNorm, ValueNormalizer
from arena_ppo.storage import RolloutStorage, Transition
from arena_ppo.train_config import NetworkConfig, PPOConfig


def filled_storage(model: ActorCritic, steps: int = 8, envs: int = 16) -> RolloutStorage:
    gen = torch.Generator().manual_seed(0)
    storage = RolloutStorage(steps, envs, 10, None, "cpu")
    with torch.no_grad():
        for _ in range(steps):
            obs = torch.rand(envs, 10, generator=gen)
            out = model.act(obs, generator=gen)
            storage.add(Transition(obs=obs, critic_obs=None, u=out.u, fire=out.fire, log_prob=out.log_prob,
                                   value=model.value(obs), reward=torch.randn(envs, generator=gen),
                                   done=torch.rand(envs, generator=gen) < 0.1, bootstrap=torch.zeros(envs),
                                   mean=out.mean, log_std=out.log_std, fire_logit=out.fire_logit))
        storage.compute_returns(torch.zeros(envs), 0.99, 0.95)
    return storage


def test_loss_is_a_scalar_that_backpropagates():
    torch.manual_seed(0)
    model = ActorCritic(NetworkConfig())
    algo = PPO(model, PPOConfig(clip_value_loss=True))
    storage = filled_storage(model)
    batch = next(storage.mini_batches(32, 1, torch.Generator().manual_seed(0)))
    loss, parts = algo.loss(batch, batch["advantages"])
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None for g in grads) and any(g.abs().sum() > 0 for g in grads)
    assert abs(float(parts["approx_kl"])) < 1e-6  # same policy as at collection
    assert float(parts["clip_fraction"]) == 0.0


def test_update_moves_the_policy_and_reports_metrics():
    torch.manual_seed(0)
    model = ActorCritic(NetworkConfig())
    before = [p.detach().clone() for p in model.parameters()]
    algo = PPO(model, PPOConfig(batch_size=32, n_epochs=3, lr_schedule="adaptive", value_norm=True), ValueNormalizer())
    out = algo.update(filled_storage(model), torch.Generator().manual_seed(0))
    assert set(out) == {"policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "learning_rate"}
    assert all(torch.isfinite(torch.as_tensor(v)) and -100 < v < 100 for v in out.values())
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert 1e-5 <= out["learning_rate"] <= 3e-4  # the adaptive rate never rises above --learning-rate


@pytest.mark.parametrize("lr, desired_kl, lowered", [(0.05, 0.001, True), (3e-4, 10.0, False)])
def test_adaptive_rate_brakes_on_a_large_kl_and_never_accelerates(lr, desired_kl, lowered):
    torch.manual_seed(0)
    model = ActorCritic(NetworkConfig())
    algo = PPO(model, PPOConfig(learning_rate=lr, batch_size=32, n_epochs=4, lr_schedule="adaptive",
                                desired_kl=desired_kl))
    out = algo.update(filled_storage(model), torch.Generator().manual_seed(0))
    assert (out["learning_rate"] < lr) if lowered else (out["learning_rate"] == lr)


def test_the_adaptive_rate_never_climbs_above_the_configured_rate():
    """A tiny KL raises the rate by 1.5 at every minibatch, up to --learning-rate and no further."""
    torch.manual_seed(0)
    model = ActorCritic(NetworkConfig())
    algo = PPO(model, PPOConfig(learning_rate=3e-4, batch_size=32, n_epochs=4, lr_schedule="adaptive",
                                desired_kl=10.0))
    algo.set_learning_rate(1e-4)
    out = algo.update(filled_storage(model), torch.Generator().manual_seed(0))
    assert out["learning_rate"] == 3e-4


def test_kl_helpers():
    m = torch.tensor([0.0, 1.0])
    s = torch.tensor([0.0, -1.0])
    assert torch.allclose(gaussian_kl(m, s, m, s), torch.zeros(2))
    assert torch.allclose(bernoulli_kl(m, m), torch.zeros(2), atol=1e-7)
    ref = torch.distributions.kl_divergence(torch.distributions.Normal(0.0, 1.0), torch.distributions.Normal(1.0, 0.5))
    assert torch.allclose(gaussian_kl(torch.tensor(0.0), torch.tensor(0.0), torch.tensor(1.0),
                                      torch.tensor(0.5).log()), ref)


def twin_algorithms(compiled_step=None, batch_size=32, value_norm=False):
    """An eager update and a compiled one (or one whose step is ``compiled_step``), on equal weights."""
    torch.manual_seed(0)
    cfg = PPOConfig(batch_size=batch_size, n_epochs=2, learning_rate=3e-3, lr_schedule="adaptive", desired_kl=1e-5,
                    value_norm=value_norm)
    eager_model = ActorCritic(NetworkConfig())
    compiled_model = ActorCritic(NetworkConfig())
    compiled_model.load_state_dict(eager_model.state_dict())
    storage = filled_storage(eager_model)
    compiled = PPO(compiled_model, cfg, ValueNorm() if value_norm else None, compiled=compiled_step is None)
    if compiled_step is not None:
        compiled.compiled, compiled._descend = True, compiled_step
    return PPO(eager_model, cfg, ValueNorm() if value_norm else None), compiled, storage


NO_COMPILER = missing_compiler(torch.device("cpu"))


@pytest.mark.skipif(NO_COMPILER is not None, reason=f"{NO_COMPILER}: the update runs eagerly here")
def test_the_compiled_update_follows_the_eager_one():
    """Two updates: the same losses, rates and weights within float tolerance (the adaptive rate moves).
    Skipped, naming why, where the compiler fails and the update falls back to eager."""
    eager, compiled, storage = twin_algorithms()
    for _ in range(2):
        want = eager.update(storage, torch.Generator().manual_seed(1))
        got = compiled.update(storage, torch.Generator().manual_seed(1))
        if not compiled.compiled:  # the product's fallback: inductor failed on this machine
            pytest.skip(f"the compiler cannot run here, the update fell back to eager ({compiled.eager_reason})")
        for key in want:
            assert torch.allclose(got[key], want[key], rtol=1e-4, atol=1e-5), key
    assert eager.learning_rate < 3e-3, "the adaptive rate moved"
    for a, b in zip(eager.model.parameters(), compiled.model.parameters()):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)


def test_a_compiler_that_fails_leaves_the_update_eager_and_untouched(caplog):
    """A graph that fails to compile (here the short last minibatch's, which compiles a graph of its own)
    is undone (weights, Adam's moments, the rate, MAPPO's per-minibatch value normalizer), said once, and
    the update runs eagerly from there: exactly what an eager update does."""
    from torch._dynamo.exc import BackendCompilerFailed

    def broken(batch):
        parts = compiled.descend(batch)  # moves the weights and the normalizer before failing
        if batch["advantages"].shape[0] == 32:
            raise BackendCompilerFailed(lambda *a: None, RuntimeError("no toolchain"), None)
        return parts

    eager, compiled, storage = twin_algorithms(broken, batch_size=48, value_norm=True)  # 128 rows: 48, 48, 32
    with caplog.at_level("WARNING"):
        got = compiled.update(storage, torch.Generator().manual_seed(1))
    want = eager.update(storage, torch.Generator().manual_seed(1))
    assert not compiled.compiled and "compiling the PPO update failed" in caplog.text
    assert all(torch.equal(got[key], want[key]) for key in want)
    assert all(torch.equal(a, b) for a, b in zip(eager.model.parameters(), compiled.model.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(eager.value_normalizer.state_dict().values(),
                                                 compiled.value_normalizer.state_dict().values()))


@pytest.mark.parametrize("setting, device, compiled", [("", "cpu", False), ("0", "cuda", False), ("1", "cpu", True),
                                                       ("", "cuda", True)])
def test_the_update_compiles_where_it_pays_or_as_told(monkeypatch, setting, device, compiled):
    """Auto: on a GPU, not on the CPU (docs/experiments/2026-11-26-compiled-update.md); ARENA_COMPILE decides."""
    import arena.env.compiled
    from arena_ppo.algorithms.ppo import compile_update

    monkeypatch.setenv("ARENA_COMPILE", setting)
    monkeypatch.setattr(arena.env.compiled, "missing_compiler", lambda device: None)
    got, why = compile_update(torch.device(device))
    assert got is compiled and (why == "") is compiled
