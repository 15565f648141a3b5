"""Configuration: pydantic models of labs and deployments, and YAML loading with file:line errors."""
