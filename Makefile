# lockgate: two set-up commands for a fresh machine: `make demo` and `make test`.
# Everything else here is what they are made of.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: setup system-packages python-env binaries bench-binaries test lint unit demo world bench clean image lock

setup: system-packages python-env binaries

system-packages:
	@missing=""; \
	command -v docker-registry >/dev/null || missing="$$missing docker-registry"; \
	command -v htpasswd >/dev/null || missing="$$missing apache2-utils"; \
	command -v age >/dev/null || missing="$$missing age"; \
	command -v git >/dev/null || missing="$$missing git"; \
	command -v ssh-keygen >/dev/null || missing="$$missing openssh-client"; \
	command -v gpg >/dev/null || missing="$$missing gnupg"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v rsync >/dev/null || missing="$$missing rsync"; \
	command -v buildah >/dev/null || missing="$$missing buildah"; \
	command -v debootstrap >/dev/null || missing="$$missing debootstrap"; \
	test -f /usr/share/keyrings/debian-archive-keyring.gpg || missing="$$missing debian-archive-keyring"; \
	command -v pigz >/dev/null || missing="$$missing pigz"; \
	command -v jq >/dev/null || missing="$$missing jq"; \
	command -v gcc >/dev/null || missing="$$missing gcc libc6-dev"; \
	command -v tinyproxy >/dev/null || missing="$$missing tinyproxy"; \
	if [ -n "$$missing" ]; then \
	  echo "setup: installing Debian packages:$$missing"; \
	  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; }; then \
	    echo "setup: step 'apt-get install$$missing' failed: Debian's package archive is needed" >&2; exit 1; \
	  fi; \
	fi
	@command -v go >/dev/null || { echo "setup: step 'find Go' failed: the world's binaries are built with Go >= 1.26" >&2; exit 1; }

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "setup: Python >= 3.11 is required")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "setup: installing lockgate and its development tools into $(VENV)"
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]' || { echo "setup: step 'pip install' failed: PyPI is needed" >&2; exit 1; }
	@touch $(STAMP)

python-env: $(STAMP)

# Builds etcd, kube-apiserver & co, kwok, kubectl, kustomize, helm, oras, flux and Flux's
# source- and kustomize-controller, cosign, gitea (cgo: gcc)... from the Go module proxy at the
# pins in tests/world/pins.py, two at a time; cached in ~/.cache/lockgate.
binaries: python-env
	@$(PY) -m tests.world.binaries >/dev/null

# Components only the benchmarks use (pins.py bench_only; none today: Flux's controllers, the
# peers of `lockgate serve` in bench/bench_serve.py, are part of the world).
bench-binaries: binaries
	@$(PY) -m tests.world.binaries --bench >/dev/null

# requirements.lock: the runtime dependencies the GitHub Action installs (--require-hashes), pinned
# for every Python >= 3.11 and platform at once, with each wheel's sha256. Run after changing
# [project].dependencies (tests/unit/action/test_requirements_lock.py says when); existing pins are
# kept unless a range excludes them (`make lock LOCK_ARGS=--upgrade` takes the newest of all).
LOCK_ARGS ?=
lock: python-env
	$(VENV)/bin/uv pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes \
	  --only-binary :all: --custom-compile-command "make lock" -o requirements.lock $(LOCK_ARGS)

lint: python-env
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

test: setup lint
	$(VENV)/bin/pytest $(PYTEST_ARGS)

demo: setup
	$(PY) examples/demo.py

world: setup
	$(PY) -m tests.world

bench: setup bench-binaries
	$(PY) -m bench.run

# The container image (deploy/Containerfile) with buildah (vfs, chroot isolation) on a base
# debootstrapped once; cached in ~/.cache/lockgate, rebuilt only when an input changes.
# IMAGE_PUSH=host:port/repo:tag pushes it there (plain http unless IMAGE_TLS_VERIFY=1).
IMAGE_PUSH ?=
image: setup
	$(PY) -m tests.world.image $(if $(IMAGE_PUSH),--push $(IMAGE_PUSH)) $(if $(IMAGE_TLS_VERIFY),--tls-verify)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
