"""Every YAML a user hands the arena — a league file, a ``--config`` file, a ``--set``/``--env`` value —
read one way: bounded, strict, and refused in one line.

A YAML file is small hand-written text. The limits below are far beyond any real one and exist so that
a hostile or mistyped file is refused in a second instead of hanging or crashing later (see
docs/hostile-input.md): the file is read as UTF-8 text (a BOM is fine), and its size, its nesting and
its size after alias expansion are bounded *before* anything walks it (a "billion laughs" loads in
microseconds as shared lists, and then hangs whoever copies or hashes it). A key given twice in one
mapping (``n_epochs: 2``, later ``n_epochs: 3``) is a mistake YAML itself forgives (the last one
wins, silently): here it is refused, naming the line of each.

This module sits low: it imports neither the tournament nor the training code, which both call it.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Any

import yaml

MAX_FILE_BYTES = 1 << 20  # a YAML file of more than 1 MiB is not a settings file
MAX_DEPTH = 32  # nesting of mappings and lists
MAX_NODES = 100_000  # values in the file once YAML aliases are expanded (a "billion laughs" has 10⁹)


class YamlFileError(ValueError):
    """YAML text that cannot be used. ``reason`` is one line without the file's name; ``str()`` is
    ``FILE: reason`` (the reason alone for text that is no file, such as a ``--set`` value)."""

    def __init__(self, reason: str, file: str | os.PathLike[str] | None = None) -> None:
        self.reason, self.file = reason, (str(file) if file is not None else None)
        super().__init__(f"{self.file}: {reason}" if self.file is not None else reason)


class YamlSyntaxError(YamlFileError):
    """Text that is not YAML (or is several documents); ``line`` and ``column`` count from 1 (None
    when the parser gave no position), ``problem`` is what the parser said."""

    def __init__(self, problem: str, line: int | None, column: int | None,
                 file: str | os.PathLike[str] | None = None) -> None:
        self.problem, self.line, self.column = problem, line, column
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(f"not valid YAML ({where}{problem})", file)


class DuplicateKeyError(ValueError):
    """A mapping that holds the same key twice; raised by :class:`UniqueKeyLoader` while it constructs."""

    def __init__(self, key: str, line: int, first_line: int) -> None:
        self.key, self.line, self.first_line = key, line, first_line
        super().__init__(f"line {line}: key {key!r} appears twice (first on line {first_line})")


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping with a key twice (:class:`DuplicateKeyError`).

    Merge keys (``<<: *defaults``) are not duplicates: a key given beside them overrides the merged
    one, as YAML intends. Every mapping is checked as written, before its merges are flattened into it.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._checked: set[int] = set()

    def flatten_mapping(self, node: yaml.MappingNode) -> None:  # called on each mapping before it is used
        self._check_unique(node)
        super().flatten_mapping(node)

    def _check_unique(self, node: yaml.MappingNode) -> None:
        if id(node) in self._checked:  # flattening rewrites a node's pairs: check each as written, once
            return
        self._checked.add(id(node))
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue  # a merge, or a complex key (left to PyYAML, which refuses unhashable ones)
            key = self.construct_object(key_node)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # unhashable: PyYAML says so when it builds the mapping
                continue
            if first is not key_node:
                raise DuplicateKeyError(str(key_node.value), key_node.start_mark.line + 1,
                                        first.start_mark.line + 1)



# YAML 1.1, which PyYAML follows, reads 1e-4 (no decimal point) as text; YAML 1.2 and every user read it as
# a number. One more resolver makes it one in every file and value arena reads; quoted, it stays text.
UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))

def read_yaml_file(file: str | os.PathLike[str], what: str = "YAML file") -> Any:
    """The YAML data of ``file``, read with the limits above and :class:`UniqueKeyLoader`.

    ``what`` names the kind of file in the messages (``expected a tournament YAML file``). Raises
    :class:`YamlFileError` (one line, naming the file) for what the file holds, and ``OSError`` as
    ``open()`` does when it cannot be read at all (missing, a folder, no permission; a NUL in the
    path too): the caller words that for its own option.
    """
    path = Path(file)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except ValueError as exc:  # "embedded null byte" in the path: as unreadable as a missing file
        raise OSError(errno.EINVAL, str(exc) or type(exc).__name__, str(path)) from None
    if len(raw) > MAX_FILE_BYTES:
        raise YamlFileError(f"larger than {MAX_FILE_BYTES // 1024} KiB; expected a {what}", path)
    return load_yaml(_decode(raw, path), what, path)


def load_yaml_value(text: str) -> Any:
    """One ``--set``/``--env`` value read as YAML (``0.1``, ``true``, ``[crank, self]``), or ``text``
    itself where it is not valid YAML; a value that is YAML but cannot be used (a key twice, nesting
    too deep, a 5000-digit integer) raises :class:`YamlFileError`, a ``ValueError``."""
    try:
        return load_yaml(text, "YAML value")
    except YamlSyntaxError:
        return text


def load_yaml(text: str, what: str = "YAML file", file: str | os.PathLike[str] | None = None) -> Any:
    """YAML ``text`` as data, within the limits; ``file`` only names it in the errors."""
    try:
        _check_depth(text, what, file)
        loader = UniqueKeyLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_expansion(node, what, file)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except YamlFileError:
        raise
    except DuplicateKeyError as exc:
        if file is None and exc.line == exc.first_line == 1:  # a one-line value: no lines to count
            raise YamlFileError(f"key {exc.key!r} appears twice") from None
        raise YamlFileError(str(exc), file) from None
    except yaml.YAMLError as exc:
        from arena.guard import head

        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or head(str(exc)) or type(exc).__name__
        raise YamlSyntaxError(problem, mark.line + 1 if mark is not None else None,
                              mark.column + 1 if mark is not None else None, file) from None
    except RecursionError:  # a safety net: MAX_DEPTH keeps the composer far from the limit
        raise YamlFileError(f"nested too deeply; expected at most {MAX_DEPTH} levels", file) from None
    except (ValueError, OverflowError) as exc:  # a scalar YAML resolves but Python cannot build (a 5000-digit int)
        from arena.guard import head

        problem = head(str(exc))
        if "integer string conversion" in problem:
            problem = "an integer of more than 4300 digits"
        raise YamlFileError(f"a value cannot be read ({problem})", file) from None


def _check_depth(text: str, what: str, file: str | os.PathLike[str] | None) -> None:
    """Refuse nesting deeper than MAX_DEPTH before the (recursive) composer sees it."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):  # the parser is iterative: no recursion yet
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                mark = event.start_mark
                where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
                raise YamlFileError(f"nested more than {MAX_DEPTH} levels deep{where}; expected a {what}", file)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def _check_expansion(root: yaml.Node, what: str, file: str | os.PathLike[str] | None) -> None:
    """Refuse a node graph whose tree, with every alias expanded, has more than MAX_NODES values or is
    nested more than MAX_DEPTH levels deep (aliases of aliases, each shallow, nest without bound), or
    that contains itself (``&a [*a]``). Iterative and memoised: linear in the file, whatever it expands to."""

    def children(node: yaml.Node) -> list[yaml.Node]:
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        if isinstance(node, yaml.MappingNode):
            return [part for pair in node.value for part in pair]
        return []

    size: dict[int, int] = {}
    depth: dict[int, int] = {}  # levels of mappings and lists, aliases expanded
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        nid = id(node)
        if finished:
            open_nodes.discard(nid)
            below = children(node)
            size[nid] = min(MAX_NODES + 1, 1 + sum(size[id(c)] for c in below))
            container = isinstance(node, (yaml.SequenceNode, yaml.MappingNode))
            depth[nid] = container + max((depth[id(c)] for c in below), default=0)
            if depth[nid] > MAX_DEPTH:
                raise YamlFileError(f"nested more than {MAX_DEPTH} levels deep once its aliases (*name) are "
                                    f"expanded; expected a {what}", file)
            continue
        if nid in size:
            continue
        if nid in open_nodes:
            mark = node.start_mark
            raise YamlFileError(f"an alias refers to a value that contains it (line {mark.line + 1}); "
                                f"expected no recursive aliases", file)
        open_nodes.add(nid)
        stack.append((node, True))
        stack.extend((c, False) for c in children(node))
    if len(size) > MAX_NODES:  # as written, before any alias
        raise YamlFileError(f"holds more than {MAX_NODES:,} values; expected a small {what}", file)
    if size[id(root)] > MAX_NODES:
        raise YamlFileError(f"expands to more than {MAX_NODES:,} values once its aliases (*name) are "
                            f"expanded; expected a small {what} (a 'billion laughs'?)", file)


def _decode(raw: bytes, file: Path) -> str:
    wide = _wide_encoding(raw)
    if wide:
        raise YamlFileError(f"is {wide} text; expected UTF-8 (save the file as UTF-8)", file)
    if b"\x00" in raw:
        raise YamlFileError(f"contains a NUL byte (offset {raw.index(0)}); expected a UTF-8 YAML text file, "
                            f"not a binary one", file)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise YamlFileError(f"is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); expected a "
                            f"UTF-8 YAML file", file) from None


def _wide_encoding(raw: bytes) -> str:
    """"UTF-16"/"UTF-32" when the bytes look like it (a BOM, or a NUL beside every ASCII character)."""
    if raw.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    head = raw[:256]
    if len(head) >= 8 and head.count(0) * 4 >= len(head) * 3:
        return "UTF-32"
    if len(head) >= 4 and (head[0::2].count(0) * 10 >= len(head[0::2]) * 9
                           or head[1::2].count(0) * 10 >= len(head[1::2]) * 9):
        return "UTF-16"
    return ""
