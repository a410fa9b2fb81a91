"""The artifact commands of the CI side: build, push, pull, tag, inspect, list and diff.

Each command is one library call (``push.push_targets``, ``diff.diff``, ``inspect.inspect``,
the shared ``lockgate.artifact.pull.pull`` ...); ``cli`` only parses flags and prints the
returned values.
"""
