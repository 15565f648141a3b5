"""Collection on a node: the collector plan, one module per collector, the runner, the node agent.

Everything in this package runs on the node being observed, often a lab machine where
sparktriage is not installed: `shipping.py` packs the package into a zip that the collecting
machine sends over SSH to the node's own `python3`. So every module here uses the standard
library only (pynvml is shipped beside it when available) and Python 3.8 syntax at run time.
"""
