"""`python -m sparktriage` runs the command line."""

from sparktriage.cli.app import main

main()
