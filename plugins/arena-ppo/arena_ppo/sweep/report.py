"""What a sweep found: the table of its trials, the best settings, Optuna's parameter importances, a plot.

Read from the study, so any process of a sweep (or a later one) reports every trial, its own and the
others'. A failed trial that a retry took over shows as ``retried`` and its retry as ``N (of M)``.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

from arena_ppo.sweep.study import SweepSpec, replaced_numbers, write_best

PLOT_FILE = "objective.png"


def trial_rows(study: Any, spec: SweepSpec) -> list[dict[str, Any]]:
    """One plain dict per trial: number, state, params, per-seed scores, objective, note, folder."""
    trials = study.get_trials(deepcopy=False)
    replaced = replaced_numbers(trials)
    rows = []
    for t in trials:
        state = "retried" if t.number in replaced else t.state.name.lower()
        scores = {int(s): float(v) for s, v in (t.user_attrs.get("scores") or {}).items()}
        rows.append({"number": t.number, "state": state, "params": dict(t.params), "scores": scores,
                     "objective": t.value if t.state.name == "COMPLETE" else None,
                     "retry_of": t.system_attrs.get("failed_trial"), "note": t.user_attrs.get("note") or "",
                     "dir": t.user_attrs.get("dir")})
    return rows


def importances(study: Any) -> tuple[dict[str, float] | None, str]:
    """Optuna's parameter importances (its default evaluator) over the complete trials, or None and why not."""
    import optuna
    from optuna.trial import TrialState

    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(complete) < 2:
        return None, f"{len(complete)} complete trial{'s' * (len(complete) != 1)}: importances need 2 or more"
    try:
        with warnings.catch_warnings():  # "importances will be equal" and the like: the numbers say it
            warnings.simplefilter("ignore")
            found = optuna.importance.get_param_importances(study)
        return {k: float(v) for k, v in found.items()}, ""
    except Exception as exc:  # noqa: BLE001 - an estimate that cannot be made (one value searched, ...) is no error
        return None, f"cannot be estimated ({type(exc).__name__}: {exc})"[:200]


def plot(study: Any, spec: SweepSpec, path: Path) -> Path | None:
    """The objective of each complete trial and the best so far, over the trials' numbers."""
    from optuna.trial import TrialState

    complete = sorted(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)), key=lambda t: t.number)
    if not complete:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    numbers, values = [t.number for t in complete], [float(t.value) for t in complete]
    best, running = [], -math.inf
    for value in values:
        running = max(running, value)
        best.append(running)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(numbers, values, "o", label=f"trial ({spec.objective} over seeds)")
    ax.step(numbers, best, where="post", label="best so far")
    ax.set_xlabel("trial")
    ax.set_ylabel(f"objective ({spec.objective})")
    ax.legend(loc="lower right")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return path


def short_names(keys: list[str]) -> dict[str, str]:
    """Column names: a setting's name without its section, unless two sections share it."""
    names = [k.split(".", 1)[-1] for k in keys]
    return {k: (n if names.count(n) == 1 else k) for k, n in zip(keys, names)}


def value_text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "-" if value is None else str(value)


def table(rows: list[dict[str, Any]], spec: SweepSpec) -> str:
    keys = [d.key for d in spec.space]
    names = short_names(keys)
    header = ["trial", "state", *(names[k] for k in keys), *(f"seed {s}" for s in spec.seeds), spec.objective, "note"]
    lines = []
    for row in rows:
        number = str(row["number"]) + (f" (of {row['retry_of']})" if row["retry_of"] is not None else "")
        lines.append([number, row["state"], *(value_text(row["params"].get(k)) for k in keys),
                      *(f"{row['scores'][s]:.3f}" if s in row["scores"] else "-" for s in spec.seeds),
                      "-" if row["objective"] is None else f"{row['objective']:.3f}", row["note"][:70]])
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]
    return "\n".join(out)


def summary(study: Any, spec: SweepSpec, out: Path) -> dict[str, Any]:
    """Everything the end of a sweep prints (and ``--json`` gives), with best.yaml and the plot written."""
    rows = trial_rows(study, spec)
    best_path = write_best(out, spec, study)
    weights, why = importances(study)
    try:
        plotted = plot(study, spec, out / PLOT_FILE)
    except Exception:  # noqa: BLE001 - a plot that cannot be drawn takes nothing from the sweep
        plotted = None
    best = None
    if best_path is not None:
        trial = study.best_trial
        best = {"number": trial.number, "objective": trial.value, "params": dict(trial.params),
                "scores": {int(s): float(v) for s, v in (trial.user_attrs.get("scores") or {}).items()},
                "config": str(best_path)}
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["state"]] = counts.get(row["state"], 0) + 1
    return {"dir": str(out), "study": str(out / "study.db"), "algorithm": spec.algorithm, "objective": spec.objective,
            "seeds": list(spec.seeds), "space": {d.key: d.to_dict() for d in spec.space}, "trials": rows,
            "counts": counts, "best": best, "importances": weights, "importances_note": why,
            "plot": str(plotted) if plotted else None}


def render(data: dict[str, Any], spec: SweepSpec) -> str:
    lines = [table(data["trials"], spec), ""]
    counts = ", ".join(f"{n} {state}" for state, n in sorted(data["counts"].items()))
    lines.append(f"{len(data['trials'])} trials: {counts}")
    best = data["best"]
    if best is None:
        lines.append("no trial is complete yet: no best settings")
    else:
        lines.append(f"best: trial {best['number']}, {spec.objective} {best['objective']:.3f}: "
                     + ", ".join(f"{k} {value_text(v)}" for k, v in best["params"].items()))
        lines.append(f"  its settings: {best['config']}; train with them: arena train {spec.algorithm} --config "
                     f"{best['config']}")
        lines.append(f"  check them on new seeds: arena sweep {spec.algorithm} --confirm {best['config']} --seeds 5")
    if data["importances"]:
        lines.append("importance: " + ", ".join(f"{k} {v:.2f}" for k, v in data["importances"].items()))
    else:
        lines.append(f"importance: {data['importances_note']}")
    if data["plot"]:
        lines.append(f"plot: {data['plot']}")
    return "\n".join(lines)
