"""Read: each input once, bounded (`detect.read`), a Makefile or justfile as the shell
text of its recipes, its kind decided once by the importers' registry; every input read
and imported in the part it plays for the others (`readall`).
"""
