"""The one YAML reader (arena.yaml_file): duplicate keys at any depth, merge keys, the limits, value strings."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.yaml_file import MAX_DEPTH, MAX_FILE_BYTES, YamlFileError, YamlSyntaxError, load_yaml_value, read_yaml_file


def write(tmp_path: Path, text: str | bytes, name: str = "file.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("text, line, key, first", [
    ("n_epochs: 2\nlr: 0.1\nn_epochs: 3\n", 3, "n_epochs", 1),
    ("ppo:\n  n_epochs: 2\n  gamma: 0.9\n  n_epochs: 3\n", 4, "n_epochs", 2),
    ("a:\n  - b:\n      c: {d: 1, d: 1}\n", 3, "d", 3),  # same value twice is still a mistake
    ("a: 1\n'a': 2\n", 2, "a", 1),  # quoting does not make another key
    ("1: x\n0x1: y\n", 2, "0x1", 1),  # nor spelling the same number another way
])
def test_a_key_twice_is_refused_naming_the_file_the_line_and_the_key(tmp_path, text, line, key, first):
    path = write(tmp_path, text)
    with pytest.raises(YamlFileError) as info:
        read_yaml_file(path)
    assert str(info.value) == f"{path}: line {line}: key {key!r} appears twice (first on line {first})"


def test_merge_keys_and_repeated_anchors_are_not_duplicates(tmp_path):
    path = write(tmp_path, "base: &b {x: 1, y: 2}\nmine:\n  <<: *b\n  x: 3\nagain: *b\nlist: [a, a]\n")
    assert read_yaml_file(path) == {"base": {"x": 1, "y": 2}, "mine": {"x": 3, "y": 2}, "again": {"x": 1, "y": 2},
                                    "list": ["a", "a"]}
    path = write(tmp_path, "base: &b {x: 1}\nmine:\n  <<: *b\n  z: 3\n  z: 4\n")
    with pytest.raises(YamlFileError, match=r"line 5: key 'z' appears twice \(first on line 4\)"):
        read_yaml_file(path)


@pytest.mark.parametrize("raw, expected", [
    (b"x" * MAX_FILE_BYTES + b"x", "larger than 1024 KiB; expected a settings file"),
    (b"a: " + b"[" * 40 + b"]" * 40 + b"\n", f"nested more than {MAX_DEPTH} levels deep (line 1, column 35); "
                                             f"expected a settings file"),
    ("\n".join([f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 10) + "]" for i in range(1, 7)]).replace(
        "*x0", "lol").encode(), "expands to more than 100,000 values"),
    (b"a: &a [*a]\n", "an alias refers to a value that contains it (line 1)"),
    ("\n".join(f"k{i}: &a{i} " + "[" * 20 + (f"*a{i - 1}" if i else "1") + "]" * 20 for i in range(80)).encode(),
     f"nested more than {MAX_DEPTH} levels deep once its aliases (*name) are expanded; expected a settings file"),
    (("[" + ", ".join(["1"] * 100_001) + "]").encode(),
     "holds more than 100,000 values; expected a small settings file"),
    ("a: ü\n".encode("utf-16"), "is UTF-16 text; expected UTF-8"),
    (b"a: \xfc\n", "is not UTF-8 text (byte 0xfc at offset 3)"),
    (b"a: !!int " + b"9" * 5000 + b"\n", "a value cannot be read (an integer of more than 4300 digits)"),
], ids=["too-large", "too-deep", "alias-bomb", "alias-loop", "deep-aliases", "too-many-values", "utf-16", "not-utf-8",
        "long-integer"])  # the inputs themselves would make test ids of up to 300 KB
def test_the_limits_hold_for_every_file(tmp_path, raw, expected):
    path = write(tmp_path, raw)
    with pytest.raises(YamlFileError) as info:
        read_yaml_file(path, "settings file")
    assert str(info.value).startswith(f"{path}: ") and expected in str(info.value) and "\n" not in str(info.value)


def test_not_yaml_gives_the_line_and_column(tmp_path):
    with pytest.raises(YamlSyntaxError) as info:
        read_yaml_file(write(tmp_path, "a: 1\nb: [1, 2\n"))
    assert (info.value.line, info.value.column) == (3, 1) and "not valid YAML (line 3, column 1: " in str(info.value)


def test_an_unreadable_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_yaml_file(tmp_path / "missing.yaml")
    with pytest.raises(OSError, match="null byte"):
        read_yaml_file(str(tmp_path / "a\0b.yaml"))


def test_a_value_string_is_yaml_or_itself_and_a_key_twice_is_refused():
    assert load_yaml_value("[crank, self]") == ["crank", "self"]
    assert load_yaml_value("0.1") == 0.1 and load_yaml_value("") is None
    assert load_yaml_value("a: b: c") == "a: b: c"  # not YAML: the text itself
    with pytest.raises(YamlFileError, match="^key 'win' appears twice$"):
        load_yaml_value("{win: 1, win: 2}")
    with pytest.raises(YamlFileError, match="nested more than 32 levels deep"):
        load_yaml_value("[" * 5000 + "]" * 5000)
