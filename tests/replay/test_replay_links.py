"""``arena replay`` never writes through a symbolic link (issue 67, item 5): a replay file that is a
link to a file elsewhere is replaced by the new replay, and that file is left as it was."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from arena.cli import main


def test_replay_files_that_are_links_are_replaced_not_written_through(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "replays", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    for name in ("battle-1.acmi", "battle-1.html", "battle-1.gif"):
        (elsewhere / name).write_bytes(b"precious\n")
        (out / name).symlink_to(elsewhere / name)
    result = CliRunner().invoke(main, ["replay", "crank", "crank", "--gif", "--out", str(out), "--env", "max_time=10",
                                       "-q"])
    assert result.exit_code == 0, result.output
    for name in ("battle-1.acmi", "battle-1.html", "battle-1.gif"):
        assert (elsewhere / name).read_bytes() == b"precious\n", name
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 9, name
    assert sorted(p.name for p in out.iterdir()) == ["battle-1.acmi", "battle-1.gif", "battle-1.html"]  # no temp
