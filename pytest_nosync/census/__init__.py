"""The census of diffusers' pipeline tester classes as data: its test ids, each check's outcome, the coverage they add
up to, and what is rendered from a run's report (the Markdown table, the diff of two runs). Nothing of pytest: the
pytest side is plugin.census."""
