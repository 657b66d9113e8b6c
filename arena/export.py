"""``arena export``: a checkpoint's deterministic policy as an ONNX or TorchScript file, checked.

The agent hands over its actor as one stateless module (``export_module()``: observation vector in,
action out, normalizer included); this module writes it and then checks the file against the agent
itself on random observations: the exported graph must give the agent's own actions.

The file is written under a temporary name beside the target and renamed onto it only once it is
complete and has passed the check, so a failed export leaves no file behind and an existing target
as it was. An output that is a checkpoint (the one exported, or any other file ``torch.save`` wrote)
is refused: an export must never cost the weights it came from.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import asdict, dataclass
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
    """Write ``module`` (obs [n, obs_size] -> action, fire_logit) as ``fmt`` to ``path``, atomically."""
    from arena.output_files import staged

    target = Path(path)
    with staged(target) as temp:
        write_file(module, obs_size, fmt, temp)
    return target


def write_file(module: Any, obs_size: int, fmt: str, path: Path) -> None:
    """Write ``module`` as ``fmt`` straight to ``path`` (see :func:`staged` for the atomic version)."""
    import torch

    if fmt not in FORMATS:
        raise ExportError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    example = torch.zeros(4, obs_size)
    with torch.no_grad():
        if fmt == "torchscript":  # deprecated by torch in favour of torch.export, still what many runtimes load
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                torch.jit.trace(module, example).save(str(path))
            return
        try:
            import onnx  # noqa: F401
        except ImportError:
            raise ExportError("ONNX export needs the onnx package: pip install 'agent-arena[export]'") from None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's notes about its exporters
            torch.onnx.export(module, (example,), str(path), input_names=["obs"],
                              output_names=["action", "fire_logit"], dynamo=False,
                              dynamic_axes={"obs": {0: "batch"}, "action": {0: "batch"}, "fire_logit": {0: "batch"}})


def refuse_output(out: str | Path, source: str | Path | None = None) -> Path:
    """``out`` as the target of an export, or a one-line :class:`ExportError` if writing it could lose weights.

    Refused: the exported checkpoint itself, any existing file ``torch.save`` wrote (a checkpoint of a
    run, ``best.pt``, another tool's weights; told by its structure, not its name), and a name of the
    ``ckpt_<step>.pt`` form, which a run would take for one of its checkpoints. A symlink is followed,
    so the file it points to is what is judged and replaced.
    """
    from arena.run_files import CHECKPOINT_PATTERN
    from arena.torchfile import is_torch_save_file

    target = Path(out)
    if target.is_symlink():
        target = target.resolve()
    if source is not None and Path(source).is_file() and target.exists() and os.path.samefile(source, target):
        raise ExportError(f"--out {out}: is the checkpoint being exported; export never overwrites a "
                          f"checkpoint, choose another file name")
    if is_torch_save_file(target):
        raise ExportError(f"--out {out}: is a torch checkpoint (a file written by torch.save); export never "
                          f"overwrites a checkpoint, choose another file name")
    if CHECKPOINT_PATTERN.match(target.name):
        raise ExportError(f"--out {out}: named like a run's checkpoint (ckpt_<step>.pt), which a resume or an "
                          f"opponent pool would try to load; choose another file name")
    return target


def finite_actions(module: Any, obs_size: int, samples: int = 1024, seed: int = 0) -> None:
    """Refuse a policy whose actions are NaN or infinite on random observations, before anything is written.

    Such a policy is broken in the checkpoint (weights or normalizer statistics), not by the export,
    and a file of it would steer NaN; this holds with ``--no-check`` too.
    """
    import torch

    generator = torch.Generator().manual_seed(seed)
    obs = torch.rand(samples, obs_size, generator=generator) * 2.0 - 1.0
    try:
        with torch.no_grad():
            action, logit = module(obs)
    except Exception as exc:  # noqa: BLE001 - a plugin's module: its fault, told in one line
        text = str(exc).strip().splitlines()
        raise ExportError(f"the export module fails on observations [n, {obs_size}] ({type(exc).__name__}"
                          f"{': ' + text[0] if text else ''}); nothing was written") from exc
    if not (bool(torch.isfinite(action).all()) and bool(torch.isfinite(logit).all())):
        raise ExportError("the policy's actions are NaN or infinite for random observations: its weights or "
                          "normalizer statistics are damaged; nothing was written")


@dataclass
class Exported:
    """What :func:`export_policy` wrote, and how its check went (None with ``verify=False``)."""

    path: Path
    fmt: str
    obs_keys: tuple[str, ...]
    check: ExportCheck | None

    def to_dict(self, source: str) -> dict[str, Any]:
        """The ``--json`` object: input, output, format, the input's layout, and what the check measured."""
        return {"input": source, "output": str(self.path), "format": self.fmt, "obs_keys": list(self.obs_keys),
                "checked": self.check is not None,
                "check": None if self.check is None else {**asdict(self.check), "ok": self.check.ok}}


def export_policy(agent: Any, fmt: str, out: str | Path, *, source: str | Path | None = None, verify: bool = True,
                  samples: int = CHECK_SAMPLES) -> Exported:
    """Write ``agent``'s policy as ``fmt`` to ``out`` and (``verify``) check it against the agent.

    ``out`` is refused where :func:`refuse_output` says so; the file takes its name only once written
    and checked. A failed check raises :class:`ExportError` with its measurements and writes nothing.
    """
    from arena.output_files import staged

    target = refuse_output(out, source)
    keys = tuple(getattr(agent, "obs_keys", ()))
    module = exportable(agent)
    finite_actions(module, len(keys))
    result = None
    with staged(target) as temp:
        write_file(module, len(keys), fmt, temp)
        if verify:
            result = check(agent, keys, fmt, temp, samples=samples)
            if not result.ok:
                raise ExportError(f"the exported policy does not act like the agent on {result.samples:,} random "
                                  f"observations with {result.runtime} (max rudder difference "
                                  f"{result.max_rudder_diff:.2e}, {result.fire_mismatches} fire decisions differ); "
                                  f"nothing was written to {out}")
    return Exported(target, fmt, keys, result)


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
