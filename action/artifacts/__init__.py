"""The artifact commands of the CI side: build, push, pull, tag, inspect, list and diff.

Each command is one library call here (``push.push``, ``pull.pull``, ``diff.diff`` ...);
``cli`` only parses flags and prints the returned values.
"""
