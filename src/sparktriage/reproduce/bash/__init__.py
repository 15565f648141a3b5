"""Bash read as data: tree-sitter-bash parses (tree.py), words expand statically (words.py),
the walker lists every command a script could run (walk.py). Nothing is ever executed."""

from sparktriage.reproduce.bash.reading import read_script
from sparktriage.reproduce.bash.walk import Script, Simple
from sparktriage.reproduce.bash.words import Hole

__all__ = ["Hole", "Script", "Simple", "read_script"]
