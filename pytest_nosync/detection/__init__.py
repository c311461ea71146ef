"""Detection: the guard and what it is made of, below the suite and above the vocabulary (docs/layout.md).

guard          Guard and nosync_guard: arms the detectors of its checks, steps and regions, judges, restores every
               global (the library's entry point, exported by the package)
guard_options  GuardOptions: everything a guard is told, from an option, a marker or a keyword
devices        where detection runs (the cuda backend or the emulated device), its memory counters and collector,
               and a run's environment
detectors/     one module per detector (pytest_nosync.checks.CHECKS names each check's module there)

Nothing is imported here: importing the options (the option table does, with the plugin off) imports no torch.
"""
