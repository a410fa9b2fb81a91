"""The runner's decisions, as pure functions over values: no I/O, no network, no clock reads.

Kind order and stages (``kinds``), per-object policy from annotations (``policy``),
kstatus health rules (``health``), what to prune (``prune_plan``), the ApplySet formula
(``applyset``) and the inventory document (``inventory``), objects ready to send
(``desired``), placement into namespaces (``placement``), the no-op fast path and the
classification of an apply (``classify``), kubectl field takeover (``takeover``), and the
Kubernetes shapes read from the API (``objects``). An import-linter contract forbids this
package any I/O library; everything above it carries these plans out.
"""
