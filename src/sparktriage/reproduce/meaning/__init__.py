"""What a command means: the commands of a script that start the server (`servers`),
the wrappers taken off them and the command strings they run (`servers`, `stdin`), and the
job launchers' container wrappers (`job_wrappers`). The shell reader (reproduce/bash) knows
nothing of vLLM; this stage does.
"""
