"""The `model` part of `sweep.json`: the depth model's state, inputs, parameters, predictions, and
one sentence a client can follow (docs/formats.md, docs/sweep.md "The depth model")."""

from __future__ import annotations

from sparktriage.sweep.model.depth import DepthModel


def verify_cost(p: dict) -> float | None:
    """A predicted depth's verify step time over a plain step's: the step cost every sentence and
    table states (`step_ratio` is the mean step's, plain steps of no-match drafts included)."""
    return p.get("verify_step_ratio") or p.get("step_ratio")


def _terms(p: dict, moe: bool) -> str:
    ratio = verify_cost(p)
    where = (" (measured inside the launches)" if p.get("step_source") == "measured inside launches"
             else "")
    if moe and p.get("expert_ratio") is not None:
        return (f"reads about {p['expert_ratio']:.1f}x the expert weights of a plain step and takes "
                f"{ratio:.2f}x its time{where}")
    return f"takes {ratio:.2f}x the time of a plain step{where}"


def summary(model: DepthModel, decision: dict) -> str:
    """One sentence on the model's terms at the recommended depth and the one past it."""
    if model.state == "rejected":
        return (f"The depth model was rejected ({model.reason}); the black-box rule decided over "
                "every launch made.")
    if model.steps is None or model.acceptance is None:
        return f"The depth model was not used: {model.reason}."
    predicted = {d: model.prediction(d) for d in model.depths if model.predicts(d)}
    chosen = decision.get("depth")
    if chosen not in predicted:
        return f"The depth model predicts every depth but did not decide: {model.reason}."
    moe = model.shape.kind == "expert-union"
    here = predicted[chosen]
    beyond = predicted.get(chosen + 1)
    if beyond is None:
        if not chosen:
            return "Only depth 0 is predicted."
        return (f"At depth {chosen}, the deepest swept, a verify step {_terms(here, moe)}; its "
                f"{here['tokens_per_step']:.1f} tokens per step pay for it "
                f"({here['tok_s']:.1f} tok/s predicted).")
    pays = beyond["tok_s"] >= here["tok_s"]
    return (f"At depth {chosen + 1} a verify step {_terms(beyond, moe)}; its "
            f"{beyond['tokens_per_step']:.1f} tokens per step "
            + ("pay for it only within the margin, so the lower depth is kept"
               if pays else "do not pay for it")
            + f" ({beyond['tok_s']:.1f} against {here['tok_s']:.1f} tok/s predicted at depth "
              f"{chosen}).")


def model_entry(model: DepthModel | None, decision: dict, enabled: bool) -> dict | None:
    """`sweep.json`'s `model` (None with --no-model)."""
    if not enabled or model is None:
        return None
    entry = model.as_dict()
    entry["decided"] = decision.get("rule") == "model"
    entry["summary"] = summary(model, decision)
    return entry
