"""An opponent's per-env memory (cooldowns, state machines, random streams), taken and put back for an
exact resume: the pool's opponents and a kickstart teacher keep theirs across a checkpoint."""

from __future__ import annotations

from typing import Any


def capture_agent_memory(agent: object) -> dict[str, Any]:
    """What an opponent remembers between steps (cooldowns, state machines, random generators).

    Agents that define ``get_state()``/``set_state()`` decide themselves. Otherwise the tensors and
    ``torch.Generator`` states among the agent's own attributes are taken: that is where a vectorized
    rule-based agent keeps its per-env memory, and restoring it makes a resumed run continue exactly.
    """
    import torch

    getter = getattr(agent, "get_state", None)
    if callable(getter):
        return {"custom": getter()}
    memory: dict[str, Any] = {}
    for name, value in vars(agent).items():
        if isinstance(value, torch.Tensor):
            memory[f"tensor:{name}"] = value.detach().clone()
        elif isinstance(value, torch.Generator):
            memory[f"generator:{name}"] = value.get_state()
    return memory


def restore_agent_memory(agent: object, memory: dict[str, Any]) -> None:
    """Put back what :func:`capture_agent_memory` took."""
    import torch

    if "custom" in memory:
        agent.set_state(memory["custom"])  # type: ignore[attr-defined]
        return
    for key, value in memory.items():
        kind, _, name = key.partition(":")
        if kind == "tensor":
            current = getattr(agent, name, None)
            device = current.device if isinstance(current, torch.Tensor) else value.device
            setattr(agent, name, value.to(device))
        elif kind == "generator":
            current = getattr(agent, name, None)
            if not isinstance(current, torch.Generator):  # created lazily by the agent: create it now
                current = torch.Generator(device=getattr(agent, "device", "cpu"))
                setattr(agent, name, current)
            current.set_state(value)
