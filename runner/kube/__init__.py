"""The runner's seam to the Kubernetes API: credentials, TLS, transport, discovery, verbs."""
