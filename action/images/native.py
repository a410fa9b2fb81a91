"""The compact lockgate-native configuration: one document instead of three Flux kinds.

    apiVersion: lockgate.dev/v1alpha1
    kind: ImageAutomation
    metadata:
      name: apps
      namespace: apps            # markers say {"$imagepolicy": "apps:<image name>"}
    spec:
      git:
        author: {name: lockgate, email: bot@example.com}
        messageTemplate: "..."   # optional, Flux's template language
        branch: main             # optional: checkout branch
        pushBranch: image-updates  # optional: push elsewhere
      update:
        path: ./deploy
      images:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo
          semver: ">=6.0.0"      # or  alphabetical: asc|desc  or  numerical: asc|desc
          filterTags: {pattern: "^main-(?P<ts>[0-9]+)", extract: "$ts"}   # optional
          exclude: ["^.*\\.sig$"]   # optional, Flux's default
          digest: Never          # Never | IfNotPresent | Always
          insecure: false
          provider: generic      # aws | azure | gcp: the cloud's workload identity (Flux's provider)
          credentials: ${RUNNER_TEMP}/regcred.json   # optional Docker config file, kept out of Git

Each image expands into an ImageRepository and an ImagePolicy named after it in the
document's namespace, and the document into one ImageUpdateAutomation whose policy
scope is exactly those images. Pure: no I/O.
"""

from __future__ import annotations

from action.images import policy
from action.images.fields import Fields, LabelSelector
from action.images.model import Automation, ImagePolicy, ImageRepository, NamespacedName, Object

#: label put on expanded policies so the automation selects only its own images
OWNER_LABEL = "lockgate.dev/image-automation"


def _choice(f: Fields) -> policy.Choice:
    """``semver: <range>`` or ``alphabetical: <order>`` or ``numerical: <order>``."""
    given = [
        name for name in ("semver", "alphabetical", "numerical") if f.raw(name) is not None and f.string(name)
    ]
    if len(given) != 1:
        f.fail(
            "semver", f"exactly one of semver, alphabetical, numerical is required (found {given or 'none'})"
        )
        return policy.AlphabeticalChoice()
    name = given[0]
    value = f.string(name)
    try:
        if name == "semver":
            choice: policy.Choice = policy.SemverChoice(value)
            policy.validate(choice)
            return choice
        order = policy.parse_order(value)
    except policy.InvalidPolicyError as exc:
        f.fail(name, exc.message)
        return policy.AlphabeticalChoice()
    return policy.AlphabeticalChoice(order) if name == "alphabetical" else policy.NumericalChoice(order)


def expand(f: Fields) -> list[Object]:
    namespace = f.string("metadata.namespace") or "default"
    key = NamespacedName(namespace, f.string("metadata.name", required=True))
    objects: list[Object] = []
    images = f.raw("spec.images")
    if not isinstance(images, list) or not images:
        f.fail("spec.images", "expected a non-empty list of images")
        images = []
    for index, entry in enumerate(images):
        if not isinstance(entry, dict):
            f.fail(f"spec.images[{index}]", "expected a mapping")
            continue
        item = Fields(entry, f.where, prefix=f"spec.images[{index}].")
        item.problems = f.problems
        name = item.string("name", required=True)
        image_key = NamespacedName(namespace, name)
        exclusions = tuple(item.str_list("exclude")) or policy.DEFAULT_EXCLUSION_LIST
        for i, pattern in enumerate(exclusions):
            item.check_regexp(f"exclude[{i}]", pattern)
        objects.append(
            ImageRepository(
                image_key,
                image=item.string("image", required=True),
                exclusion_list=exclusions,
                credentials_file=item.string("credentials") or None,
                insecure=item.boolean("insecure"),
                provider=item.enum("provider", ("generic", "aws", "azure", "gcp"), default="generic"),
                where=f.where,
            )
        )
        objects.append(
            ImagePolicy(
                image_key,
                repository=image_key,
                choice=_choice(item),
                tag_filter=item.tag_filter("filterTags"),
                digest_reflection=item.enum("digest", ("Never", "IfNotPresent", "Always"), default="Never"),
                labels={OWNER_LABEL: key.name},
                where=f.where,
            )
        )
    objects.append(
        Automation(
            key,
            author_name=f.string("spec.git.author.name"),
            author_email=f.string("spec.git.author.email", required=True),
            message_template=f.string("spec.git.messageTemplate"),
            checkout_branch=f.string("spec.git.branch") or None,
            push_branch=f.string("spec.git.pushBranch") or None,
            update_path=f.string("spec.update.path") or ".",
            policy_selector=LabelSelector({OWNER_LABEL: key.name}),
            where=f.where,
        )
    )
    return objects
