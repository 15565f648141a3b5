"""Configuration: pydantic models of labs, deployments and roofline specs (read through
`sparktriage.yamldoc`, so every problem has its file:line)."""
