"""``arena export``: a checkpoint's deterministic policy as an ONNX or TorchScript file, checked.

The agent hands over its actor as one stateless module (``export_module()``: observation vector in,
action out, normalizer included); this module writes it and then checks the file against the agent
itself on random observations: the exported graph must give the agent's own actions.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMATS = ("onnx", "torchscript")
CHECK_SAMPLES = 10_000


class ExportError(ValueError):
    """A checkpoint that cannot be exported, or an export that does not act like its agent."""


@dataclass
class ExportCheck:
    """How the exported file compares with the agent on ``samples`` random observations."""

    samples: int
    max_rudder_diff: float
    fire_mismatches: int  # outside a 1e-4 band around the trigger, where float rounding may tip it
    runtime: str

    @property
    def ok(self) -> bool:
        return self.max_rudder_diff < 1e-5 and self.fire_mismatches == 0


def exportable(agent: Any) -> Any:
    """The agent's export module, or a one-line :class:`ExportError`."""
    make = getattr(agent, "export_module", None)
    if not callable(make):
        raise ExportError(f"agent {getattr(agent, 'name', type(agent).__name__)!r} has no export_module(): only "
                          f"agents with a network can be exported")
    try:
        return make()
    except ValueError as exc:
        raise ExportError(str(exc)) from None


def write(module: Any, obs_size: int, fmt: str, path: str | Path) -> Path:
    """Write ``module`` (obs [n, obs_size] -> action, fire_logit) as ``fmt`` to ``path``."""
    import torch

    if fmt not in FORMATS:
        raise ExportError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    example = torch.zeros(4, obs_size)
    with torch.no_grad():
        if fmt == "torchscript":  # deprecated by torch in favour of torch.export, still what many runtimes load
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                torch.jit.trace(module, example).save(str(path))
            return path
        try:
            import onnx  # noqa: F401
        except ImportError:
            raise ExportError("ONNX export needs the onnx package: pip install 'agent-arena[export]'") from None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's notes about its exporters
            torch.onnx.export(module, (example,), str(path), input_names=["obs"],
                              output_names=["action", "fire_logit"], dynamo=False,
                              dynamic_axes={"obs": {0: "batch"}, "action": {0: "batch"}, "fire_logit": {0: "batch"}})
    return path


def check(agent: Any, obs_keys: tuple[str, ...], fmt: str, path: str | Path, samples: int = CHECK_SAMPLES,
          seed: int = 0) -> ExportCheck:
    """Run the exported file (onnxruntime, or TorchScript) and the agent (eval, "fire when p > 0.5") on
    ``samples`` random observations in [-1, 1] and compare their actions."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    obs = torch.rand(samples, len(obs_keys), generator=generator) * 2.0 - 1.0
    if fmt == "onnx":
        try:
            import onnxruntime
        except ImportError:
            raise ExportError("checking an ONNX file needs onnxruntime: pip install 'agent-arena[export]' "
                              "(or --no-check)") from None
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        action, logit = (torch.from_numpy(x) for x in session.run(None, {"obs": obs.numpy()}))
        runtime = f"onnxruntime {onnxruntime.__version__}"
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            loaded = torch.jit.load(str(path))
        with torch.no_grad():
            action, logit = loaded(obs)
        runtime = f"torch.jit {torch.__version__}"
    rule = getattr(agent, "fire_rule", None)
    agent.eval()
    if rule is not None:
        agent.fire_rule = "threshold"
    try:
        with torch.no_grad():
            mine = agent.act({k: obs[:, i].to(agent.device) for i, k in enumerate(obs_keys)})
    finally:
        if rule is not None:
            agent.fire_rule = rule
    rudder = mine["rudder"].float().cpu()
    fire = mine["fire"].bool().cpu()
    clear = logit.abs() > 1e-4
    return ExportCheck(samples, float((action[:, 0] - rudder).abs().max()),
                       int(((action[:, 2] > 0.5) != fire)[clear].sum()), runtime)
