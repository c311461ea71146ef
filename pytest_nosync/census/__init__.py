"""The census of diffusers' pipeline tester classes, one wing (docs/layout.md names its modules).

Its data, without torch or the suite: the test ids, each check's outcome and the coverage they add up to, and the
outputs rendered from a run's report (`outputs/`: one module per `census` command). Changed-only selection
(`changed`, `executed_code`, `imported_code`, `changes`) and the hub stand-ins. Its driving, above the suite:
`testers` (diffusers' tester classes as targets) and `building` (a census item's pipeline built and checked). The
pytest side is plugin.census."""
