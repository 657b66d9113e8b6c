"""Plugin discovery, error reporting and the hooks, driven through fake distributions on sys.path."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from arena import plugins
from arena.agents import DuplicateNameError, agent_registry, reward_registry, trainer_registry
from arena.plugins import ArenaSpec, PluginError, PluginHost, PluginInfo, hookimpl, load_entry_points
from cli_checks import refused

DOCS = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"

# A whole plugin module: one agent class named by the test.
AGENT_PLUGIN = '''
import arena

class FakeAgent(arena.BaseAgent):
    """A stand-in agent."""
    name = "{name}"

@arena.hookimpl
def arena_agents():
    return [FakeAgent]
'''


def loaded_host() -> PluginHost:
    host = PluginHost()
    load_entry_points(host)
    return host


def test_fake_distribution_is_discovered(fake_dists):
    fake_dists.add("fake-arena-agent", "fake_agent_mod", AGENT_PLUGIN.format(name="fakeagent"), version="2.5")
    entry = agent_registry(loaded_host()).entry("fakeagent")
    assert (entry.source.distribution, entry.source.version) == ("fake-arena-agent", "2.5")
    assert entry.obj.__module__ == "fake_agent_mod"


def test_builtin_plugins_are_entry_points():
    reg = agent_registry(loaded_host())
    assert reg.entry("crank").source.distribution == "arena-crank"
    assert reg.entry("rule_based").name == "crank"
    assert reg.entry("placeholder").source.distribution == "arena-placeholder"


def test_broken_plugin_is_reported_once_and_skipped(fake_dists, capsys):
    fake_dists.add("broken-plugin", "broken_mod", "import no_such_module_anywhere\n", version="0.3")
    fake_dists.add("fine-plugin", "fine_mod", AGENT_PLUGIN.format(name="fine"))
    host = loaded_host()
    agent_registry(host)
    agent_registry(host)
    [broken] = host.broken
    assert (broken.distribution, broken.version) == ("broken-plugin", "0.3")
    assert "no_such_module_anywhere" in broken.error
    err = capsys.readouterr().err
    assert err.count("broken-plugin 0.3") == 1 and "skipped" in err
    assert "fine" in agent_registry(host) and "crank" in agent_registry(host)


def test_strict_mode_makes_a_broken_plugin_fatal(fake_dists, monkeypatch):
    fake_dists.add("broken-plugin", "broken_mod2", "raise RuntimeError('boom at import')\n")
    monkeypatch.setenv("ARENA_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match=r"broken-plugin 1\.0.*boom at import"):
        loaded_host()


def test_misspelled_hook_is_an_error_with_a_suggestion(fake_dists):
    fake_dists.add("typo-plugin", "typo_mod", "import arena\n\n@arena.hookimpl\ndef arena_agent():\n    return []\n")
    host = loaded_host()
    [broken] = host.broken
    assert broken.distribution == "typo-plugin"
    assert "arena_agent" in broken.error and "did you mean arena_agents" in broken.error


def test_hook_without_marker_is_an_error(fake_dists):
    fake_dists.add("nomark-plugin", "nomark_mod", "def arena_agents():\n    return []\n")
    [broken] = loaded_host().broken
    assert "not marked with @arena.hookimpl" in broken.error


def test_hook_with_wrong_arguments_is_an_error(fake_dists):
    fake_dists.add("args-plugin", "args_mod", "import arena\n\n@arena.hookimpl\ndef arena_commands(group):\n    pass\n")
    [broken] = loaded_host().broken
    assert broken.distribution == "args-plugin" and "group" in broken.error


def test_hook_that_raises_marks_its_plugin_broken(fake_dists):
    fake_dists.add("raising-plugin", "raising_mod", "import arena\n\n@arena.hookimpl\ndef arena_agents():\n    1 / 0\n")
    host = loaded_host()
    reg = agent_registry(host)
    assert "crank" in reg
    [broken] = host.broken
    assert "ZeroDivisionError" in broken.error


def test_duplicate_agent_name_names_both_distributions(fake_dists):
    fake_dists.add("copycat-plugin", "copycat_mod", AGENT_PLUGIN.format(name="crank"), version="9.9")
    with pytest.raises(DuplicateNameError) as exc:
        agent_registry(loaded_host())
    assert "arena-crank" in str(exc.value) and "copycat-plugin 9.9" in str(exc.value)


def test_duplicate_alias_is_refused(fake_dists):
    fake_dists.add("alias-plugin", "alias_mod", AGENT_PLUGIN.format(name="rule_based"))
    with pytest.raises(DuplicateNameError, match="rule_based"):
        agent_registry(loaded_host())


def test_disable_list_is_honoured(fake_dists, monkeypatch):
    fake_dists.add("Skip_Me-Plugin", "skipme_mod", AGENT_PLUGIN.format(name="skipme"))
    monkeypatch.setenv("ARENA_DISABLE_PLUGINS", "skip-me-plugin, arena-placeholder")
    reg = agent_registry(loaded_host())
    assert "skipme" not in reg and "placeholder" not in reg and "crank" in reg


def test_arena_hookimpl_is_the_plugin_marker():
    import arena

    assert arena.hookimpl is plugins.hookimpl


# -- one test per hook ---------------------------------------------------------------------------


class Provider:
    """A plugin object implementing every hook, registered directly like a built-in would be."""

    def __init__(self) -> None:
        self.saved: list[tuple[str, int, dict]] = []
        self.reports: list[object] = []

    @hookimpl
    def arena_agents(self):
        from arena_placeholder.agent import PlaceholderAgent

        class Other(PlaceholderAgent):
            name = "other"
            aliases = ()

        return [Other]

    @hookimpl
    def arena_trainers(self):
        class Trainer:
            name = "fake-trainer"
            help = "trains nothing"

        return [Trainer]

    @hookimpl
    def arena_rewards(self):
        def nothing(obs, next_obs, rewards, dones, infos):
            """Adds nothing."""
            return 0.0

        return {"nothing": nothing}

    @hookimpl
    def arena_commands(self, cli):
        @cli.command("hello")
        def hello():
            click.echo("hello from a plugin")

    @hookimpl
    def arena_checkpoint_saved(self, path, step, metrics):
        self.saved.append((path, step, metrics))

    @hookimpl
    def arena_tournament_finished(self, report):
        self.reports.append(report)


@pytest.fixture
def provider_host(monkeypatch):
    host = loaded_host()
    provider = Provider()
    assert host.register(provider, PluginInfo("provider", "provider-dist", "0.1", "tests"))
    monkeypatch.setattr(plugins, "_host", host)
    return host, provider


def test_hook_arena_agents(provider_host):
    host, _ = provider_host
    assert agent_registry(host).entry("other").source.distribution == "provider-dist"


def test_hook_arena_trainers(provider_host):
    assert trainer_registry(provider_host[0]).entry("fake-trainer").source.distribution == "provider-dist"


def test_hook_arena_rewards(provider_host):
    assert reward_registry(provider_host[0]).get("nothing")(None, None, None, None, None) == 0.0


def test_hook_arena_commands(provider_host, monkeypatch):
    from arena.cli import main

    monkeypatch.setattr(main, "plugins_loaded", False)
    monkeypatch.setattr(main, "commands", dict(main.commands))
    result = CliRunner().invoke(main, ["hello"])
    assert result.exit_code == 0, result.output
    assert "hello from a plugin" in result.output


def test_hook_arena_checkpoint_saved(provider_host):
    host, provider = provider_host
    host.notify("arena_checkpoint_saved", path="runs/a/ckpt.pt", step=100, metrics={"win_rate": 0.5})
    assert provider.saved == [("runs/a/ckpt.pt", 100, {"win_rate": 0.5})]


def test_hook_arena_tournament_finished(provider_host):
    host, provider = provider_host
    host.notify("arena_tournament_finished", report="the report")
    assert provider.reports == ["the report"]


def test_failing_observer_is_reported_not_raised(provider_host):
    host, _ = provider_host

    class Flaky:
        @hookimpl
        def arena_checkpoint_saved(self, path, step, metrics):
            raise ConnectionError("upload failed")

    host.register(Flaky(), PluginInfo("flaky", "flaky-dist", "1", "tests"))
    host.notify("arena_checkpoint_saved", path="x.pt", step=1, metrics={})
    assert any(b.distribution == "flaky-dist" and "upload failed" in b.error for b in host.broken)


# -- the docs ------------------------------------------------------------------------------------


def hook_signature(name: str) -> str:
    """``def arena_x(a: T) -> R`` as written in the hookspec (annotations are strings here)."""
    sig = inspect.signature(getattr(ArenaSpec, name))
    params = [f"{p.name}: {p.annotation}" for p in sig.parameters.values() if p.name != "self"]
    return f"def {name}({', '.join(params)}) -> {sig.return_annotation}"


@pytest.mark.parametrize("name", plugins.hook_names())
def test_every_hook_is_documented_with_its_signature(name):
    text = DOCS.read_text()
    assert hook_signature(name) in text, f"docs/plugins.md lacks `{hook_signature(name)}`"


def test_every_hook_has_a_test_of_its_own():
    source = Path(__file__).read_text()
    missing = [n for n in plugins.hook_names() if not re.search(rf"def test_hook_{n}\b", source)]
    assert not missing


# -- hostile plugins -----------------------------------------------------------------------------


def test_sys_exit_at_import_is_a_broken_plugin_not_the_end(fake_dists):
    from arena.cli import main

    fake_dists.add("exit-plugin", "exit_mod", "import sys\nsys.exit(1)\n", version="0.1")
    fake_dists.add("fine-plugin", "fine_mod3", AGENT_PLUGIN.format(name="fine3"))
    host = loaded_host()
    [broken] = host.broken
    assert broken.distribution == "exit-plugin" and "sys.exit(1)" in broken.error
    assert "fine3" in agent_registry(host)
    plugins.reset_host()
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0 and "Usage" in result.output


def test_keyboard_interrupt_at_import_is_a_broken_plugin_under_the_cli(fake_dists):
    from arena import guard

    fake_dists.add("kbint-plugin", "kbint_mod", "raise KeyboardInterrupt\n")
    restore = guard.install_sigint_counter()
    try:
        [broken] = loaded_host().broken
    finally:
        restore()
    assert broken.distribution == "kbint-plugin" and "KeyboardInterrupt" in broken.error


def test_hook_calling_sys_exit_marks_its_plugin_broken(fake_dists):
    fake_dists.add("exit-hook", "exit_hook_mod",
                   "import sys, arena\n\n@arena.hookimpl\ndef arena_agents():\n    sys.exit(2)\n")
    host = loaded_host()
    assert "crank" in agent_registry(host)
    [broken] = host.broken
    assert broken.distribution == "exit-hook" and "SystemExit" in broken.error


BAD_ENTRIES = {
    "non-class": ("import arena\n\n@arena.hookimpl\ndef arena_agents():\n    return [42]\n", "42 (int) skipped"),
    "not-a-list": ("import arena\n\n@arena.hookimpl\ndef arena_agents():\n    return 42\n", "returned int"),
    "no-name": ("import arena\n\nclass X(arena.BaseAgent):\n    pass\n\n@arena.hookimpl\ndef arena_agents():\n"
                "    return [X]\n", "X skipped; it has no 'name'"),
    "bad-reward": ("import arena\n\n@arena.hookimpl\ndef arena_rewards():\n    return {'r': 3}\n", "entry 'r'"),
}


@pytest.mark.parametrize("case", list(BAD_ENTRIES))
def test_a_malformed_entry_is_skipped_and_reported_naming_the_distribution(fake_dists, capsys, case):
    source, words = BAD_ENTRIES[case]
    fake_dists.add("odd-plugin", f"odd_{case.replace('-', '_')}", source, version="0.7")
    host = loaded_host()
    reg = agent_registry(host)
    reward_registry(host)
    assert "crank" in reg and "placeholder" in reg
    assert any("odd-plugin 0.7" in p and words in p for p in host.problems), host.problems
    assert "odd-plugin 0.7" in capsys.readouterr().err


def test_play_works_beside_a_plugin_offering_a_non_class(fake_dists):
    from arena.cli import main

    fake_dists.add("odd-plugin", "odd_play", BAD_ENTRIES["non-class"][0])
    result = CliRunner().invoke(main, ["play", "crank", "placeholder", "-n", "2", "--env", "max_time=3", "-q"])
    assert result.exit_code == 0, result.output
    assert "odd-plugin" in result.stderr


def test_strict_mode_makes_a_malformed_entry_fatal_for_arena_agents(fake_dists, monkeypatch):
    from arena.cli import main

    fake_dists.add("odd-plugin", "odd_strict", BAD_ENTRIES["non-class"][0])
    assert CliRunner().invoke(main, ["agents"]).exit_code == 0
    plugins.reset_host()
    monkeypatch.setenv("ARENA_STRICT_PLUGINS", "1")
    for args in (["agents"], ["agents", "--json"]):
        plugins.reset_host()
        result = CliRunner().invoke(main, args)
        refused(result, "odd-plugin")


def test_a_trainer_without_a_command_is_one_line_naming_its_distribution(fake_dists):
    from arena.cli import main

    source = ("import arena\n\nclass T:\n    name = 'lazy'\n    help = 'no command'\n\n"
              "@arena.hookimpl\ndef arena_trainers():\n    return [T]\n")
    fake_dists.add("lazy-trainer", "lazy_trainer_mod", source, version="0.3")
    result = CliRunner().invoke(main, ["train", "lazy"])
    refused(result)
    assert "trainer 'lazy' from lazy-trainer 0.3" in result.output and "click.Command" in result.output
