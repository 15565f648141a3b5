"""Record a real server's HTTP exchanges once and serve them back (docs/testbed.md, "Recordings").

`exchanges.py` is the recording (its keys, its file, the comparison with a fresh one),
`proxy.py` the recording proxy put in front of a real server, `server.py` the loopback replay
server that answers only what was recorded and fails loudly on anything else.
"""
