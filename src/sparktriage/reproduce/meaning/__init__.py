"""What a command means: which commands of a script start the server (`servers`), the wrappers
taken off them and the command strings they run (`servers`, `stdin`), the job launchers'
container wrappers (`job_wrappers`), and the commands around a server that are not reproduced
(`harmless`). The shell reader (reproduce/bash) knows nothing of vLLM; this stage does.
"""
