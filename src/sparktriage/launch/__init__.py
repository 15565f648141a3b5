"""Launching deployments: launch plans (pure argv/env per node), transports (local, OpenSSH),
agent links, readiness, and the supervisor that tears everything down on every node."""
