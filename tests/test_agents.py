"""build_agent: names, aliases, parameters, checkpoints, and the errors a user will see."""

from __future__ import annotations

import pytest
import torch

from arena.agents import (
    Agent,
    AgentSpecError,
    BaseAgent,
    Registry,
    TeamSizeConflict,
    TrainedFor,
    UnknownNameError,
    agent_registry,
    build_agent,
    parse_spec,
    team_size_for,
    trained_for,
    with_obs_mode,
)
from arena.env import EnvConfig
from arena.plugins import PluginInfo


class Loadable(BaseAgent):
    name = "loadable"
    loaded: list = []

    @classmethod
    def load(cls, checkpoint, device="cpu", env_config=None):
        data = torch.load(checkpoint, map_location="cpu", weights_only=True)
        if data.get("format_version") != 1:
            raise ValueError(f"unsupported format_version {data.get('format_version')}")
        agent = cls(device=device, env_config=env_config)
        agent.checkpoint = checkpoint
        return agent

    def act(self, observation):
        raise NotImplementedError


@pytest.fixture
def registry() -> Registry[type]:
    reg = agent_registry()
    reg.add("loadable", Loadable, PluginInfo("t", "test-dist", "1", "tests"))
    return reg


def save(path, **data):
    torch.save(data, path)
    return str(path)


def test_names_and_aliases_build_agents():
    crank = build_agent("rule_based", env_config=EnvConfig(missile_max_range=30_000.0), fire_range_frac=0.5)
    assert crank.name == "crank" and crank.fire_range_m == 15_000.0
    assert isinstance(crank, Agent) and isinstance(build_agent("placeholder"), Agent)


def test_unknown_name_suggests_the_closest():
    with pytest.raises(AgentSpecError, match=r"unknown agent 'crnak'; did you mean crank") as exc:
        build_agent("crnak")
    assert "available:" in str(exc.value)
    with pytest.raises(UnknownNameError):
        agent_registry().get("nope")


def test_bad_parameters_name_the_agent():
    with pytest.raises(AgentSpecError, match=r"agent 'crank'.*unexpected keyword argument 'speed'"):
        build_agent("crank", speed=3)
    with pytest.raises(AgentSpecError, match=r"agent 'placeholder'.*fire_prob"):
        build_agent("placeholder", fire_prob=2.0)


@pytest.mark.parametrize("spec, parsed", [
    ("crank", ("crank", None)), ("ppo:runs/a/c.pt", ("ppo", "runs/a/c.pt")), ("runs/a/c.pt", (None, "runs/a/c.pt")),
    ("c.pt", (None, "c.pt")), ("ckpt:c.pt", (None, "c.pt")), ("C:\\runs\\c.pt", (None, "C:\\runs\\c.pt")),
])
def test_parse_spec(spec, parsed):
    assert parse_spec(spec) == parsed


def test_empty_spec_and_missing_path():
    with pytest.raises(AgentSpecError, match="empty"):
        parse_spec(" ")
    with pytest.raises(AgentSpecError, match="checkpoint path after 'ppo:'"):
        parse_spec("ppo:")


def test_checkpoint_forms_load_through_the_class(tmp_path, registry):
    path = save(tmp_path / "c.pt", format_version=1, agent="loadable", weights={"w": torch.zeros(2)})
    for spec in (path, f"loadable:{path}", f"ckpt:{path}"):
        agent = build_agent(spec, registry=registry)
        assert isinstance(agent, Loadable) and agent.checkpoint == path


def test_missing_corrupt_and_foreign_checkpoints(tmp_path, registry):
    with pytest.raises(AgentSpecError, match=r"checkpoint .*nothere\.pt: no such file"):
        build_agent(str(tmp_path / "nothere.pt"), registry=registry)
    with pytest.raises(AgentSpecError, match=r"nothere\.pt: no such file"):
        build_agent(f"loadable:{tmp_path / 'nothere.pt'}", registry=registry)
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"\x00not a torch file at all")
    with pytest.raises(AgentSpecError, match=r"corrupt\.pt: not a readable torch checkpoint"):
        build_agent(str(corrupt), registry=registry)
    foreign = save(tmp_path / "foreign.pt", state_dict={"w": torch.zeros(1)})
    with pytest.raises(AgentSpecError, match=r"foreign\.pt: not an arena checkpoint .*'agent'.*state_dict"):
        build_agent(foreign, registry=registry)
    with pytest.raises(AgentSpecError, match=r"is a directory|not a file"):
        build_agent(f"loadable:{tmp_path}", registry=registry)


def test_checkpoint_of_an_unknown_or_non_loading_agent(tmp_path, registry):
    other = save(tmp_path / "other.pt", format_version=1, agent="zebra")
    with pytest.raises(AgentSpecError, match=r"unknown agent 'zebra'.*named by checkpoint .*other\.pt"):
        build_agent(other, registry=registry)
    crank = save(tmp_path / "crank.pt", format_version=1, agent="crank")
    with pytest.raises(AgentSpecError, match="'crank' does not load checkpoints"):
        build_agent(crank, registry=registry)
    future = save(tmp_path / "future.pt", format_version=7, agent="loadable")
    with pytest.raises(AgentSpecError, match=r"future\.pt: agent 'loadable' could not load it: .*format_version 7"):
        build_agent(future, registry=registry)


def test_base_agent_defaults():
    agent = Loadable()
    assert agent.eval() is agent and not agent.training
    assert agent.train() is agent and agent.training
    assert agent.to("cpu") is agent and agent.device == torch.device("cpu")
    assert agent.env_config == EnvConfig()


# -- what a checkpoint was trained in ---------------------------------------------------------------


def test_trained_for_reads_the_saved_env(tmp_path):
    team = save(tmp_path / "team.pt", format_version=1, agent="loadable",
                env_config=EnvConfig(team_size=3, obs_mode="extended").to_dict())
    assert trained_for(team) == TrainedFor(team, 3, "extended")
    partial = save(tmp_path / "partial.pt", format_version=1, agent="loadable", env_config={"max_time": 60.0})
    assert trained_for(partial) == TrainedFor(partial, 1, "default")  # what it leaves out is the default


def test_trained_for_says_nothing_rather_than_something_wrong(tmp_path):
    """A file that records no usable env is left to the loader, which names what is wrong with it."""
    silent = save(tmp_path / "silent.pt", format_version=1, agent="loadable")
    malformed = save(tmp_path / "bad.pt", format_version=1, agent="loadable", env_config={"team_size": 99})
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"\x00not a torch file")
    for path in (silent, malformed, str(corrupt), str(tmp_path / "missing.pt")):
        assert trained_for(path) is None


def test_team_size_comes_from_team_checkpoints_only():
    duel = TrainedFor("duel.pt", 1, "default")
    pair, trio = TrainedFor("a.pt", 2, "default"), TrainedFor("b.pt", 3, "extended")
    assert team_size_for([duel, None]) is None  # a 1-v-1 checkpoint flies any seat: it asks for nothing
    assert team_size_for([duel, pair]) == 2 and team_size_for([pair, pair]) == 2
    with pytest.raises(TeamSizeConflict, match=r"a\.pt \(trained in 2 v 2\) and b\.pt \(3 v 3\) disagree"):
        team_size_for([pair, duel, trio])


def test_each_checkpoint_gets_its_own_observation():
    cfg = EnvConfig(max_time=60.0)
    extended = with_obs_mode(cfg, TrainedFor("x.pt", 1, "extended"))
    assert extended.obs_mode == "extended" and extended.max_time == 60.0
    assert with_obs_mode(cfg, None) is cfg and with_obs_mode(cfg, TrainedFor("d.pt", 1, "default")) is cfg
