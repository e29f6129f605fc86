"""The task model: the base classes a benchmark's tasks build on (base.py), the YAML task (task.py),
where rows come from (sources.py, lazy_samples.py) and templates (templates.py)."""
