"""What a command means: the one table of programs that run another command (`wrappers`:
docker/podman run and exec, apptainer/singularity, shifter, kubectl exec and run, srun, ssh,
sudo and process wrappers), read by which commands of a script start the server and the command
strings they run (`servers`, `stdin`) and by the job launchers' container images (`job_wrappers`);
and the one table of commands around a server that are not reproduced (`harmless`). The shell
reader (reproduce/bash) knows nothing of vLLM; this stage does.
"""
