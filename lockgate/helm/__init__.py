"""Helm charts as CI renders them (``push --render``): what a chart's templates call, the CRDs
of its ``crds/`` directories, and the cluster capabilities it is rendered for."""
