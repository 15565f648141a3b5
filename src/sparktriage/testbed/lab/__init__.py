"""A network-namespace lab: N "nodes" on this machine, each with its own address and sshd.

`plan.py` builds the set-up and teardown as data (argv lists, files to write); `files.py`
renders the configuration files; `execute.py` runs a plan and keeps the state that makes
`down` idempotent. See docs/testbed.md, "The network-namespace lab".
"""
