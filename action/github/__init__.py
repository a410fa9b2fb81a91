"""The GitHub Action's Python side: typed inputs in, one ``lockgate`` argv out, results rendered.

``action.yml`` passes every input to ``python -m action.github run`` as an environment
variable (``LOCKGATE_INPUT_<NAME>``), never through a shell, so a value with spaces or
quotes reaches the CLI as one argument. The pieces, pure first:

- ``inputs``: the input table (names, kinds, which command needs which) and its parser;
- ``plan``: inputs -> the ``lockgate`` argv, the extra environment, the values to mask;
- ``report``: the CLI's ``--output json`` -> step outputs and the Job Summary markdown,
  and its error lines -> ``::error file=...,line=...::`` annotations;
- ``commands``: GitHub's workflow-command syntax (escaping, ``GITHUB_OUTPUT`` heredocs);
- ``run``: the only I/O: runs the CLI and writes the files GitHub reads;
- ``install`` (standard library only, run before lockgate is installed): the venv cache.
"""
