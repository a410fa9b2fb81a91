"""The layer a push needs, packed only when its bytes are needed.

``prepare`` collects the tree once. If the build cache (``lockgate.artifact.cache``) knows
the layer packed from exactly these files, its digest and size are enough to plan the
manifest and ask the registry whether anything changed; the tree is packed (and its YAML
validated) only when there is no cache entry or the registry lacks the layer blob. A
freshly packed digest always wins over a cached one. Stdin and rendered trees are
temporary copies and are never cached.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from action.artifacts import source as source_mod
from lockgate.artifact import cache, pack


@dataclass
class Tree:
    root: Path
    entries: list[pack.Entry]
    options: source_mod.BuildOptions
    dest: Path
    cache_dir: Path | None = None
    cache_key: str | None = None
    known: cache.Known | None = None
    packed: pack.Layer | None = field(default=None, init=False)

    @property
    def digest(self) -> str:
        return self.packed.digest if self.packed else self._known().digest

    @property
    def size(self) -> int:
        return self.packed.size if self.packed else self._known().size

    def _known(self) -> cache.Known:
        if self.known is None:
            return cache.Known(self.layer().digest, self.layer().size)
        return self.known

    def layer(self) -> pack.Layer:
        """Pack (and validate) the tree into ``dest``, once; remembers the result in the cache."""
        if self.packed is None:
            check = source_mod.content_check(self.root, self.options)
            self.packed = pack.pack(
                self.root,
                self.dest,
                self.options.pack_options,
                entries=self.entries,
                check=check,
                limits=self.options.limits,
            )
            if self.cache_key is not None:
                if self.known is not None and self.known.digest != self.packed.digest:
                    cache.forget(self.cache_dir, self.cache_key)
                cache.store(self.cache_dir, self.cache_key, self.packed, self.entries)
        return self.packed


@contextmanager
def prepare(path: str, options: source_mod.BuildOptions, dest: Path) -> Iterator[Tree]:
    """The collected tree for ``path``, with what the cache knows of it; ``dest`` is where it packs."""
    with source_mod.prepare(path, options) as root:
        entries = pack.collect(root, options.pack_options)
        if options.validate:
            source_mod.require_yaml(root, entries)
        tree = Tree(root, entries, options, dest)
        if path != "-" and not options.render:
            tree.cache_dir = cache.directory()
            if tree.cache_dir is not None:
                tree.cache_key = cache.key(root, entries, options.pack_options, validated=options.checks)
                tree.known = cache.load(tree.cache_dir, tree.cache_key)
        yield tree
