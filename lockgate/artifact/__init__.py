"""The Flux artifact contract, shared by the CI commands and the runner.

``ignore`` and ``pack`` turn a tree into a reproducible tar+gzip layer, ``metadata``
works out created/source/revision, ``manifest`` builds Flux's manifest and picks a
reader's layer, ``extract`` unpacks a layer safely.
"""
