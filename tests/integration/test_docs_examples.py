"""Every configuration example in README.md and docs/*.md is loaded by lockgate's own loaders, so
a documented field or value the product refuses (or reads otherwise) cannot stay documented.

Discovered generically, so a page added to docs/ is covered as soon as it exists:

- a YAML block holding a ``Runner`` or ``Sync`` (``lockgate.dev``) is loaded whole by the
  runner's configuration loader (``runner.pipeline.config.load``, what ``reconcile --config``
  and ``serve`` read);
- one holding Flux's ``ImageRepository``/``ImagePolicy``/``ImageUpdateAutomation`` or
  lockgate's ``ImageAutomation`` by the image automation's loader (``action.images.config``);
- a fragment (no ``kind``) whose keys are all fields of a Sync's ``spec`` (``notify:``,
  ``verify:``...), or ``spec:`` holding such fields, is loaded as the spec of a minimal Sync
  (a ``url``, an ``interval`` and ``verify.insecureSkip`` added when it has none); one whose
  keys are all Runner settings as a Runner's spec.

A block that would be loaded but must not be (a deliberately wrong example) carries
``<!-- not loaded: REASON -->`` on the line before it. Other YAML (CI files, Kubernetes
objects, RBAC rules) is not lockgate's configuration and is left alone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from action.images import config as images_config
from lockgate.signing import keys
from runner.pipeline import config
from tests.integration.test_docs_run import DOCUMENTS, ROOT, Block, blocks

LOCKGATE_KINDS = {"Runner", "Sync"}
IMAGE_KINDS = {"ImageRepository", "ImagePolicy", "ImageUpdateAutomation", "ImageAutomation"}
NOT_LOADED = re.compile(r"^<!-- not loaded: (?P<reason>.+?) -->$")
_SCHEMA = json.loads((ROOT / "docs" / "lockgate-config.schema.json").read_text())["$defs"]
SYNC_FIELDS = set(_SCHEMA["SyncSpec"]["properties"])
RUNNER_FIELDS = set(_SCHEMA["RunnerSettings"]["properties"])


@dataclass(frozen=True)
class Example:
    block: Block
    #: ``runner-config`` (whole documents), ``images``, ``sync-spec`` or ``runner-spec`` (fragments)
    loader: str
    documents: tuple[Any, ...]


def _marker(text: str, block: Block) -> str:
    """The ``not loaded`` comment among the comments right above the block (a block may also
    carry the docs test's ``<!-- file: NAME -->``), else the line before it."""
    lines = text.splitlines()
    at = block.line - 2
    while at >= 0 and lines[at].strip().startswith("<!--"):
        if NOT_LOADED.match(lines[at].strip()):
            return lines[at].strip()
        at -= 1
    return lines[block.line - 2].strip() if block.line >= 2 else ""


def examples() -> tuple[list[Example], list[str]]:
    """The configuration examples of every document, and the blocks marked not loaded."""
    found, skipped = [], []
    for path in DOCUMENTS:
        text = path.read_text()
        for block in blocks(text, str(path.relative_to(ROOT))):
            if block.language not in ("yaml", "yml"):
                continue
            try:
                documents = tuple(d for d in yaml.safe_load_all(block.body) if d is not None)
            except yaml.YAMLError:
                continue  # not YAML as a whole (a template); GitHub's is checked by actionlint
            loader = _loader(documents)
            if loader is None:
                continue
            marked = NOT_LOADED.match(_marker(text, block))
            if marked is not None:
                skipped.append(f"{block}: {marked['reason']}")
                continue
            found.append(Example(block, loader, documents))
    return found, skipped


def _loader(documents: tuple[Any, ...]) -> str | None:
    kinds = {d.get("kind") for d in documents if isinstance(d, dict)}
    if kinds & LOCKGATE_KINDS:
        return "runner-config"
    if kinds & IMAGE_KINDS:
        return "images"
    if kinds - {None} or len(documents) != 1 or not isinstance(documents[0], dict) or not documents[0]:
        return None
    fragment = documents[0]
    keys = set(fragment)
    if keys == {"spec"} and isinstance(fragment["spec"], dict):
        keys = set(fragment["spec"])
    if keys <= SYNC_FIELDS:
        return "sync-spec"
    if keys <= RUNNER_FIELDS:
        return "runner-spec"
    return None


#: a public key file a document names where the runner would mount it
KEY_PATH = re.compile(r"(?<=key: )([^\s{}]+\.pub)\b")
#: the registry placeholder the docs write (``oci://REG/...``), as the docs test replaces it
REGISTRY = re.compile(r"\bREG\b")


def _as_document(example: Example) -> str:
    if example.loader == "runner-config":
        if any(isinstance(d, dict) and d.get("kind") == "Sync" for d in example.documents):
            return example.block.body
        # a Runner alone: the loader wants a Sync; add one for each sync its receivers name
        named = {
            str(r.get("name"))
            for d in example.documents
            for receiver in ((d.get("spec") or {}).get("receivers") or [])
            for r in receiver.get("resources") or []
            if r.get("name") not in (None, "*")
        } or {"example"}
        syncs = [_minimal_sync(name, {}) for name in sorted(named)]
        return example.block.body + "".join("\n---\n" + yaml.safe_dump(s, sort_keys=False) for s in syncs)
    fragment = example.documents[0]
    spec = fragment.get("spec", fragment) if set(fragment) == {"spec"} else fragment
    if example.loader == "runner-spec":
        runner = {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Runner", "spec": spec}
        return yaml.safe_dump_all([runner, _minimal_sync("example", {})], sort_keys=False)
    return yaml.safe_dump(_minimal_sync("example", spec), sort_keys=False)


def _minimal_sync(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A Sync of ``spec``, with what every Sync needs added when ``spec`` has none."""
    base: dict[str, Any] = {"url": "oci://registry.example.com/app:1.0.0", "interval": "5m"}
    if "verify" not in spec:
        base["verify"] = {"insecureSkip": True}
    return {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": name},
        "spec": {**base, **spec},
    }


def _with_keys(text: str, directory: Path) -> str:
    """``text`` with each public key path it names made real (a fresh key in ``directory``)."""
    for number, named in enumerate(sorted(set(KEY_PATH.findall(text)))):
        pair = keys.generate_key_pair(b"docs")
        made = directory / f"key-{number}.pub"
        made.write_bytes(pair.public_pem)
        text = text.replace(named, str(made))
    return text


EXAMPLES, SKIPPED = examples()


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.block.document}:{e.block.line}" for e in EXAMPLES])
def test_the_documented_configuration_loads(example: Example, tmp_path: Path) -> None:
    if example.loader == "images":
        (tmp_path / "example.yaml").write_text(example.block.body)
        images = images_config.load(tmp_path)
        kinds = [d.get("kind") for d in example.documents if isinstance(d, dict)]
        # an ImageAutomation's images each become an ImageRepository and an ImagePolicy
        expanded = sum(
            len((d.get("spec") or {}).get("images") or [])
            for d in example.documents
            if isinstance(d, dict) and d.get("kind") == "ImageAutomation"
        )
        assert len(images.repositories) == kinds.count("ImageRepository") + expanded
        assert len(images.policies) == kinds.count("ImagePolicy") + expanded
        automations = kinds.count("ImageUpdateAutomation") + kinds.count("ImageAutomation")
        assert len(images.automations) == automations, (example.block, images)
        return
    path = tmp_path / "lockgate.yaml"
    path.write_text(_with_keys(REGISTRY.sub("registry.example", _as_document(example)), tmp_path))
    loaded = config.load(path)
    documented = [d for d in example.documents if isinstance(d, dict) and d.get("kind") == "Sync"]
    if documented:
        assert [s.name for s in loaded.syncs] == [d["metadata"]["name"] for d in documented]
    assert loaded.syncs, example.block


def test_every_kind_of_example_is_found() -> None:
    """The discovery can fail: each loader has examples in today's documents."""
    by_loader = {e.loader for e in EXAMPLES}
    assert by_loader >= {"runner-config", "images", "sync-spec"}, by_loader
    assert len(EXAMPLES) >= 25, [str(e.block) for e in EXAMPLES]
    for reason in SKIPPED:
        assert len(reason.split(": ", 1)[1].split()) >= 3, f"say why in a few words: {reason}"
